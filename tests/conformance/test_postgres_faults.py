"""PostgreSQL failure handling: server restarts, driver errors, a missing driver.

* A writer process keeps appending while the server restarts: every append it saw succeed is
  stored, every failure it saw is a ``StoreError``, and the same store object keeps writing
  afterwards (the pool drops dead connections and reconnects).
* A read caught by the restart is retried once and succeeds; a write is not retried: it raises
  ``StoreError`` naming the operation, and the next write on the same store succeeds.
* Any driver failure surfaces as ``StoreError`` whose ``operation`` names the store method.
* Without pg_trgm (and no right to create it) substring search still works, by LIKE scans,
  and the store warns once.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

import threadline
from threadline.errors import InvalidArgumentError, StoreError, ThreadlineError
from threadline.messages import normalize_message
from threadline.store import Store

APP = "default"
SESSION = "faults"
pg = pytest.mark.postgres


def _message(message_id: str) -> dict[str, Any]:
    text = f"{message_id}: mail ops@example.com about 東京タワー since v3.11.7"
    return normalize_message({"id": message_id, "role": "user", "content": text})


def _wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# --------------------------------------------------------------------------- writer + restart


def _writer(url: str, acks: str, errors: str, stop: Any) -> None:
    """Child process: append to one session until ``stop``; log acks and failure types."""
    with threadline.connect(url) as store, open(acks, "a") as ack, open(errors, "a") as err:
        i = 0
        while not stop.is_set():
            message_id = f"w{i}"
            i += 1
            try:
                store.append_messages(APP, SESSION, [_message(message_id)])
            except Exception as exc:
                operation = getattr(exc, "operation", "")
                err.write(f"{type(exc).__name__} {operation}\n")
                err.flush()
                time.sleep(0.05)
                continue
            ack.write(message_id + "\n")
            ack.flush()


@pytest.fixture
def writer(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[Path, Path, Any]]:
    """A running writer process; yields (ack file, error file, stop event)."""
    ctx = multiprocessing.get_context("spawn")
    acks, errors, stop = tmp_path / "acks.txt", tmp_path / "errors.txt", ctx.Event()
    proc = ctx.Process(target=_writer, args=(pg_dsn, str(acks), str(errors), stop))
    proc.start()
    try:
        yield acks, errors, stop
    finally:
        stop.set()
        proc.join(timeout=60)
        if proc.is_alive():
            proc.kill()
            proc.join()
        assert proc.exitcode == 0


@pg
@pytest.mark.slow
def test_acknowledged_appends_survive_a_server_restart(
    pg_dsn: str, pg_ctl: Any, writer: tuple[Path, Path, Any]
) -> None:
    acks, errors, stop = writer
    with threadline.connect(pg_dsn) as store:  # opened before the restart, used after it
        store.append_messages(APP, "parent", [_message("before")])
        _wait_for(lambda: len(_lines(acks)) >= 30, 60, "30 appends before the restart")
        pg_ctl.restart(mode="immediate")  # a crash: every connection dies mid-flight
        after_restart = len(_lines(acks))
        _wait_for(lambda: len(_lines(acks)) >= after_restart + 30, 90, "appends after restart")
        stop.set()
        time.sleep(0.5)  # let the writer finish its last append

        # The same store object writes again without being recreated.
        store.append_messages(APP, "parent", [_message("after")])
        assert store.get_path_ids(APP, "parent") == ["before", "after"]

        acked = _lines(acks)
        stored = set(store.get_path_ids(APP, SESSION))
        assert set(acked) <= stored  # every acknowledged append is there
        info = store.get_session(APP, SESSION)
        assert info is not None and info.message_count == len(stored)  # one path, no fork
    failures = _lines(errors)
    assert {line.split()[0] for line in failures} <= {"StoreError"}, failures
    assert {line.split()[1] for line in failures} <= {"append_messages"}, failures


# --------------------------------------------------------------------------- blocked calls
# A store call is held mid-query by an exclusive lock on tl_sessions, so that its connection
# can be cut while the query runs. When the whole server restarts, the lock holder dies too
# and the blocked query may (rarely) finish before its own backend is terminated; those
# scenarios are therefore repeated until a cut is observed.

ATTEMPTS = 6


def _lock_sessions_table(pg_dsn: str) -> Any:
    """An open transaction holding an exclusive lock on tl_sessions (blocks every store call)."""
    import psycopg

    conn = psycopg.connect(pg_dsn)  # not autocommit: the lock lives until rollback or restart
    conn.execute("LOCK TABLE tl_sessions IN ACCESS EXCLUSIVE MODE")
    return conn


def _waiters(pg_dsn: str) -> list[int]:
    """Pids of client backends (not autovacuum) waiting for this test's tl_sessions lock."""
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE NOT l.granted AND l.relation = 'tl_sessions'::regclass "
            "AND a.backend_type = 'client backend'"
        ).fetchall()
    return [row[0] for row in rows]


def _terminate(pg_dsn: str, pid: int) -> None:
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _restart_while_blocked(pg_dsn: str, pg_ctl: Any, call: Callable[[], Any]) -> dict[str, Any]:
    """Run ``call`` in a thread, restart the server while it waits on a lock, return its outcome."""
    locker = _lock_sessions_table(pg_dsn)
    try:
        thread, outcome = _in_thread(call)
        _wait_for(lambda: bool(_waiters(pg_dsn)), 30, "the call to block")
        pg_ctl.restart(mode="fast")  # terminates the blocked backend and the lock holder
        thread.join(timeout=90)
        assert not thread.is_alive()
    finally:
        locker.close()
    return outcome


def _retries(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "retrying once" in r.getMessage()]


@pg
def test_a_read_cut_by_a_restart_is_retried_once(
    pg_dsn: str, pg_ctl: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="threadline")
    with threadline.connect(pg_dsn) as store:
        store.touch_session(APP, "s1")
        store.touch_session(APP, "s2")
        for _ in range(ATTEMPTS):
            caplog.clear()
            outcome = _restart_while_blocked(pg_dsn, pg_ctl, lambda: store.count_sessions(APP))
            assert outcome == {"value": 2}  # never an error: cut or not, the read succeeds
            if _retries(caplog):
                break
        retries = _retries(caplog)
        assert len(retries) == 1 and "count_sessions" in retries[0], retries


@pg
def test_a_read_is_retried_once_only(pg_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="threadline")
    with threadline.connect(pg_dsn) as store:
        store.touch_session(APP, "s1")
        locker = _lock_sessions_table(pg_dsn)
        try:
            thread, outcome = _in_thread(lambda: store.count_sessions(APP))
            _wait_for(lambda: len(_waiters(pg_dsn)) == 1, 30, "the read to block")
            first = _waiters(pg_dsn)[0]
            _terminate(pg_dsn, first)  # connection lost: retried on a new connection...
            _wait_for(lambda: _waiters(pg_dsn) not in ([], [first]), 30, "the retry to block")
            _terminate(pg_dsn, _waiters(pg_dsn)[0])  # ...which is lost too: no third try
            thread.join(timeout=30)
        finally:
            locker.close()
        error = outcome.get("error")
        assert isinstance(error, StoreError) and error.operation == "count_sessions", outcome
        assert len(_retries(caplog)) == 1
        assert store.count_sessions(APP) == 1  # the pool replaced both dead connections


@pg
def test_a_write_cut_by_a_restart_raises_and_the_store_recovers(
    pg_dsn: str, pg_ctl: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="threadline")
    with threadline.connect(pg_dsn) as store:
        store.append_messages(APP, SESSION, [_message("m0")])
        expected = ["m0"]
        for attempt in range(ATTEMPTS):
            message_id = f"cut{attempt}"
            append = functools.partial(store.append_messages, APP, SESSION, [_message(message_id)])
            outcome = _restart_while_blocked(pg_dsn, pg_ctl, append)
            if "value" in outcome:  # finished before its backend was terminated: committed
                expected.append(message_id)
                continue
            error = outcome["error"]
            assert isinstance(error, StoreError) and error.operation == "append_messages"
            break
        else:
            pytest.fail("no write was cut by a restart")
        assert not _retries(caplog)  # writes are never retried
        # A cut write is rolled back with its connection (unless the cut hit the COMMIT's
        # acknowledgement, which is why writes are not retried); the same store writes again.
        path = store.get_path_ids(APP, SESSION)
        assert path in (expected, [*expected, message_id])
        expected = path
        store.append_messages(APP, SESSION, [_message("after")])
        assert store.get_path_ids(APP, SESSION) == [*expected, "after"]


# --------------------------------------------------------------------------- driver errors


def _drop(pg_dsn: str, table: str) -> None:
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {table}")


@pg
@pytest.mark.parametrize(
    ("table", "operation", "call"),
    [
        ("tl_compactions", "get_compactions", lambda s: s.get_compactions(APP, SESSION)),
        ("tl_prompts", "set_prompt", lambda s: s.set_prompt(APP, SESSION, "p")),
        ("tl_entries", "search_entries", lambda s: s.search_entries(APP, "docs", "deploy")),
        ("tl_state", "update_state", lambda s: s.update_state(APP, SESSION, None, {"k": 1})),
        ("tl_messages", "append_messages", lambda s: s.append_messages(APP, "s", [_message("x")])),
    ],
    ids=["read", "write", "search", "locked-write", "append"],
)
def test_driver_failures_raise_store_error_naming_the_operation(
    pg_dsn: str, table: str, operation: str, call: Callable[[Store], Any]
) -> None:
    with threadline.connect(pg_dsn) as store:
        store.touch_session(APP, SESSION)
        _drop(pg_dsn, table)
        with pytest.raises(StoreError) as caught:
            call(store)
        assert caught.value.operation == operation
        assert caught.value.cause is not None
        assert operation in str(caught.value)
        # the failed transaction left the pool usable
        assert store.count_sessions(APP) == 1


@pg
def test_an_unreachable_server_raises_store_error_on_connect() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        threadline.connect("postgresql://nobody@127.0.0.1:1/nothing?connect_timeout=5")
    assert caught.value.operation == "connect"
    assert time.monotonic() - started < 20


# --------------------------------------------------------------------------- URL and driver


@pg
def test_pool_parameters_are_consumed_and_the_rest_reaches_libpq(pg_dsn: str) -> None:
    sep = "&" if "?" in pg_dsn else "?"
    with threadline.connect(f"{pg_dsn}{sep}pool_min_size=0&pool_max_size=2") as store:
        store.touch_session(APP, SESSION)  # the search_path option still applies: fresh schema
        assert store.count_sessions(APP) == 1
    for bad in ("pool_max_size=0", "pool_min_size=3&pool_max_size=2", "pool_max_size=lots"):
        with pytest.raises(InvalidArgumentError):
            threadline.connect(f"{pg_dsn}{sep}{bad}")


def test_without_psycopg_import_works_and_connect_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"  # makes `import psycopg` raise ImportError
        "sys.modules['psycopg_pool'] = None\n"
        "import threadline, threadline.store.postgres\n"
        "from threadline.errors import ThreadlineError\n"
        "assert threadline.PostgresStore is threadline.store.postgres.PostgresStore\n"
        "try:\n"
        "    threadline.connect('postgresql://localhost/x')\n"
        "except ThreadlineError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "threadline[postgres]" in done.stdout
    assert issubclass(StoreError, ThreadlineError)


# --------------------------------------------------------------------------- without pg_trgm


@pytest.fixture
def no_trgm_url() -> Iterator[str]:
    """URL of a fresh database without pg_trgm, for a role that may not create extensions."""
    import psycopg

    base = os.environ.get("THREADLINE_TEST_PG_DSN", "")
    if not base:
        pytest.skip("needs THREADLINE_TEST_PG_DSN")
    name = f"tl_notrgm_{uuid.uuid4().hex[:10]}"  # hex only: safe to splice into SQL
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN")
        admin.execute(f"CREATE DATABASE {name}")
        admin.execute(f"REVOKE CREATE ON DATABASE {name} FROM PUBLIC")
    parts = urlsplit(base)
    with psycopg.connect(urlunsplit(parts._replace(path=f"/{name}")), autocommit=True) as db:
        db.execute(f"CREATE SCHEMA app AUTHORIZATION {name}")
    host = parts.netloc.rpartition("@")[2]
    search_path = "options=-csearch_path%3Dapp"
    url = urlunsplit(parts._replace(netloc=f"{name}@{host}", path=f"/{name}", query=search_path))
    try:
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {name}")


@pg
def test_without_pg_trgm_substring_search_falls_back_to_like(
    no_trgm_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threadline.store.postgres._schema as pg_schema

    monkeypatch.setattr(pg_schema, "_trgm_warned", False)  # the schema module warns once
    caplog.set_level(logging.WARNING, logger="threadline")
    for _ in range(2):  # a second open must not warn again
        with threadline.connect(no_trgm_url) as store:
            store.append_messages(APP, SESSION, [_message("m1")])
            for query in ("東京", "example.com", "3.11.7", "tower OR ops@example.com"):
                assert store.search_messages(APP, query), query
    warnings = [r.getMessage() for r in caplog.records if "pg_trgm" in r.getMessage()]
    assert len(warnings) == 1, warnings


@pytest.mark.postgres
def test_tables_later_on_the_search_path_are_not_taken_for_ours(pg_dsn: str) -> None:
    """Regression: the schema check found tl_meta anywhere on the search path, so a store whose
    first schema was empty read and wrote another schema's threadline tables (an older install
    in ``public``) instead of creating its own."""
    import uuid
    from urllib.parse import quote

    import psycopg

    import threadline

    with threadline.connect(pg_dsn) as old:  # an existing install, in the pg_dsn schema
        old.append_messages("app", "s", [{"id": "old", "role": "user", "parts": []}])
        old_schema = old._read("schema", lambda tx: tx.one("SELECT current_schema()"))[0]  # type: ignore[attr-defined]
    fresh = f"t_{uuid.uuid4().hex}"
    base = pg_dsn.split("?", 1)[0]
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{fresh}"')
    try:
        options = quote(f"-csearch_path={fresh},{old_schema}", safe="")
        with threadline.connect(f"{base}?options={options}") as store:
            assert store.get_path("app", "s") == []
            store.append_messages("app", "s", [{"id": "new", "role": "user", "parts": []}])
        with threadline.connect(pg_dsn) as old:
            assert [m["id"] for m in old.get_path("app", "s")] == ["old"]
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{fresh}" CASCADE')
