"""ThreadlineSessionService against ADK's own session services, same workloads, same run.

Backends: threadline on a SQLite file at ``synchronous=FULL`` (the durability of ADK's
SQLite services) and at its default (WAL, ``synchronous=NORMAL``); threadline on PostgreSQL
when ``THREADLINE_BENCH_PG_DSN`` is set (a fresh schema, dropped afterwards); ADK
``DatabaseSessionService`` (``sqlite+aiosqlite``: needs ``sqlalchemy[asyncio]`` and
``aiosqlite``, in the ``dev`` extra); ADK ``SqliteSessionService`` (stdlib sqlite3); ADK
``InMemorySessionService`` (no storage: the floor). Median microseconds per call, then each
ADK service's time divided by threadline-on-SQLite's, for each of the two threadline
settings (above 1: threadline is that many times faster). Every workload alternates its
calls between the backends, so load on the machine hits all of them alike:

    create      create_session with a small state
    append      append_event: a text event with a one-key state delta
    get last50  get_session(num_recent_events=50) of a session with N events
    get all     get_session of the same session (every event)
    list        list_sessions of one user with S sessions (default 10,000)

The listed user's sessions are created through each service's ``create_session`` for
threadline and the in-memory service; ADK's two SQLite services take 2-6 ms per create, so
their S rows are copies of one session made by the service, inserted with SQL into the
service's own table (the same rows the service would have written, apart from the id).

    python benchmarks/adk_adapter.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from threadline.integrations.adk import ThreadlineSessionService

APP = "bench"
LISTER = "lister"
COLUMNS = ["create", "append", "get last50", "get all", "list"]
FULL = "threadline SQLite sync=FULL"
DEFAULT = "threadline SQLite default"


async def interleaved(
    calls: dict[str, Callable[[], Awaitable[Any]]], rounds: int
) -> dict[str, float]:
    """Median µs per call of each backend, the backends' calls alternating round by round
    (background load on this machine then hits every backend alike)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            await call()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e6 for name, values in times.items()}


def event(i: int) -> Event:
    text = f"Turn {i}: the traveller asks about hotels near the river, budget {i * 10} euros."
    content = types.Content(role="user", parts=[types.Part(text=text)])
    return Event(author="user", content=content, actions=EventActions(state_delta={"turn": i}))


async def fill_lister(svc: Any, count: int, sqlite_file: Path | None) -> None:
    """``count`` sessions of LISTER: through the service, or (ADK's SQLite services) one made
    by the service and copied with SQL into its own ``sessions`` table."""
    if sqlite_file is None:
        for i in range(count):
            await svc.create_session(
                app_name=APP, user_id=LISTER, session_id=f"s{i:05d}", state={"k": i}
            )
        return
    await svc.create_session(app_name=APP, user_id=LISTER, session_id="s00000", state={"k": 0})
    db = sqlite3.connect(sqlite_file)
    with db:
        db.executemany(
            "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) "
            "SELECT app_name, user_id, ?, state, create_time, update_time FROM sessions "
            "WHERE app_name = ? AND user_id = ? AND id = 's00000'",
            [(f"s{i:05d}", APP, LISTER) for i in range(1, count)],
        )
    db.close()


async def measure(
    services: dict[str, Any], files: dict[str, Path | None], n_events: int, n_sessions: int
) -> dict[str, list[float]]:
    counters = {name: iter(range(10**9)) for name in services}

    def create(name: str) -> Callable[[], Awaitable[Any]]:
        svc, counter = services[name], counters[name]
        return lambda: svc.create_session(app_name=APP, user_id="c", state={"k": next(counter)})

    created = await interleaved({name: create(name) for name in services}, 30)
    mains = {
        name: await svc.create_session(app_name=APP, user_id="u", session_id="main")
        for name, svc in services.items()
    }

    def append(name: str) -> Callable[[], Awaitable[Any]]:
        svc, session, counter = services[name], mains[name], iter(range(10**9))
        return lambda: svc.append_event(session, event(next(counter)))

    appended = await interleaved({name: append(name) for name in services}, n_events)
    recent = GetSessionConfig(num_recent_events=50)

    def get(name: str, config: GetSessionConfig | None) -> Callable[[], Awaitable[Any]]:
        svc = services[name]
        return lambda: svc.get_session(app_name=APP, user_id="u", session_id="main", config=config)

    last50 = await interleaved({name: get(name, recent) for name in services}, 30)
    every = await interleaved({name: get(name, None) for name in services}, 10)
    for name, svc in services.items():
        await fill_lister(svc, n_sessions, files[name])
        listed = await svc.list_sessions(app_name=APP, user_id=LISTER)
        assert len(listed.sessions) == n_sessions, (name, len(listed.sessions))

    def lister(name: str) -> Callable[[], Awaitable[Any]]:
        svc = services[name]
        return lambda: svc.list_sessions(app_name=APP, user_id=LISTER)

    listing = await interleaved({name: lister(name) for name in services}, 7)
    return {
        name: [created[name], appended[name], last50[name], every[name], listing[name]]
        for name in services
    }


def pg_backend(dsn: str | None) -> tuple[str, Callable[[], Any], Callable[[], None]] | None:
    if not dsn:
        return None
    import psycopg
    from postgres_columns import _with_schema

    schema = f"tl_bench_adk_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')

    url = _with_schema(dsn, schema)
    return "threadline (PostgreSQL)", lambda: ThreadlineSessionService(url), drop


async def run(quick: bool, n_sessions: int | None) -> None:
    n_events = 60 if quick else 300
    n_sessions = n_sessions or (1000 if quick else 10_000)
    tmp = Path(tempfile.mkdtemp())
    tl_url = f"sqlite:///{tmp / 'tl.db'}?synchronous=full"
    tl_default = f"sqlite:///{tmp / 'tl_default.db'}"
    backends: list[tuple[str, Callable[[], Any], Path | None]] = [
        (FULL, lambda: ThreadlineSessionService(tl_url), None),
        (DEFAULT, lambda: ThreadlineSessionService(tl_default), None),
    ]
    pg = pg_backend(os.environ.get("THREADLINE_BENCH_PG_DSN"))
    if pg is not None:
        backends.append((pg[0], pg[1], None))
    try:
        from google.adk.sessions.database_session_service import DatabaseSessionService

        url = f"sqlite+aiosqlite:///{tmp / 'adk_db.db'}"
        DatabaseSessionService(url)  # raises without sqlalchemy[asyncio] / aiosqlite
        backends.append(
            ("ADK DatabaseSessionService", lambda: DatabaseSessionService(url), tmp / "adk_db.db")
        )
    except Exception:
        print("ADK DatabaseSessionService: not installed (sqlalchemy[asyncio], aiosqlite)")
    backends += [
        (
            "ADK SqliteSessionService",
            lambda: SqliteSessionService(str(tmp / "adk.db")),
            tmp / "adk.db",
        ),
        ("ADK InMemorySessionService", InMemorySessionService, None),
    ]
    print(
        f"{n_events} events in one session, {n_sessions:,} sessions of one user listed; "
        "median µs per call\n"
    )
    print(f"{'backend':<28}" + "".join(f"{h:>12}" for h in COLUMNS))
    services = {name: make() for name, make, _ in backends}
    files = {name: file for name, _, file in backends}
    try:
        results = await measure(services, files, n_events, n_sessions)
    finally:
        for svc in services.values():
            if hasattr(svc, "close"):
                await svc.close()
        if pg is not None:
            pg[2]()
    for name, row in results.items():
        print(f"{name:<28}" + "".join(f"{value:>12.0f}" for value in row))
    for base in (FULL, DEFAULT):
        ours = results[base]
        print(f"\nADK service time / {base} time (above 1: threadline is faster)")
        print(f"{'backend':<28}" + "".join(f"{h:>12}" for h in COLUMNS))
        for name, row in results.items():
            if name.startswith("ADK"):
                ratios = (f"{t / o:>11.1f}x" for t, o in zip(row, ours, strict=True))
                print(f"{name:<28}" + "".join(ratios))
    print("targets: DatabaseSessionService append >= 10x, list >= 20x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--sessions", type=int, default=None, help="sessions listed")
    args = parser.parse_args()
    asyncio.run(run(args.quick, args.sessions))


if __name__ == "__main__":
    main()
