"""Conformance (PostgreSQL): a read of several statements never shows half of a write.

Reads run on autocommit connections, and a read that needs more than one round trip (a dump,
a history whose messages hold attachments) used to see each statement's own snapshot: a write
committed between two of them showed half. A dump taken while an append committed had a
``last_seq`` lower than its newest message's ``seq`` (so it could not be loaded back), and a
path read while an update dropped a message's attachment raised ``AttachmentNotFoundError``
for a message that had been whole. A dump now runs in one snapshot, and a read that finds an
attachment missing is read again in one snapshot. The write is made here, in another store,
between two statements of the read (a hook on the read's second step): the read must never
show half of it.
"""

from __future__ import annotations

from typing import Any

import pytest

from threadline._attachments import ATTACH_MIN_BYTES
from threadline.store._sql.dump_check import check_dump

pytestmark = pytest.mark.postgres

APP = "snap"
LONG = "many words " * ATTACH_MIN_BYTES


def _message(mid: str, text: str = "hello") -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


def _between(monkeypatch: pytest.MonkeyPatch, store: Any, method: str, write: Any) -> None:
    """Run ``write`` once, just before ``store.method`` (a later step of a read) runs."""
    original = getattr(store, method)
    done: list[bool] = []

    def hooked(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            write()
        return original(*args, **kwargs)

    monkeypatch.setattr(store, method, hooked)


def test_a_dump_taken_while_an_append_commits_loads_back(
    pg_stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = pg_stores
    writer.append_messages(APP, "s", [_message("m1"), _message("m2")])
    _between(
        monkeypatch, reader, "_session_rows",
        lambda: writer.append_messages(APP, "s", [_message("m3")]),
    )  # fmt: skip
    dump = reader.dump_session(APP, "s")
    assert dump is not None
    check_dump(dump)  # used to fail: last_seq 2, a message with seq 3
    assert [node.message["id"] for node in dump.messages] == ["m1", "m2"]
    assert (dump.head_id, dump.last_seq, dump.info.message_count) == ("m2", 2, 2)
    reader.load_session("copy", dump)
    assert [m["id"] for m in reader.get_path("copy", "s")] == ["m1", "m2"]


def test_a_path_read_while_an_update_drops_an_attachment_is_whole(
    pg_stores: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, writer = pg_stores
    writer.append_messages(APP, "s", [_message("m1", LONG)])
    _between(
        monkeypatch, reader, "_with_attachments",
        lambda: writer.update_message(APP, "s", _message("m1", "short now")),
    )  # fmt: skip
    path = reader.get_path(APP, "s")  # used to raise AttachmentNotFoundError
    # Read again in one snapshot, after the update: the message as it now is, whole.
    assert path[0]["parts"][0]["text"] == "short now"
    assert reader.get_path(APP, "s")[0]["parts"][0]["text"] == "short now"
