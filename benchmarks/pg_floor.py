"""PostgreSQL floor: threadline's appends and history reads vs raw psycopg doing the same work.

Run:  python benchmarks/pg_floor.py DSN            (e.g. postgresql://postgres@127.0.0.1/db)
      python benchmarks/pg_floor.py DSN --quick    (a smoke run of a few seconds)

Both sides run on the same server in the same run, interleaved round by round, each in a
schema of its own (``tl_bench_floor``, ``tl_bench_store``; both dropped at the end). The
floor is what any tree store on PostgreSQL must do per append, written by hand in one
transaction: lock the session row (``SELECT ... FOR UPDATE``), insert the message with its
``tsvector`` computed in the ``INSERT``, move the head and bump the counters. Its history
read is one recursive query from the head to the root. Threadline does the same through
``Session.append_message`` (one durable call per message, varied text from ``textgen``)
and ``Session.get_history``. The ratio is floor rate / threadline rate for appends and
threadline time / floor time for reads: lower is better, 1.00x means threadline costs
nothing over the floor (target: appends <= 1.3x).

A first round on each side (not measured) fills the tables, then both schemas are
``ANALYZE``d, as autovacuum does within a minute of a deployment: before any statistics
exist, PostgreSQL may plan a primary-key lookup of ``tl_messages`` as a scan of the
session's messages (its estimate for both indexes is one row), which makes each append
cost more as the session grows. The floor looks no message up, so it does not notice.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import psycopg
from textgen import TextGen

import threadline
from threadline.messages import user

FLOOR_SCHEMA, STORE_SCHEMA = "tl_bench_floor", "tl_bench_store"
FLOOR_DDL = """
CREATE TABLE sessions (app TEXT, id TEXT, head TEXT, last_seq BIGINT NOT NULL DEFAULT 0,
    message_count BIGINT NOT NULL DEFAULT 0, updated_at BIGINT, PRIMARY KEY (app, id));
CREATE TABLE messages (app TEXT, session_id TEXT, id TEXT, seq BIGINT, parent_id TEXT,
    data TEXT, tsv tsvector, PRIMARY KEY (app, session_id, id));
CREATE INDEX ON messages USING gin (tsv);
CREATE INDEX ON messages (app, session_id, parent_id);
"""
FLOOR_HISTORY = """
WITH RECURSIVE p(id, parent_id, data, n) AS (
  SELECT m.id, m.parent_id, m.data, 1 FROM sessions s JOIN messages m
    ON m.app = s.app AND m.session_id = s.id AND m.id = s.head WHERE s.app = %s AND s.id = %s
  UNION ALL SELECT m.id, m.parent_id, m.data, p.n + 1 FROM p JOIN messages m
    ON m.app = %s AND m.session_id = %s AND m.id = p.parent_id)
SELECT data FROM p ORDER BY n DESC
"""


def with_schema(dsn: str, schema: str) -> str:
    """The DSN with ``search_path`` set to ``schema`` (libpq ``options``)."""
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}"


class Floor:
    """The same work as a tree store, by hand: one transaction of three statements."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(with_schema(dsn, FLOOR_SCHEMA), autocommit=True)
        self.conn.execute(FLOOR_DDL)

    def append(self, session_id: str, message_id: str, text: str) -> None:
        conn = self.conn
        body = json.dumps({"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]})
        with conn.transaction():
            row = conn.execute(
                "SELECT head, last_seq FROM sessions WHERE app = 'b' AND id = %s FOR UPDATE",
                (session_id,),
            ).fetchone()
            assert row is not None
            conn.execute(
                "INSERT INTO messages (app, session_id, id, seq, parent_id, data, tsv) "
                "VALUES ('b', %s, %s, %s, %s, %s, to_tsvector('english', %s))",
                (session_id, message_id, row[1] + 1, row[0], body, text),
            )
            conn.execute(
                "UPDATE sessions SET head = %s, last_seq = last_seq + 1, "
                "message_count = message_count + 1, updated_at = %s WHERE app = 'b' AND id = %s",
                (message_id, time.time_ns() // 1000, session_id),
            )

    def new_session(self, session_id: str) -> None:
        self.conn.execute("INSERT INTO sessions (app, id) VALUES ('b', %s)", (session_id,))

    def history(self, session_id: str) -> list[Any]:
        rows = self.conn.execute(FLOOR_HISTORY, ("b", session_id, "b", session_id)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def close(self) -> None:
        self.conn.close()


def reset_schemas(dsn: str, *, create: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema in (FLOOR_SCHEMA, STORE_SCHEMA):
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            if create:
                conn.execute(f"CREATE SCHEMA {schema}")


def analyze(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema in (FLOOR_SCHEMA, STORE_SCHEMA):
            conn.execute(f"ANALYZE {schema}.{'messages' if schema == FLOOR_SCHEMA else 'tl_messages'}")
            conn.execute(f"ANALYZE {schema}.{'sessions' if schema == FLOOR_SCHEMA else 'tl_sessions'}")


def rate(fn: Any, count: int) -> float:
    started = time.perf_counter()
    fn()
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dsn")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--appends", type=int, default=None, help="appends per round")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    count = args.appends or (200 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 5)
    reset_schemas(args.dsn, create=True)
    floor = Floor(args.dsn)
    store = threadline.connect(with_schema(args.dsn, STORE_SCHEMA))
    texts = [TextGen(seed=7).message() for _ in range(count)]
    appends: dict[str, list[float]] = {"floor": [], "threadline": []}
    reads: dict[str, list[float]] = {"floor": [], "threadline": []}
    try:
        for rnd in range(-1, rounds):
            sid = f"s{rnd}-{uuid.uuid4().hex[:8]}"
            floor.new_session(sid)
            session = threadline.Session(store, session_id=sid, app_name="b")

            def floor_appends(sid: str = sid) -> None:
                for i, text in enumerate(texts):
                    floor.append(sid, f"m{i}", text)

            def store_appends(session: threadline.Session = session) -> None:
                for i, text in enumerate(texts):
                    session.append_message(user(text, id=f"m{i}"))

            # Interleaved, and the first side alternates: load hits both sides alike.
            sides = [("floor", floor_appends), ("threadline", store_appends)]
            for name, fn in sides if rnd % 2 == 0 else sides[::-1]:
                appends[name].append(rate(fn, count))
            if rnd < 0:  # the warm-up round: statistics, as autovacuum would gather them
                analyze(args.dsn)
                appends = {name: [] for name in appends}
                continue
            assert len(session.get_history()) == len(floor.history(sid)) == count
            for _ in range(5):
                for name, read in (
                    ("floor", lambda sid=sid: floor.history(sid)),
                    ("threadline", session.get_history),
                ):
                    started = time.perf_counter()
                    read()
                    reads[name].append(time.perf_counter() - started)
    finally:
        store.close()
        floor.close()
        reset_schemas(args.dsn, create=False)
    f_rate = statistics.median(appends["floor"])
    t_rate = statistics.median(appends["threadline"])
    f_read = statistics.median(reads["floor"]) * 1000
    t_read = statistics.median(reads["threadline"]) * 1000
    print(f"PostgreSQL floor ({rounds} rounds x {count} appends, medians, same server, interleaved)")
    print()
    print("| workload | raw psycopg | threadline | ratio | target |")
    print("|---|---|---|---|---|")
    print(
        f"| append, one transaction each | {f_rate:,.0f} msg/s | {t_rate:,.0f} msg/s "
        f"| {f_rate / t_rate:.2f}x | <= 1.3x |"
    )
    print(
        f"| history of {count} messages | {f_read:.2f} ms | {t_read:.2f} ms "
        f"| {t_read / f_read:.2f}x | |"
    )


if __name__ == "__main__":
    main()
