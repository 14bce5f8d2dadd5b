"""Concurrent deletes: appenders, a deleter, a purger and re-creation racing on one store.

Every write takes its locks in one order (the session's registry row first, then what hangs
off it; several sessions in id order), so a delete racing appends to the same session either
happens wholly before or wholly after each append. Afterwards, for every session, the registry
counters match the message rows, no row outlives its session, every session still takes
appends, and the PostgreSQL server logged no deadlock.
"""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.messages import normalize_message

from .conftest import raw_query

APP = "r"
VICTIM = "victim"
BYSTANDER = "bystander"
APPENDERS = 3
APPENDS_PER_THREAD = 150
DELETES = 60
PURGES = 5


def _message(text: str) -> dict[str, Any]:
    return normalize_message({"role": "user", "content": text})




def _pg_log() -> Path | None:
    data = os.environ.get("THREADLINE_TEST_PG_DATA")
    log = Path(data).parent / "server.log" if data else None
    return log if log is not None and log.is_file() else None


def _deadlocks_logged() -> int:
    log = _pg_log()
    if log is None:
        return 0
    return log.read_text(errors="replace").count("deadlock detected")


def _assert_consistent(url: str) -> None:
    registry = {
        row[0]: (int(row[1]), int(row[2]))
        for row in raw_query(
            url, f"SELECT id, message_count, last_seq FROM tl_sessions WHERE app = '{APP}'"
        )
    }
    rows = {
        row[0]: (int(row[1]), int(row[2]))
        for row in raw_query(
            url,
            "SELECT session_id, COUNT(*), MAX(seq) FROM tl_messages "
            f"WHERE app = '{APP}' GROUP BY session_id",
        )
    }
    orphans = set(rows) - set(registry)
    assert not orphans, f"message rows outlived their session: {orphans}"
    for session_id, (count, last_seq) in registry.items():
        stored, max_seq = rows.get(session_id, (0, 0))
        assert count == stored, f"{session_id}: registry says {count} messages, {stored} rows"
        assert last_seq >= max_seq, f"{session_id}: last_seq {last_seq} < stored seq {max_seq}"
    for table, column in (("tl_compactions", "session_id"), ("tl_prompts", "session_id")):
        leftover = {
            row[0] for row in raw_query(url, f"SELECT {column} FROM {table} WHERE app = '{APP}'")
        }
        assert leftover <= set(registry), f"{table} rows outlived their session"


def test_deletes_and_purges_racing_appends_leave_no_drift(file_store_url: str) -> None:
    deadlocks_before = _deadlocks_logged()
    errors: list[BaseException] = []
    start = threading.Barrier(APPENDERS + 2)

    def guarded(fn: Any) -> Any:
        def run(*args: Any) -> None:
            try:
                start.wait(timeout=60)
                fn(*args)
            except BaseException as exc:  # collected, re-raised below with the others
                errors.append(exc)

        return run

    with threadline.connect(file_store_url) as store:

        @guarded
        def append(k: int) -> None:
            for i in range(APPENDS_PER_THREAD):
                session = VICTIM if i % 4 else BYSTANDER
                store.append_messages(APP, session, [_message(f"t{k} m{i}")])
                if i % 10 == 0:
                    store.set_prompt(APP, session, f"prompt {k} {i}")

        @guarded
        def delete() -> None:
            for _ in range(DELETES):
                store.delete_session(APP, VICTIM)

        @guarded
        def purge() -> None:
            for _ in range(PURGES):
                future = datetime.now(UTC) + timedelta(seconds=1)
                store.purge_sessions(APP, before=future)

        threads = [threading.Thread(target=append, args=(k,)) for k in range(APPENDERS)]
        threads += [threading.Thread(target=delete), threading.Thread(target=purge)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=240)
        assert not any(thread.is_alive() for thread in threads), "a writer hung"
        assert not errors, f"writers failed: {errors!r}"

        _assert_consistent(file_store_url)
        # Every session still takes appends, and a deleted one comes back empty and working.
        for session in (VICTIM, BYSTANDER):
            before = store.get_path_length(APP, session)
            store.append_messages(APP, session, [_message("after the race")])
            assert store.get_path_length(APP, session) == before + 1
        assert store.delete_session(APP, VICTIM) is True
        assert store.get_path(APP, VICTIM) == []
        stored = store.append_messages(APP, VICTIM, [_message("re-created")])
        assert [m["id"] for m in store.get_path(APP, VICTIM)] == [stored[0]["id"]]
        info = store.get_session(APP, VICTIM)
        assert info is not None and info.message_count == 1
        _assert_consistent(file_store_url)

    assert _deadlocks_logged() == deadlocks_before, "the server logged deadlocks"


@pytest.mark.parametrize("rounds", [20])
def test_delete_then_recreate_under_the_same_id(file_store_url: str, rounds: int) -> None:
    with threadline.connect(file_store_url) as store:
        for round_ in range(rounds):
            store.append_messages(APP, VICTIM, [_message(f"a{round_}"), _message(f"b{round_}")])
            store.add_usage(APP, VICTIM, 1, 1, 0.5)
            assert store.delete_session(APP, VICTIM) is True
            assert store.get_session(APP, VICTIM) is None
            assert store.get_path(APP, VICTIM) == []
            assert store.search_messages(APP, f"a{round_}", session_id=VICTIM) == []
        _assert_consistent(file_store_url)
