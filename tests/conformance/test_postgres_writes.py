"""PostgreSQL writes in pipeline mode (docs/postgres.md).

* An append is two round trips and three statements: the lock and the head read (with which
  of the ids are stored) go out together, the message row rides on the head update, and the
  pipeline's Sync commits.
* A write that raises after its lock was sent stores nothing: the implicit transaction is
  rolled back before the Sync that would commit it (here the lock's new registry row).
* Ids already stored are recognised whatever they hold (the head read answers with positions).
* A pooled connection the server dropped while idle is replaced before a write uses it,
  although checking out a connection costs no round trip.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

import psycopg
import pytest

import threadline
from threadline.errors import MessageNotFoundError
from threadline.messages import normalize_message
from threadline.store import Store

APP = "default"
pg = pytest.mark.postgres


def _message(message_id: str, text: str = "hello") -> dict[str, Any]:
    return normalize_message({"id": message_id, "role": "user", "content": text})


def _traced(store: Any, call: Any) -> list[str]:
    """Frontend protocol messages (Parse/Bind/Execute/Flush/Sync) sent by ``call``, on a
    store whose pool holds one connection."""
    pool = store._pool._pool
    with tempfile.TemporaryFile("w+") as trace:
        with pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
        try:
            call()
        finally:
            with pool.connection() as conn:
                conn.pgconn.untrace()
        trace.seek(0)
        return [line.split("\t")[3].strip() for line in trace if line.split("\t")[1] == "F"]


@pg
def test_an_append_is_two_round_trips_and_three_statements(pg_dsn: str) -> None:
    sep = "&" if "?" in pg_dsn else "?"
    with threadline.connect(f"{pg_dsn}{sep}pool_max_size=1") as store:
        store.append_messages(APP, "s", [_message("m0")])
        sent = _traced(store, lambda: store.append_messages(APP, "s", [_message("m1")]))
        waits = [kind for kind in sent if kind in ("Flush", "Sync")]
        assert sent.count("Execute") == 3, sent
        # One Flush for the head read, one Sync that commits (psycopg then flushes once more
        # leaving the pipeline, with nothing left to wait for).
        assert waits[:2] == ["Flush", "Sync"], sent
        assert store.get_path_ids(APP, "s") == ["m0", "m1"]
        assert store.get_session(APP, "s").message_count == 2  # type: ignore[union-attr]


@pg
@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.update_message(APP, "ghost", _message("m1")),
        lambda s: s.set_head(APP, "ghost", "m1"),
        lambda s: s.append_messages(APP, "ghost", [_message("m1")], parent_id="nope"),
        lambda s: s.rewind(APP, "ghost", "m1"),
    ],
    ids=["update_message", "set_head", "append-unknown-parent", "rewind"],
)
def test_a_write_raising_after_its_lock_was_sent_stores_nothing(pg_dsn: str, call: Any) -> None:
    # The lock statement inserts the missing registry row; raising afterwards must roll that
    # back although the pipeline's closing Sync would commit it.
    with threadline.connect(pg_dsn) as store:
        with pytest.raises(MessageNotFoundError):
            call(store)
        assert store.get_session(APP, "ghost") is None
        assert store.count_sessions(APP) == 0
        store.append_messages(APP, "ghost", [_message("m1")])  # the connection is usable
        assert store.get_path_ids(APP, "ghost") == ["m1"]


@pytest.mark.parametrize("message_id", ["plain", "nul\x00inside", "esc\U0010ffffE0"])
def test_a_repeated_id_returns_the_stored_message(store: Store, message_id: str) -> None:
    first = store.append_messages(APP, "s", [_message(message_id, "first")])[0]
    again = store.append_messages(APP, "s", [_message(message_id, "second"), _message("next")])
    assert again[0] == first  # stored, not written again
    assert store.get_path_ids(APP, "s") == [message_id, "next"]
    assert store.get_session(APP, "s").message_count == 2  # type: ignore[union-attr]
    twice = store.append_messages(APP, "t", [_message("x", "one"), _message("x", "two")])
    assert twice[1] == twice[0]
    assert store.get_path_ids(APP, "t") == ["x"]


@pg
def test_an_idle_connection_dropped_by_the_server_is_replaced_before_a_write(
    pg_dsn: str,
) -> None:
    sep = "&" if "?" in pg_dsn else "?"
    name = f"tl-dropped-{time.monotonic_ns()}"
    with threadline.connect(f"{pg_dsn}{sep}application_name={name}") as store:
        store.append_messages(APP, "s", [_message("m0")])
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (name,),
            ).fetchone()
            assert killed is not None and killed[0] >= 1
            deadline = time.monotonic() + 10
            while admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchone() != (0,):
                assert time.monotonic() < deadline, "the backends did not go away"
                time.sleep(0.05)
        store.append_messages(APP, "s", [_message("m1")])  # a write: never retried
        assert store.get_path_ids(APP, "s") == ["m0", "m1"]


def test_a_large_batch_with_a_repeated_id(store: Store) -> None:
    # Over 400 ids the PostgreSQL head read passes them as one array instead of a list.
    first = store.append_messages(APP, "s", [_message("m0", "first")])[0]
    batch = [_message(f"n{i}") for i in range(450)]
    batch[200] = _message("m0", "again")
    stored = store.append_messages(APP, "s", batch)
    assert stored[200] == first
    assert store.get_session(APP, "s").message_count == 450  # type: ignore[union-attr]
    assert store.get_path_ids(APP, "s") == ["m0", *[f"n{i}" for i in range(201, 450)]]
