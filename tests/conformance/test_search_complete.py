"""A search sees every committed message, or raises; it never needs to write.

SQLite indexes messages in batches (one FTS5 segment per batch, not per commit). A search
also scans the messages not indexed yet, inside its own read transaction, so it needs no
write: it works on a read-only open and while another connection holds the write lock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import threadline
from threadline import StoreError
from threadline.messages import normalize_message
from threadline.store.sqlite import SQLiteStore


def _fill(url: str, count: int = 10) -> None:
    with threadline.connect(url) as store:
        messages = [
            normalize_message({"role": "user", "content": f"zebra{i} grazing"})
            for i in range(count)
        ]
        store.append_messages("app", "s", messages)


def test_every_committed_message_is_found_whatever_the_batch(store_url: str) -> None:
    with threadline.connect(store_url) as store:
        for i in range(150):  # two full index batches and a partial one
            store.append_messages(
                "app", "s", [normalize_message({"role": "user", "content": f"yak{i} word"})]
            )
            if i % 37 == 0:  # searches in between must not lose track of what follows
                assert len(store.search_messages("app", f"yak{i}", session_id="s")) == 1
        for i in range(150):
            hits = store.search_messages("app", f"yak{i}", session_id="s")
            assert [h.content for h in hits] == [f"yak{i} word"], i
        assert len(store.search_messages("app", "word", limit=1000)) == 150


def test_a_read_only_open_searches_messages_never_indexed(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _fill(f"sqlite:///{path}")
    for store in (
        SQLiteStore(path, read_only=True),
        SQLiteStore(f"file:{path}?mode=ro"),
        threadline.connect(f"sqlite:///{path}?mode=ro"),
    ):
        with store:
            assert len(store.get_path("app", "s")) == 10
            assert [h.content for h in store.search_messages("app", "zebra3")] == ["zebra3 grazing"]
            with pytest.raises(StoreError):
                store.append_messages(
                    "app", "s", [normalize_message({"role": "user", "content": "x"})]
                )


def _files(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.iterdir())}


def test_a_read_only_open_leaves_a_rollback_journal_file_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _fill(f"sqlite:///{path}")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    conn.close()
    before = _files(tmp_path)
    assert list(before) == ["t.db"]
    for store in (
        SQLiteStore(path, read_only=True),
        SQLiteStore(f"file:{path}?mode=ro"),
        threadline.connect(f"sqlite:///{path}?mode=ro"),
    ):
        with store:
            assert len(store.get_path("app", "s")) == 10
            assert [h.content for h in store.search_messages("app", "zebra3")] == ["zebra3 grazing"]
            assert store.count_sessions("app") == 1
    assert _files(tmp_path) == before  # no -wal/-shm/-journal file, not a byte changed
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


def test_read_only_applies_to_a_file_uri_too(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _fill(f"sqlite:///{path}")
    with SQLiteStore(f"file:{path}", read_only=True) as store:
        assert len(store.get_path("app", "s")) == 10
        with pytest.raises(StoreError):
            store.append_messages("app", "s", [normalize_message({"role": "user", "content": "x"})])
    with pytest.raises(ValueError, match="mode=rw"):
        SQLiteStore(f"file:{path}?mode=rw", read_only=True)


def test_search_works_while_another_connection_holds_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    _fill(f"sqlite:///{path}")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with SQLiteStore(path, busy_timeout=0.05) as store:
            assert [h.content for h in store.search_messages("app", "zebra7")] == ["zebra7 grazing"]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_pending_messages_that_change_are_searched_as_they_are_now(store_url: str) -> None:
    with threadline.connect(store_url) as store:
        [stored] = store.append_messages(
            "app", "s", [normalize_message({"role": "user", "content": "before okapi"})]
        )
        assert len(store.search_messages("app", "okapi")) == 1
        store.update_message(
            "app", "s", {**stored, "parts": [{"type": "text", "text": "after ibex"}]}
        )
        assert store.search_messages("app", "okapi") == []
        assert [h.content for h in store.search_messages("app", "ibex")] == ["after ibex"]
        store.delete_messages("app", "s", [stored["id"]])
        assert store.search_messages("app", "ibex") == []


def test_an_in_memory_store_cannot_be_read_only() -> None:
    with pytest.raises(ValueError):
        SQLiteStore(":memory:", read_only=True)
