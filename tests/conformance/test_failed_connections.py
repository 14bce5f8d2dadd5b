"""A storage connection on which something failed is never reused (api.md amendment 16).

PostgreSQL: after any failed operation the pool hands out a fresh connection, so the next,
unrelated operation succeeds. The case that wedged a server worker: psycopg records a
statement as prepared when its ``Parse`` goes out inside a pipeline (its sixth use on the
connection), even when an earlier statement of that pipeline failed and the server skipped
the ``Parse``; on a reused connection every later use of that statement then failed with
"prepared statement ... does not exist". The tests reach the database through the store's
own transaction path (``_write``/``_read``) with a statement that fails there, whatever the
input checks in front of it refuse.

SQLite: a failed write is rolled back and the same store keeps writing and reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import threadline
from threadline.errors import SessionNotFoundError, StoreError
from threadline.store import Store
from threadline.store._sql.text import SQL_SESSION

APP = "default"
pg = pytest.mark.postgres


def _message(message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": message_id}]}


@pytest.fixture
def one_connection(pg_dsn: str) -> Iterator[Any]:
    """A PostgreSQL store whose pool holds one connection: every operation shares it."""
    separator = "&" if "?" in pg_dsn else "?"
    store: Any = threadline.connect(f"{pg_dsn}{separator}pool_min_size=1&pool_max_size=1")
    store.append_messages(APP, "good", [_message("m1")])
    try:
        yield store
    finally:
        store.close()


def _backend_pid(store: Any) -> int:
    row = store._read("pid", lambda tx: tx.one("SELECT pg_backend_pid()"))
    return int(row[0])


@pg
def test_a_failed_pipeline_does_not_wedge_a_prepared_statement(one_connection: Any) -> None:
    # Each failed write sends the session query after a statement that fails; one of them is
    # the query's sixth use, when psycopg prepares it (the Parse the server then skips).
    store = one_connection

    def failing(tx: Any) -> None:
        tx.send("SELECT 1 / (SELECT count(*) - count(*) FROM tl_sessions)")  # division by zero
        tx.one(SQL_SESSION, (APP, "good"))

    for attempt in range(8):
        with pytest.raises(StoreError, match="division by zero"):
            store._write("probe", failing)
        info = store.get_session(APP, "good")  # raised "prepared statement ... does not exist"
        assert info is not None, attempt
        assert [m["id"] for m in store.get_path(APP, "good")] == ["m1"]
    store.append_messages(APP, "good", [_message("m2")])
    assert [m["id"] for m in store.get_path(APP, "good")] == ["m1", "m2"]


@pg
@pytest.mark.parametrize(
    "failure",
    [
        pytest.param("SELECT CAST(9223372036854775807 AS BIGINT) + 1", id="overflow"),
        pytest.param(
            "INSERT INTO tl_sessions (app, id, metadata, created_at, updated_at) "
            "SELECT app, id, metadata, created_at, updated_at FROM tl_sessions",
            id="unique-violation",
        ),
        pytest.param("SELECT no_such_column FROM tl_sessions", id="bad-sql"),
    ],
)
def test_a_failed_write_discards_its_connection(one_connection: Any, failure: str) -> None:
    store = one_connection
    before = _backend_pid(store)
    assert _backend_pid(store) == before  # a healthy connection is reused
    with pytest.raises(StoreError):
        store._write("probe", lambda tx: tx.all(failure))
    assert _backend_pid(store) != before
    assert store.get_session(APP, "good") is not None
    store.append_messages(APP, "good", [_message("m2")])


@pg
def test_a_failed_read_discards_its_connection(one_connection: Any) -> None:
    store = one_connection
    before = _backend_pid(store)
    with pytest.raises(StoreError, match="division by zero"):
        store._read("probe", lambda tx: tx.one("SELECT 1 / 0"))
    assert _backend_pid(store) != before
    assert store.get_session(APP, "good") is not None


@pg
def test_an_unexpected_exception_discards_the_connection(one_connection: Any) -> None:
    # Not a typed error: whatever the code was doing, the connection may be half-way.
    store = one_connection
    before = _backend_pid(store)

    def boom(tx: Any) -> None:
        tx.send("SET application_name = 'half-done'")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store._write("probe", boom)
    assert _backend_pid(store) != before
    name = store._read("name", lambda tx: tx.one("SHOW application_name"))
    assert name[0] != "half-done"


@pg
def test_a_typed_error_on_a_clean_transaction_keeps_the_connection(one_connection: Any) -> None:
    # A refusal by the store's own checks fails nothing in the database: no reconnect.
    store = one_connection
    store.append_messages(APP, "owned", [_message("o1")], user_id="alice")
    before = _backend_pid(store)
    with pytest.raises(SessionNotFoundError):
        store.append_messages(APP, "owned", [_message("o2")], user_id="mallory")
    assert _backend_pid(store) == before
    assert [m["id"] for m in store.get_path(APP, "owned")] == ["o1"]


@pg
def test_a_typed_error_after_a_failed_statement_discards_the_connection(
    one_connection: Any,
) -> None:
    # The failure of a statement sent without waiting is only seen when the transaction is
    # closed; the typed error raised meanwhile must not hide it from the pool.
    store = one_connection
    before = _backend_pid(store)

    def refuse(tx: Any) -> None:
        tx.send("SELECT 1 / 0")
        raise SessionNotFoundError("refused after sending")

    with pytest.raises(SessionNotFoundError):
        store._write("probe", refuse)
    assert _backend_pid(store) != before
    assert store.get_session(APP, "good") is not None


def test_a_failed_write_is_rolled_back_and_the_store_keeps_working(store: Store) -> None:
    store.append_messages(APP, "good", [_message("m1")])
    sql: Any = store

    def half_then_fail(tx: Any) -> None:
        tx.execute("UPDATE tl_sessions SET name = 'half' WHERE app = ? AND id = ?", (APP, "good"))
        tx.all("SELECT no_such_column FROM tl_sessions")

    for _ in range(3):
        with pytest.raises(StoreError):
            sql._write("probe", half_then_fail)
        with pytest.raises(StoreError):
            sql._read("probe", lambda tx: tx.all("SELECT no_such_column FROM tl_sessions"))
    info = store.get_session(APP, "good")
    assert info is not None and info.name != "half"
    store.append_messages(APP, "good", [_message("m2")])
    assert [m["id"] for m in store.get_path(APP, "good")] == ["m1", "m2"]
