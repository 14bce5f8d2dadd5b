"""SQLite: reads run on their own connections beside the writer (WAL), never behind it.

A read in progress (a long search, a big history) must not hold up an append on the same
store object, and a write in progress must not hold up reads.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from threadline import StoreError
from threadline.messages import normalize_message
from threadline.store.sqlite import SQLiteStore


def _msg(text: str) -> dict[str, Any]:
    return normalize_message({"role": "user", "content": text})


def test_an_append_does_not_wait_for_a_read_in_progress(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        store.append_messages("app", "s", [_msg("first")])
        reading, appended = threading.Event(), threading.Event()
        outcome: list[tuple[int, bool]] = []

        def slow_read(tx: Any) -> tuple[int, bool]:
            count = tx.one("SELECT COUNT(*) FROM tl_messages")[0]
            reading.set()
            return count, appended.wait(timeout=10)

        reader = threading.Thread(target=lambda: outcome.append(store._read("test", slow_read)))
        reader.start()
        assert reading.wait(timeout=10)
        store.append_messages("app", "s", [_msg("second")])  # waited 10 s behind the read before
        appended.set()
        reader.join()
        assert outcome == [(1, True)]  # the read kept its snapshot; the append did not wait
        assert len(store.get_path("app", "s")) == 2


def test_reads_do_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "t.db") as store:
        store.append_messages("app", "s", [_msg("zebra one")])
        writing, read_done = threading.Event(), threading.Event()
        waited: list[bool] = []

        def slow_write(tx: Any) -> None:
            writing.set()
            waited.append(read_done.wait(timeout=10))

        writer = threading.Thread(target=lambda: store._write("test", slow_write))
        writer.start()
        assert writing.wait(timeout=10)
        assert [h.content for h in store.search_messages("app", "zebra")] == ["zebra one"]
        assert len(store.get_path("app", "s")) == 1
        read_done.set()
        writer.join()
        assert waited == [True]  # the reads finished while the write was still open


def test_closing_closes_the_readers(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "t.db")
    store.append_messages("app", "s", [_msg("hello")])
    assert store.get_path("app", "s")
    store.close()
    with pytest.raises(StoreError):
        store.get_path("app", "s")
