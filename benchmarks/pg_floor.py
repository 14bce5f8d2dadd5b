"""PostgreSQL floor: threadline's appends and history reads vs raw psycopg doing the same work.

Run:  python benchmarks/pg_floor.py DSN            (e.g. postgresql://postgres@127.0.0.1/db)
      python benchmarks/pg_floor.py DSN --quick    (a smoke run of a few seconds)

All sides run on the same server in the same run, interleaved round by round (the order
rotates), each in a schema of its own (``tl_bench_*``, dropped at the end). Per append, a
floor does by hand, in one transaction, what any tree store on PostgreSQL must do: lock the
session row (``SELECT ... FOR UPDATE``), insert the message with its word index, move the
head and bump the counters. Its history read is one recursive query from the head to the
root. Threadline does the same through ``Session.append_message`` (one durable call per
message, varied text from ``textgen``) and ``Session.get_history``. Two floors:

* ``issue floor``: the floor of the scale issue (``../shared/bench/pg_floor.py``): a minimal
  message table, one ``to_tsvector`` and its GIN index.
* ``same-schema floor``: the same statements on threadline's own tables (created by
  threadline in its schema), so the server maintains what threadline's search needs: the
  ``tsvector`` of the text as written and with punctuation split, the trigram index for
  substrings, the ``seq`` and parent indexes. This is the floor "doing the same work".

The ratio is floor rate / threadline rate for appends and threadline time / floor time for
reads: lower is better, 1.00x means threadline costs nothing over that floor (target for
appends: <= 1.3x).

A first round on each side (not measured) fills the tables, then every schema is
``ANALYZE``d, as autovacuum does within a minute of a deployment: before any statistics
exist, PostgreSQL may plan a primary-key lookup of ``tl_messages`` as a scan of the
session's messages (its estimate for both indexes is one row), which makes each append
cost more as the session grows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import psycopg
from textgen import TextGen

import threadline
from threadline.messages import user

ISSUE, SAME, STORE = "tl_bench_floor", "tl_bench_same", "tl_bench_store"
ISSUE_DDL = """
CREATE TABLE sessions (app TEXT, id TEXT, head TEXT, last_seq BIGINT NOT NULL DEFAULT 0,
    message_count BIGINT NOT NULL DEFAULT 0, updated_at BIGINT, PRIMARY KEY (app, id));
CREATE TABLE messages (app TEXT, session_id TEXT, id TEXT, seq BIGINT, parent_id TEXT,
    data TEXT, tsv tsvector, PRIMARY KEY (app, session_id, id));
CREATE INDEX ON messages USING gin (tsv);
CREATE INDEX ON messages (app, session_id, parent_id);
"""
HISTORY = """
WITH RECURSIVE p(id, parent_id, data, n) AS (
  SELECT m.id, m.parent_id, m.data, 1 FROM {sessions} s JOIN {messages} m
    ON m.app = s.app AND m.session_id = s.id AND m.id = s.{head} WHERE s.app = %s AND s.id = %s
  UNION ALL SELECT m.id, m.parent_id, m.data, p.n + 1 FROM p JOIN {messages} m
    ON m.app = %s AND m.session_id = %s AND m.id = p.parent_id)
SELECT data FROM p ORDER BY n DESC
"""


#: Extra server settings for every connection of every side (``--async-commit``).
SETTINGS: list[str] = []


def with_schema(dsn: str, schema: str) -> str:
    """The DSN with ``search_path`` set to ``schema`` (libpq ``options``)."""
    sep = "&" if "?" in dsn else "?"
    options = " ".join([f"-csearch_path={schema}", *(f"-c{s}" for s in SETTINGS)])
    return f"{dsn}{sep}options={quote(options)}"


def body(message_id: str, text: str) -> str:
    return json.dumps({"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]})


class IssueFloor:
    """The scale issue's floor: one transaction of three statements on a minimal table."""

    history_sql = HISTORY.format(sessions="sessions", messages="messages", head="head")

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(with_schema(dsn, ISSUE), autocommit=True)
        self.conn.execute(ISSUE_DDL)

    def new_session(self, session_id: str) -> None:
        self.conn.execute("INSERT INTO sessions (app, id) VALUES ('b', %s)", (session_id,))

    def append(self, session_id: str, message_id: str, text: str) -> None:
        conn = self.conn
        with conn.transaction():
            row = conn.execute(
                "SELECT head, last_seq FROM sessions WHERE app = 'b' AND id = %s FOR UPDATE",
                (session_id,),
            ).fetchone()
            assert row is not None
            conn.execute(
                "INSERT INTO messages (app, session_id, id, seq, parent_id, data, tsv) "
                "VALUES ('b', %s, %s, %s, %s, %s, to_tsvector('english', %s))",
                (session_id, message_id, row[1] + 1, row[0], body(message_id, text), text),
            )
            conn.execute(
                "UPDATE sessions SET head = %s, last_seq = last_seq + 1, "
                "message_count = message_count + 1, updated_at = %s WHERE app = 'b' AND id = %s",
                (message_id, time.time_ns() // 1000, session_id),
            )

    def history(self, session_id: str) -> list[Any]:
        rows = self.conn.execute(self.history_sql, ("b", session_id) * 2).fetchall()
        return [json.loads(row[0]) for row in rows]

    def close(self) -> None:
        self.conn.close()


class SameSchemaFloor(IssueFloor):
    """The same statements on threadline's tables: the server does threadline's indexing."""

    history_sql = HISTORY.format(sessions="tl_sessions", messages="tl_messages", head="head_id")

    def __init__(self, dsn: str) -> None:
        threadline.connect(with_schema(dsn, SAME)).close()  # threadline's DDL
        self.conn = psycopg.connect(with_schema(dsn, SAME), autocommit=True)

    def new_session(self, session_id: str) -> None:
        self.conn.execute(
            "INSERT INTO tl_sessions (app, id, metadata, created_at, updated_at) "
            "VALUES ('b', %s, '{}', 0, 0)",
            (session_id,),
        )

    def append(self, session_id: str, message_id: str, text: str) -> None:
        conn = self.conn
        data = body(message_id, text)
        size = len(data.encode())
        with conn.transaction():
            row = conn.execute(
                "SELECT s.head_id, s.last_seq, m.depth, m.path_bytes FROM tl_sessions s "
                "LEFT JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id "
                "AND m.id = s.head_id WHERE s.app = 'b' AND s.id = %s FOR UPDATE OF s",
                (session_id,),
            ).fetchone()
            assert row is not None
            conn.execute(
                "INSERT INTO tl_messages (app, session_id, id, seq, parent_id, role, byte_size, "
                "depth, path_bytes, data, search_text) "
                "VALUES ('b', %s, %s, %s, %s, 'user', %s, %s, %s, %s, %s)",
                (session_id, message_id, row[1] + 1, row[0], size, (row[2] or 0) + 1,
                 (row[3] or 0) + size, data, text.lower()),
            )  # fmt: skip
            conn.execute(
                "UPDATE tl_sessions SET head_id = %s, last_seq = last_seq + 1, "
                "message_count = message_count + 1, updated_at = %s WHERE app = 'b' AND id = %s",
                (message_id, time.time_ns() // 1000, session_id),
            )


def reset_schemas(dsn: str, *, create: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for schema in (ISSUE, SAME, STORE):
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            if create:
                conn.execute(f"CREATE SCHEMA {schema}")


def analyze(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("sessions", "messages"):
            conn.execute(f"ANALYZE {ISSUE}.{table}")
            for schema in (SAME, STORE):
                conn.execute(f"ANALYZE {schema}.tl_{table}")


def rate(fn: Callable[[], object], count: int) -> float:
    started = time.perf_counter()
    fn()
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("dsn")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--appends", type=int, default=None, help="appends per round")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument(
        "--async-commit",
        action="store_true",
        help="synchronous_commit=off on every side: commits do not wait for the disk, which "
        "other jobs on a shared machine make slow and erratic (same work otherwise)",
    )
    args = parser.parse_args()
    if args.async_commit:
        SETTINGS.append("synchronous_commit=off")
    count = args.appends or (200 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 5)
    reset_schemas(args.dsn, create=True)
    floors = {"issue floor": IssueFloor(args.dsn), "same-schema floor": SameSchemaFloor(args.dsn)}
    store = threadline.connect(with_schema(args.dsn, STORE))
    texts = [TextGen(seed=7).message() for _ in range(count)]
    names = [*floors, "threadline"]
    appends: dict[str, list[float]] = {name: [] for name in names}
    reads: dict[str, list[float]] = {name: [] for name in names}
    try:
        for rnd in range(-1, rounds):
            sid = f"s{rnd}-{uuid.uuid4().hex[:8]}"
            session = threadline.Session(store, session_id=sid, app_name="b")
            sides: list[tuple[str, Callable[[], object], Callable[[], object]]] = []
            for name, floor in floors.items():
                floor.new_session(sid)

                def floor_appends(floor: IssueFloor = floor, sid: str = sid) -> None:
                    for i, text in enumerate(texts):
                        floor.append(sid, f"m{i}", text)

                sides.append((name, floor_appends, lambda f=floor, s=sid: f.history(s)))

            def store_appends(session: threadline.Session = session) -> None:
                for i, text in enumerate(texts):
                    session.append_message(user(text, id=f"m{i}"))

            sides.append(("threadline", store_appends, session.get_history))
            shift = rnd % len(sides)  # the first side rotates: load hits every side alike
            for name, fn, _ in sides[shift:] + sides[:shift]:
                appends[name].append(rate(fn, count))
            if rnd < 0:  # the warm-up round: statistics, as autovacuum would gather them
                analyze(args.dsn)
                appends = {name: [] for name in names}
                continue
            assert all(len(read()) == count for _, _, read in sides)  # type: ignore[arg-type]
            for _ in range(5):
                for name, _, read in sides:
                    started = time.perf_counter()
                    read()
                    reads[name].append(time.perf_counter() - started)
    finally:
        store.close()
        for floor in floors.values():
            floor.close()
        reset_schemas(args.dsn, create=False)
    rate_of = {name: statistics.median(appends[name]) for name in names}
    read_of = {name: statistics.median(reads[name]) * 1000 for name in names}
    commit = ", synchronous_commit=off" if args.async_commit else ""
    print(f"PostgreSQL floor ({rounds} rounds x {count} appends, medians, interleaved{commit})")
    print()
    print("| workload | floor | floor | threadline | ratio | target |")
    print("|---|---|---|---|---|---|")
    t_rate, t_read = rate_of["threadline"], read_of["threadline"]
    for name in floors:
        print(
            f"| append, one transaction each | {name} | {rate_of[name]:,.0f} msg/s "
            f"| {t_rate:,.0f} msg/s | {rate_of[name] / t_rate:.2f}x | <= 1.3x |"
        )
    for name in floors:
        ratios = sorted(f / t for f, t in zip(appends[name], appends["threadline"], strict=True))
        print(
            f"| append ratio, round by round | {name} | | | "
            f"{ratios[0]:.2f}-{ratios[-1]:.2f}x | <= 1.3x |"
        )
    for name in floors:
        print(
            f"| history of {count} messages | {name} | {read_of[name]:.2f} ms "
            f"| {t_read:.2f} ms | {t_read / read_of[name]:.2f}x | |"
        )


if __name__ == "__main__":
    main()
