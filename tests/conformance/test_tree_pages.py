"""Conformance: ``Store.get_tree`` reads every branch of a session page by page."""

from __future__ import annotations

from typing import Any

import pytest

from threadline.errors import InvalidArgumentError
from threadline.store import Store


def msg(mid: str) -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": f"text {mid}"}]}


def test_every_branch_in_seq_order_with_parents_and_pages(store: Store) -> None:
    store.append_messages("a", "s", [msg("r"), msg("x1"), msg("x2")])
    store.append_messages("a", "s", [msg("y1")], "r")
    store.append_messages("a", "s", [msg("r2")], None)  # a second root
    nodes = store.get_tree("a", "s")
    assert [(n.seq, n.message["id"], n.parent_id) for n in nodes] == [
        (1, "r", None), (2, "x1", "r"), (3, "x2", "x1"), (4, "y1", "r"), (5, "r2", None),
    ]  # fmt: skip
    assert nodes[1].message == store.get_message("a", "s", "x1")
    first = store.get_tree("a", "s", limit=2)
    rest = store.get_tree("a", "s", after_seq=first[-1].seq, limit=10)
    assert [n.message["id"] for n in first + rest] == ["r", "x1", "x2", "y1", "r2"]
    assert store.get_tree("other", "s") == [] and store.get_tree("a", "nope") == []


def test_bad_pages_are_typed_errors(store: Store) -> None:
    with pytest.raises(InvalidArgumentError):
        store.get_tree("a", "s", limit=0)
    with pytest.raises(InvalidArgumentError):
        store.get_tree("a", "s", after_seq=-1)
    with pytest.raises(InvalidArgumentError):
        store.get_tree("a", "s", attachments="bogus")
