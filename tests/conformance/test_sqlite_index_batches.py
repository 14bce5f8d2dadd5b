"""SQLite indexes messages in batches of 64 (``store/sqlite/_index.py``): what a failed write
does to the batching, observed through ``tl_meta.indexed_upto`` in the database file."""

from __future__ import annotations

from pathlib import Path

import pytest

import threadline
from threadline.errors import HeadMovedError
from threadline.export import export_sessions, import_sessions
from threadline.messages import user


def _indexed_upto(store: threadline.SQLiteStore) -> int:
    row = store._read(  # type: ignore[attr-defined]
        "mark", lambda tx: tx.one("SELECT value FROM tl_meta WHERE key = 'indexed_upto'")
    )
    return int(row[0])


def test_a_failed_write_does_not_make_the_next_append_index_a_small_batch(
    tmp_path: Path,
) -> None:
    """Regression: a write that raised (here a stale ``if_head``) reset the batch hint, so the
    next append indexed the few pending messages as a batch of its own: with frequent
    conflicts, one FTS5 segment per commit, which batching exists to avoid."""
    with threadline.connect(tmp_path / "b.db") as store:
        assert isinstance(store, threadline.SQLiteStore)
        for n in range(70):  # one batch of 64 indexed, 6 pending
            store.append_messages("a", "s", [user(f"note {n}", id=f"m{n}")])
        assert _indexed_upto(store) == 64
        with pytest.raises(HeadMovedError):
            store.append_messages("a", "s", [user("late", id="x")], if_head="m3")
        store.append_messages("a", "s", [user("next", id="m70")])
        assert _indexed_upto(store) == 64  # still pending: the batch is not full
        assert [h.id for h in store.search_messages("a", "next")] == ["m70"]
        for n in range(71, 129):
            store.append_messages("a", "s", [user(f"note {n}", id=f"m{n}")])
        assert _indexed_upto(store) == 128


def test_one_transaction_of_many_messages_indexes_them_all_at_its_end(tmp_path: Path) -> None:
    """A write of many messages (an import, a long batch) indexes them, a page at a time,
    before it commits: every one is then found, none is left pending."""
    with threadline.connect(tmp_path / "big.db") as store:
        assert isinstance(store, threadline.SQLiteStore)
        messages = [user(f"entry {n} kumquat{n}", id=f"e{n}") for n in range(1000)]
        store.append_messages("a", "s", messages)
        assert _indexed_upto(store) == 1000
        for n in (0, 255, 256, 999):
            assert [h.id for h in store.search_messages("a", f"kumquat{n}")] == [f"e{n}"]


def _pending(store: threadline.SQLiteStore) -> int:
    row = store._read(  # type: ignore[attr-defined]
        "pending",
        lambda tx: tx.one(
            "SELECT count(*) FROM tl_messages WHERE rowid > "
            "(SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'indexed_upto')"
        ),
    )
    return int(row[0])


def test_rowids_reused_after_a_delete_are_indexed_in_batches(tmp_path: Path) -> None:
    """Regression: deleting the newest messages lowers the mark (the delete trigger) and their
    rowids are reused, but the writer kept its old batch hint, so nothing was indexed until
    rowids passed the old mark: a re-import (``replace=True``) of the newest session left all
    of its messages pending, and every search after a write read them all into memory."""
    with threadline.connect(tmp_path / "reuse.db") as store:
        assert isinstance(store, threadline.SQLiteStore)
        store.append_messages(
            "a", "s", [user(f"note {n} kumquat{n}", id=f"m{n}") for n in range(500)]
        )
        assert _pending(store) == 0
        import_sessions(store, list(export_sessions(store, "a")), replace=True)
        assert _pending(store) == 0  # was 500
        store.delete_session("a", "s")
        for n in range(200):  # one at a time, reusing the deleted rowids
            store.append_messages("a", "t", [user(f"again {n} lime{n}", id=f"t{n}")])
            assert _pending(store) < 64  # was n + 1
        assert [h.id for h in store.search_messages("a", "lime77")] == ["t77"]
        assert store.search_messages("a", "kumquat7") == []
