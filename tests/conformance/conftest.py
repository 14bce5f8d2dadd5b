"""What conformance tests share: the stateful oracles' run sizes and state machine base (two
connects of one store), a PostgreSQL pair of stores, and raw queries bypassing threadline."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

import threadline


def oracle_settings(examples: int, steps: int) -> settings:
    """CI-sized runs (each well under 20 s); the environment variables run them longer."""
    return settings(
        max_examples=int(os.environ.get("THREADLINE_ORACLE_EXAMPLES", examples)),
        stateful_step_count=int(os.environ.get("THREADLINE_ORACLE_STEPS", steps)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class TwoStores(RuleBasedStateMachine):
    """A machine writing through ``writer`` and reading through ``reader``, two connects of
    one store as two processes would have (one for ``:memory:``). ``url`` has ``{}`` where
    each example puts its own tag; ``shared`` is a (writer, reader) pair kept across examples
    instead (PostgreSQL: examples keep apart by the apps named after ``tag``)."""

    url: str = ""
    shared: tuple[Any, Any] | None = None

    def __init__(self) -> None:
        super().__init__()
        self.tag = uuid.uuid4().hex[:8]
        if self.shared is not None:
            self.writer, self.reader = self.shared
            self.owned = False
        else:
            url = self.url.replace("{}", self.tag)
            self.writer = threadline.connect(url)
            self.reader = self.writer if url == ":memory:" else threadline.connect(url)
            self.owned = True
        self.count = 0

    def teardown(self) -> None:
        if self.owned:
            self.writer.close()
            if self.reader is not self.writer:
                self.reader.close()

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def store(self, other: bool) -> Any:
        return self.reader if other else self.writer


def run_machine(
    machine: type[TwoStores], run: settings, url: str = "", shared: tuple[Any, Any] | None = None
) -> None:
    """Run ``machine`` with ``url`` or ``shared`` set."""
    bound = type(machine.__name__, (machine,), {"url": url, "shared": shared})
    run_state_machine_as_test(bound, settings=run)


@pytest.fixture
def pg_stores(pg_dsn: str) -> Iterator[tuple[Any, Any]]:
    """Two connects of one fresh PostgreSQL schema: (writer, reader)."""
    writer, reader = threadline.connect(pg_dsn), threadline.connect(pg_dsn)
    try:
        yield writer, reader
    finally:
        writer.close()
        reader.close()


def raw_query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """Run one read-only query on the store's database, bypassing threadline."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            return list(conn.execute(sql))
    import psycopg

    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(sql)]


def write_legacy_row(store: Any, message: dict[str, Any]) -> None:
    """Overwrite the stored message ``message["id"]`` with ``message`` as a release before
    the write checks could store it (any role string, a reasoning part without ``text``),
    through the store's own connection: every backend, ``:memory:`` too."""
    from threadline.messages import encode_message

    def quoted(value: str) -> str:
        return "'" + value.replace("'", "''") + "'"

    sql = (
        f"UPDATE tl_messages SET role = {quoted(message['role'])}, "
        f"data = {quoted(encode_message(message))} WHERE id = {quoted(message['id'])}"
    )
    store._write("legacy row", lambda tx: tx.execute(sql))
