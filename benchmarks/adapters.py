"""OpenAI Agents SDK: ThreadlineSession against the SDK's own session backends, same run.

Run:  python benchmarks/adapters.py            (1,000 items)
      python benchmarks/adapters.py --quick    (200 items)

Backends, each on a SQLite file at ``synchronous=FULL`` (the SDK's SQLite setting; threadline
is given ``?synchronous=full``, its default being NORMAL):

  ThreadlineSession        threadline.integrations.openai_agents (the row every ratio divides)
  SQLiteSession            agents.SQLiteSession (stdlib sqlite3, WAL)
  AsyncSQLiteSession       agents.extensions.memory (aiosqlite), if importable
  SQLAlchemySession        agents.extensions.memory (sqlite+aiosqlite), if SQLAlchemy is there

With ``THREADLINE_BENCH_PG_DSN`` set, ThreadlineSession on PostgreSQL and SQLAlchemySession on
the same server (``postgresql+psycopg``, a fresh schema each, dropped afterwards) are added.

Workloads (median of calls that alternate between the backends, so load hits all alike; the
order rotates each round, so no backend always runs right after the same other one):
  add_items     one item per call (µs)
  get_items 50  the newest 50 items of the session (µs), once converted in this process
  get_items 50, cold  the same read by a fresh ThreadlineSession object (nothing converted yet)
The SDK has no call listing a user's sessions, so there is no list column here (see
benchmarks/adk_adapter.py for ADK). Ratio: backend time / ThreadlineSession time (above 1:
threadline is faster; the bar is "no slower than SQLiteSession": ratio >= 1 within noise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from textgen import TextGen

from threadline.integrations.openai_agents import ThreadlineSession

TL = "ThreadlineSession"


def sdk_backends(tmp: str, sid: str) -> list[tuple[str, Any]]:
    from agents import SQLiteSession

    out: list[tuple[str, Any]] = [
        ("SQLiteSession", SQLiteSession(sid, os.path.join(tmp, "sdk.db")))
    ]
    try:
        from agents.extensions.memory import AsyncSQLiteSession

        out.append(("AsyncSQLiteSession", AsyncSQLiteSession(sid, os.path.join(tmp, "as.db"))))
    except Exception as exc:  # optional dependency missing
        print(f"AsyncSQLiteSession: not available ({exc.__class__.__name__})")
    try:
        from agents.extensions.memory import SQLAlchemySession

        url = f"sqlite+aiosqlite:///{os.path.join(tmp, 'sa.db')}"
        out.append(
            ("SQLAlchemySession", SQLAlchemySession.from_url(sid, url=url, create_tables=True))
        )
    except Exception as exc:
        print(f"SQLAlchemySession: not available ({exc.__class__.__name__})")
    return out


def pg_backends(dsn: str, sid: str) -> tuple[list[tuple[str, Any]], Callable[[], None]]:
    import psycopg
    from agents.extensions.memory import SQLAlchemySession
    from postgres_columns import _with_schema

    schemas = [f"tl_bench_oa_{os.getpid()}", f"sa_bench_oa_{os.getpid()}"]
    with psycopg.connect(dsn, autocommit=True) as admin:
        for schema in schemas:
            admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    sa_url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    sa = SQLAlchemySession.from_url(
        sid,
        url=sa_url,
        create_tables=True,
        engine_kwargs={"connect_args": {"options": f"-csearch_path={schemas[1]}"}},
    )
    backends = [
        (f"{TL} (PostgreSQL)", ThreadlineSession(sid, _with_schema(dsn, schemas[0]))),
        ("SQLAlchemySession (PostgreSQL)", sa),
    ]

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for schema in schemas:
                admin.execute(f'DROP SCHEMA "{schema}" CASCADE')

    return backends, drop


async def timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return time.perf_counter() - start


def rotated(backends: list[tuple[str, Any]], i: int) -> list[tuple[str, Any]]:
    """The backends in round ``i``'s order: each takes every position equally often (in a
    fixed order one backend always follows the same one, e.g. SQLAlchemySession's
    rollback-journal commit, whose file-system journal work the next fsync may pay)."""
    k = i % len(backends)
    return backends[k:] + backends[:k]


async def workload(backends: list[tuple[str, Any]], texts: list[str]) -> dict[str, list[float]]:
    adds: dict[str, list[float]] = {name: [] for name, _ in backends}
    for i, text in enumerate(texts):
        for name, session in rotated(backends, i):
            adds[name].append(await timed(session.add_items([{"role": "user", "content": text}])))
    reads: dict[str, list[float]] = {name: [] for name, _ in backends}
    for i in range(40):
        for name, session in rotated(backends, i):
            reads[name].append(await timed(session.get_items(limit=50)))
    got = {name: len(await session.get_items(limit=50)) for name, session in backends}
    assert set(got.values()) == {50}, got
    return {
        name: [statistics.median(adds[name]) * 1e6, statistics.median(reads[name]) * 1e6]
        for name, _ in backends
    }


async def cold_reads(make: Callable[[], ThreadlineSession], rounds: int = 15) -> float:
    times = []
    for _ in range(rounds):
        session = make()
        await session.add_items([])  # opened, nothing read
        times.append(await timed(session.get_items(limit=50)))
        session.close()
    return statistics.median(times) * 1e6


async def close(session: Any) -> None:
    closer = getattr(session, "close", None)
    result = closer() if closer is not None else None
    if asyncio.iscoroutine(result):
        await result


async def run(count: int) -> None:
    gen = TextGen(seed=5)
    texts = [gen.message() for _ in range(count)]
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{os.path.join(tmp, 'tl.db')}?synchronous=full"
        backends = [(TL, ThreadlineSession("s", url)), *sdk_backends(tmp, "s")]
        drop = None
        dsn = os.environ.get("THREADLINE_BENCH_PG_DSN")
        if dsn:
            extra, drop = pg_backends(dsn, "s")
            backends += extra
        try:
            results = await workload(backends, texts)
            cold = await cold_reads(lambda: ThreadlineSession("s", url))
        finally:
            for _, session in backends:
                await close(session)
            if drop is not None:
                drop()
    print(f"OpenAI Agents SDK: {count} items of one session, SQLite at synchronous=FULL")
    print(
        f"{'backend':<32}{'add_items µs':>14}{'get_items 50 µs':>17}"
        f"{'add ratio':>11}{'get ratio':>11}"
    )
    ours = results[TL]
    for name, (add, get) in results.items():
        base = results[f"{TL} (PostgreSQL)"] if "PostgreSQL" in name else ours
        print(f"{name:<32}{add:>14.0f}{get:>17.0f}{add / base[0]:>10.2f}x{get / base[1]:>10.2f}x")
    print(f"{TL}: get_items 50 by a fresh object (cold, converts every item): {cold:.0f} µs")
    print(
        "ratio = backend / ThreadlineSession on the same database kind (above 1: threadline faster)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(200 if args.quick else 1000))


if __name__ == "__main__":
    main()
