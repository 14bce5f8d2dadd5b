"""ThreadlineSessionService against ADK's own session services, same workloads, same run.

Backends: threadline on a SQLite file, ADK ``SqliteSessionService`` (stdlib sqlite3, always
there with google-adk), ADK ``InMemorySessionService`` (no storage: the floor), and ADK
``DatabaseSessionService`` (``sqlite+aiosqlite``) when ``sqlalchemy[asyncio]`` and
``aiosqlite`` are installed. Median microseconds per call:

    create      create_session with a small state
    append      append_event: a text event with a one-key state delta
    get all     get_session of a session with N events
    get last10  get_session(num_recent_events=10) of the same session
    list        list_sessions of one user with S sessions

    python benchmarks/adk_adapter.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from threadline.integrations.adk import ThreadlineSessionService

APP = "bench"


async def median_us(fn: Callable[[], Awaitable[Any]], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def event(i: int) -> Event:
    text = f"Turn {i}: the traveller asks about hotels near the river, budget {i * 10} euros."
    content = types.Content(role="user", parts=[types.Part(text=text)])
    return Event(author="user", content=content, actions=EventActions(state_delta={"turn": i}))


async def measure(svc: Any, n_events: int, n_sessions: int) -> list[float]:
    counter = iter(range(10**9))
    create = await median_us(
        lambda: svc.create_session(app_name=APP, user_id="c", state={"k": next(counter)}), 50
    )
    session = await svc.create_session(app_name=APP, user_id="u", session_id="main")
    appended = iter(range(10**9))
    append = await median_us(lambda: svc.append_event(session, event(next(appended))), n_events)
    get_all = await median_us(
        lambda: svc.get_session(app_name=APP, user_id="u", session_id="main"), 20
    )
    recent = GetSessionConfig(num_recent_events=10)
    get_last = await median_us(
        lambda: svc.get_session(app_name=APP, user_id="u", session_id="main", config=recent), 50
    )
    for i in range(n_sessions):
        await svc.create_session(app_name=APP, user_id="lister", session_id=f"s{i}")
    listing = await median_us(lambda: svc.list_sessions(app_name=APP, user_id="lister"), 10)
    return [create, append, get_all, get_last, listing]


async def run(quick: bool) -> None:
    n_events, n_sessions = (50, 50) if quick else (300, 300)
    tmp = Path(tempfile.mkdtemp())
    backends: list[tuple[str, Callable[[], Any]]] = [
        (
            "threadline (SQLite file)",
            lambda: ThreadlineSessionService(f"sqlite:///{tmp / 'tl.db'}"),
        ),
        ("ADK SqliteSessionService", lambda: SqliteSessionService(str(tmp / "adk.db"))),
        ("ADK InMemorySessionService", InMemorySessionService),
    ]
    try:
        from google.adk.sessions.database_session_service import DatabaseSessionService

        url = f"sqlite+aiosqlite:///{tmp / 'adk_db.db'}"
        DatabaseSessionService(url)  # raises without sqlalchemy[asyncio] / aiosqlite
        backends.append(("ADK DatabaseSessionService", lambda: DatabaseSessionService(url)))
    except Exception:
        print("ADK DatabaseSessionService: not installed (sqlalchemy[asyncio], aiosqlite)")
    print(f"{n_events} events in one session, {n_sessions} sessions listed; median µs per call\n")
    header = ["backend", "create", "append", "get all", "get last10", "list"]
    print(f"{header[0]:<28}" + "".join(f"{h:>12}" for h in header[1:]))
    for name, make in backends:
        svc = make()
        row = await measure(svc, n_events, n_sessions)
        print(f"{name:<28}" + "".join(f"{value:>12.0f}" for value in row))
        if hasattr(svc, "close"):
            await svc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    asyncio.run(run(parser.parse_args().quick))


if __name__ == "__main__":
    main()
