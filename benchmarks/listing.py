"""Session listing on SQLite and PostgreSQL: threadline vs a plain query on the same table.

Run:  python benchmarks/listing.py            (10,000 sessions)
      python benchmarks/listing.py --quick    (2,000 sessions)
      THREADLINE_BENCH_PG_DSN=postgresql://... adds PostgreSQL (a fresh schema, dropped after)

Workloads, median of calls interleaved with the plain side (so load hits both alike):
  L1  newest 50 sessions: ``store.list_sessions(limit=50)`` and ``SessionManager.list``
  L2  newest 50 with their state and head: ``store.list_sessions_with_state(limit=50)``
  L3  every session of one user in pages of 1,000 (``list_sessions_with_state``), the bulk read
      an adapter does (ADK's ``list_sessions``)

The plain side queries threadline's own ``tl_sessions`` table (same rows, same index) through
its own connection and decodes each row the way a caller needs it: the metadata JSON parsed,
the timestamps aware datetimes (``benchmarks/sessions.py``'s ``decode``); for L2/L3 it also
reads the session state and head with one correlated query per page and parses the state.
Target (issue 14): L1 within 2x of the plain query.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sessions import COLUMNS, decode

import threadline

APP = "default"
USER = "u1"
_STATE = (
    "SELECT s.{columns}, s.head_id, (SELECT {agg} FROM tl_state t WHERE t.app = s.app "
    "AND t.owner = 'session' AND t.owner_id = s.id), m.created_at FROM tl_sessions s "
    "LEFT JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id "
    "WHERE s.app = {p}{user} ORDER BY s.updated_at DESC, s.id DESC LIMIT {p}"
)


def fill(store: Any, count: int) -> None:
    for i in range(count):
        sid = f"sess-{i:06d}"
        store.create_session(APP, sid, user_id=USER if i % 2 else f"u{i % 7}", name=f"Chat {i}")
        if i % 3 == 0:
            store.update_state(APP, sid, None, {"topic": f"t{i}", "n": i})


class Plain:
    """The floor: the same queries on the same table through a bare DB-API connection."""

    def __init__(self, conn: Any, placeholder: str, agg: str) -> None:
        self.conn, self.p = conn, placeholder
        cols = COLUMNS.replace(", ", ", s.")
        self.newest = (
            f"SELECT {COLUMNS} FROM tl_sessions WHERE app = {self.p} "
            f"ORDER BY updated_at DESC, id DESC LIMIT {self.p}"
        )
        self.with_state = _STATE.format(columns=cols, agg=agg, p=self.p, user="")
        self.user_pages = _STATE.format(
            columns=cols, agg=agg, p=self.p, user=f" AND s.user_id = {self.p}"
        )

    def rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        cursor = self.conn.execute(sql, params)
        return list(cursor.fetchall())

    def list(self, limit: int) -> list[dict[str, Any]]:
        return [decode(row) for row in self.rows(self.newest, (APP, limit + 1))[:limit]]

    def list_with_state(self, limit: int) -> list[Any]:
        rows = self.rows(self.with_state, (APP, limit + 1))[:limit]
        return [(decode(r[:15]), r[15], json.loads(r[16]) if r[16] else {}, r[17]) for r in rows]

    def user_all(self) -> int:
        rows = self.rows(self.user_pages, (APP, USER, 10**9))  # one page: the plain floor
        return len([(r[0], r[15], json.loads(r[16]) if r[16] else {}, r[17]) for r in rows])


def walk_user(store: Any) -> int:
    n, cursor = 0, None
    while True:
        page = store.list_sessions_with_state(APP, user_id=USER, limit=1000, cursor=cursor)
        n += len([(s.id, s.head_id, s.state) for s in page.sessions])
        cursor = page.next_cursor
        if cursor is None:
            return n


def medians(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) * 1e3 for t in times]


def measure(name: str, store: Any, plain: Plain, count: int) -> list[tuple[str, float, float]]:
    manager = threadline.SessionManager(store, app_name=APP)
    assert [s.id for s in store.list_sessions(APP, limit=50).sessions] == [
        r["id"] for r in plain.list(50)
    ]
    assert walk_user(store) == plain.user_all()
    l1_store, l1_manager, l1_plain = medians(
        [
            lambda: store.list_sessions(APP, limit=50),
            lambda: manager.list(limit=50),
            lambda: plain.list(50),
        ],
        200,
    )
    l2, l2_plain = medians(
        [lambda: store.list_sessions_with_state(APP, limit=50), lambda: plain.list_with_state(50)],
        200,
    )
    l3, l3_plain = medians([lambda: walk_user(store), plain.user_all], 9)
    return [
        (f"{name}: L1 store.list_sessions newest 50 of {count:,}", l1_store, l1_plain),
        (f"{name}: L1 SessionManager.list newest 50", l1_manager, l1_plain),
        (f"{name}: L2 list_sessions_with_state newest 50", l2, l2_plain),
        (f"{name}: L3 all {count // 2:,} sessions of a user with state", l3, l3_plain),
    ]


def sqlite_rows(tmp: Path, count: int) -> list[tuple[str, float, float]]:
    path = tmp / "list.db"
    with threadline.connect(f"sqlite:///{path}") as store:
        fill(store, count)
        conn = sqlite3.connect(path)
        conn.execute("ANALYZE")
        plain = Plain(conn, "?", "json_group_object(t.key, json(t.value))")
        try:
            return measure("SQLite", store, plain, count)
        finally:
            conn.close()


def postgres_rows(dsn: str, count: int) -> list[tuple[str, float, float]]:
    import psycopg
    from postgres_columns import fresh_schema

    with fresh_schema(dsn) as url, threadline.connect(url) as store:
        fill(store, count)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")  # fresh tables: the planner's statistics, as in production
            plain = Plain(conn, "%s", "json_object_agg(t.key, t.value::json)::text")
            return measure("PostgreSQL", store, plain, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    count = 2000 if parser.parse_args().quick else 10_000
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows += sqlite_rows(Path(tmp), count)
    dsn = os.environ.get("THREADLINE_BENCH_PG_DSN")
    if dsn:
        rows += postgres_rows(dsn, count)
    else:
        print("PostgreSQL: set THREADLINE_BENCH_PG_DSN to add it")
    print(f"{'workload (median ms)':<58}{'threadline':>11}{'plain':>9}{'ratio':>8}")
    for name, ours, floor in rows:
        print(f"{name:<58}{ours:>11.3f}{floor:>9.3f}{ours / floor:>7.2f}x")
    print("ratio = threadline / plain query decoding the same records (L1 target: <= 2x)")


if __name__ == "__main__":
    main()
