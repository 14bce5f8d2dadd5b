"""PostgreSQL columns for ``benchmarks/core.py``: the same workloads on ``PostgresStore``.

Each function runs in a fresh schema of the database named by ``dsn`` (created first, dropped
after, so nothing else in the database is touched) and uses the same text generator, seeds and
queries as the SQLite workloads:

- :func:`pg_append`  W1: messages/second, one ``Session.append_message`` (one transaction) each;
- :func:`pg_history` W2: seconds per ``get_history`` of an ``n``-message path (best of 15);
- :func:`pg_search`  W4: seconds per cross-session top-10 search (best of 5 rounds); the
  corpus is bulk-loaded with COPY (:func:`bulk_copy`), rows built exactly as the store would.

Run alone:  THREADLINE_BENCH_PG_DSN=postgresql://... python benchmarks/postgres_columns.py

>>> pg_append("postgresql://localhost/bench", 2000)  # doctest: +SKIP
1850.3
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from core import QUERIES, bulk_threadline, timed
from textgen import TextGen

import threadline


def _with_schema(dsn: str, schema: str) -> str:
    options = quote(f"-csearch_path={schema}", safe="")
    return f"{dsn}{'&' if '?' in dsn else '?'}options={options}"


@contextmanager
def fresh_schema(dsn: str) -> Iterator[str]:
    """URL of a new, empty schema in ``dsn``'s database; the schema is dropped afterwards."""
    import psycopg

    schema = f"tl_bench_{uuid.uuid4().hex[:12]}"  # hex only: safe to splice into SQL
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _with_schema(dsn, schema)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def pg_append(dsn: str, n: int) -> float:
    """W1: messages appended per second, one call (one transaction) per message."""
    gen = TextGen(1)
    texts = [gen.message() for _ in range(n)]
    with fresh_schema(dsn) as url, threadline.connect(url) as store:
        session = threadline.Session(store, session_id="s")
        session.append_message({"role": "user", "content": "warm-up"})  # pool + plans ready
        elapsed = timed(
            lambda: [session.append_message({"role": "user", "content": t}) for t in texts]
        )
    return n / elapsed


def bulk_copy(url: str, sessions: int, per: int, gen: TextGen) -> None:
    """Load the same conversations as ``core.bulk_threadline`` with COPY (seconds, not minutes).

    Rows are built exactly as the store builds them (normalised message, compact JSON, seq,
    depth, path bytes, search text), one linear path per session with the head on its end.
    """
    import psycopg

    from threadline.messages import encode_message, normalize_message, text_of
    from threadline.store._sql.rows import now_us

    columns = (
        "app, session_id, id, seq, parent_id, role, byte_size, depth, path_bytes, created_at, "
        "data, search_text"
    )
    heads = []
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(f"COPY tl_messages ({columns}) FROM STDIN") as copy:
            for s in range(sessions):
                parent, path_bytes = None, 0
                for i in range(per):
                    role = "user" if i % 2 == 0 else "assistant"
                    message = normalize_message({"role": role, "content": gen.message()})
                    data = encode_message(message)
                    size = len(data.encode("utf-8"))
                    path_bytes += size
                    copy.write_row((
                        "default", f"s{s}", message["id"], i + 1, parent, role, size, i + 1,
                        path_bytes, message["createdAt"], data, text_of(message),
                    ))  # fmt: skip
                    parent = message["id"]
                heads.append((f"s{s}", parent))
        now = now_us()
        with cur.copy(
            "COPY tl_sessions (app, id, metadata, created_at, updated_at, head_id, last_seq, "
            "message_count) FROM STDIN"
        ) as copy:
            for n, (session_id, head) in enumerate(heads):
                copy.write_row(("default", session_id, "{}", now, now + n, head, per, per))
        # fresh planner statistics, as autovacuum would give a live system
        conn.execute("ANALYZE tl_messages")
        conn.execute("ANALYZE tl_sessions")


def pg_history(dsn: str, n: int) -> float:
    """W2: seconds per ``get_history`` of an ``n``-message path (best of 15)."""
    with fresh_schema(dsn) as url, threadline.connect(url) as store:
        bulk_threadline(store, 1, n, TextGen(2))
        session = threadline.Session(store, session_id="s0")
        assert len(session.get_history()) == n
        return timed(session.get_history, repeat=15)


def pg_search(dsn: str, sessions: int, per_session: int) -> float:
    """W4: seconds per top-10 search across ``sessions * per_session`` messages."""
    with fresh_schema(dsn) as url, threadline.connect(url) as store:  # creates the tables
        bulk_copy(url, sessions, per_session, TextGen(4))
        manager = threadline.SessionManager(store)

        def run() -> int:
            return sum(len(manager.search(q, limit=10)) for q in QUERIES)

        assert run() > 0
        return timed(run, repeat=5) / len(QUERIES)


def main() -> None:
    dsn = os.environ.get("THREADLINE_BENCH_PG_DSN", "")
    if not dsn:
        raise SystemExit("set THREADLINE_BENCH_PG_DSN=postgresql://...")
    quick = "--quick" in sys.argv
    runs: list[tuple[str, Callable[[], float], str, float]] = [
        ("W1 append", lambda: pg_append(dsn, 300 if quick else 2000), "msg/s", 1),
        ("W2 history 1000", lambda: pg_history(dsn, 1000), "ms", 1000),
        ("W4 search", lambda: pg_search(dsn, 100 if quick else 1000, 100), "ms/query", 1000),
    ]
    for name, run, unit, scale in runs:
        start = time.perf_counter()
        value = run() * scale
        print(f"{name}: {value:,.2f} {unit}  (run took {time.perf_counter() - start:.1f}s)")


if __name__ == "__main__":
    main()
