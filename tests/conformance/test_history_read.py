"""``get_history_encoded``: the path and the overlays in one read, the same as the two reads.

On PostgreSQL the path query, the attachment probe and the overlays go in one round trip.
"""

from __future__ import annotations

import pytest

from threadline._attachments import ATTACH_MIN_BYTES
from threadline.errors import MessageNotFoundError
from threadline.messages import normalize_message
from threadline.store import Store

APP = "default"


def _message(message_id: str, text: str) -> dict[str, object]:
    return normalize_message({"id": message_id, "role": "user", "content": text})


@pytest.mark.parametrize("attachments", ["inline", "ref"])
def test_history_read_equals_path_and_overlays(store: Store, attachments: str) -> None:
    long_text = "ü" * ATTACH_MIN_BYTES  # stored out of row
    store.append_messages(APP, "s", [_message("m1", "hi"), _message("m2", long_text)])
    store.append_messages(APP, "s", [_message("m3", "bye")])
    store.add_compaction(APP, "s", "Said hi.", "m1", "m1")
    for leaf in (None, "m2"):
        rows, overlays = store.get_history_encoded(APP, "s", leaf, attachments=attachments)
        assert rows == store.get_path_encoded(APP, "s", leaf, attachments=attachments)
        assert overlays == store.get_compactions(APP, "s")
    rows, _ = store.get_history_encoded(APP, "s", attachments=attachments)
    assert (long_text in rows[1][1]) == (attachments == "inline")


def test_history_read_of_nothing_and_of_an_unknown_leaf(store: Store) -> None:
    assert store.get_history_encoded(APP, "empty") == ([], [])
    store.append_messages(APP, "s", [_message("m1", "hi")])
    with pytest.raises(MessageNotFoundError):
        store.get_history_encoded(APP, "s", "nope")
