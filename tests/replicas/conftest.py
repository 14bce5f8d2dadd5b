"""A PostgreSQL primary and its streaming standby (integrations.md §20).

``scripts/test`` starts an asynchronous standby of the test server and exports:

- ``THREADLINE_TEST_PG_REPLICA_DSN``  the standby's DSN (the database of ``THREADLINE_TEST_PG_DSN``)
- ``THREADLINE_TEST_PG_REPLICA_CTL``  pg_ctl for the standby, as ``THREADLINE_TEST_PG_CTL``
- ``THREADLINE_TEST_PG_REPLICA_DATA`` its data directory
- ``THREADLINE_REQUIRE_PG_REPLICA=1``  a missing standby FAILS these tests instead of skipping

Each test gets the fresh schema of ``pg_dsn`` and the same search path on the standby.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPLICA_DSN_ENV = "THREADLINE_TEST_PG_REPLICA_DSN"
REPLICA_CTL_ENV = "THREADLINE_TEST_PG_REPLICA_CTL"
REPLICA_DATA_ENV = "THREADLINE_TEST_PG_REPLICA_DATA"
REQUIRE_REPLICA_ENV = "THREADLINE_REQUIRE_PG_REPLICA"


def _replica_unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_REPLICA_ENV) == "1":
        pytest.fail(f"a PostgreSQL standby is required ({REQUIRE_REPLICA_ENV}=1) but {reason}")
    pytest.skip(f"replica tests need {REPLICA_DSN_ENV}: {reason}")


def position(conn: Any, sql: str) -> int:
    row = conn.execute(f"SELECT ({sql} - '0/0'::pg_lsn)::bigint").fetchone()
    return int(row[0]) if row and row[0] is not None else -1


def wait_caught_up(primary: str, replica: str, timeout: float = 30.0) -> None:
    """Wait until the standby has replayed everything the primary wrote so far."""
    import psycopg

    with psycopg.connect(primary, autocommit=True) as conn:
        target = position(conn, "pg_current_wal_insert_lsn()")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(replica, autocommit=True, connect_timeout=2) as conn:
                if position(conn, "pg_last_wal_replay_lsn()") >= target:
                    return
        except psycopg.OperationalError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("the standby did not catch up with the primary in time")
        time.sleep(0.05)


@dataclass(frozen=True)
class Pair:
    """The test's schema on the primary and on the standby, and a control connection to the
    standby (``pause()`` / ``resume()`` its replay)."""

    primary: str
    replica: str
    control: str

    def _run(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.control, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql)

    def pause(self) -> None:
        self._run("SELECT pg_wal_replay_pause()")

    def resume(self) -> None:
        self._run("SELECT pg_wal_replay_resume()")

    def caught_up(self) -> None:
        wait_caught_up(self.primary, self.replica)


def _resumed(pair: Pair) -> bool:
    """Resume the standby's replay (it may be stopped: a test restarts it)."""
    import psycopg

    try:
        pair.resume()
    except psycopg.OperationalError:
        return False
    return True


@pytest.fixture
def pg_pair(pg_dsn: str) -> Iterator[Pair]:
    """``pg_dsn`` and the same schema on the standby, caught up; replay resumed at the end."""
    base = os.environ.get(REPLICA_DSN_ENV, "")
    if not base:
        _replica_unavailable(f"{REPLICA_DSN_ENV} is not set")
    query = pg_dsn.partition("?")[2]
    replica = f"{base}{'&' if '?' in base else '?'}{query}"
    wait_caught_up(pg_dsn, replica)  # the schema exists on the standby
    pair = Pair(pg_dsn, replica, base)
    try:
        yield pair
    finally:
        if _resumed(pair):
            wait_caught_up(pg_dsn, replica)


@dataclass(frozen=True)
class ReplicaCtl:
    """pg_ctl for the standby (as conftest's ``PgCtl`` for the primary)."""

    command: tuple[str, ...]
    data_dir: Path

    def run(self, *args: str) -> None:
        import subprocess

        done = subprocess.run(
            [*self.command, *args],
            capture_output=True,
            text=True,
            cwd=self.data_dir.parent,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stderr or done.stdout}")

    def stop(self) -> None:
        self.run("-w", "-t", "60", "-m", "fast", "stop")

    def start(self) -> None:
        self.run("-w", "-t", "60", "start")

    def is_running(self) -> bool:
        try:
            self.run("status")
        except RuntimeError:
            return False
        return True


@pytest.fixture
def replica_ctl() -> Iterator[ReplicaCtl]:
    """Control of the standby; running again when the test ends."""
    command = os.environ.get(REPLICA_CTL_ENV, "")
    data_dir = os.environ.get(REPLICA_DATA_ENV, "")
    if not command or not data_dir:
        _replica_unavailable(f"{REPLICA_CTL_ENV} and {REPLICA_DATA_ENV} are not set")
    control = ReplicaCtl(tuple(shlex.split(command)), Path(data_dir))
    try:
        yield control
    finally:
        if not control.is_running():
            control.start()


PG_BIN_ENV = "THREADLINE_TEST_PG_BIN"
PG_OWNER_ENV = "THREADLINE_TEST_PG_OWNER"


@pytest.fixture
def failover_pair() -> Iterator[Any]:
    """A fresh primary with a synchronous standby (``failover.py``), removed afterwards."""
    bin_dir = os.environ.get(PG_BIN_ENV, "")
    if not bin_dir:
        _replica_unavailable(f"{PG_BIN_ENV} (PostgreSQL's bin directory) is not set")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from failover import failover_pair as make

    with make(bin_dir, os.environ.get(PG_OWNER_ENV) or None) as pair:
        yield pair
