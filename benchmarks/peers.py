"""Peer libraries on the same workloads, in the same run: OpenAI Agents SDK and Google ADK.

Run:  python benchmarks/peers.py            (full sizes, ~1-2 minutes)
      python benchmarks/peers.py --quick    (smaller sizes, for a smoke run)

Each peer is optional: when its package is missing the script says "not installed" and goes on.
Install them with ``pip install openai-agents google-adk "sqlalchemy[asyncio]" aiosqlite``.
Nothing here touches the network: both peers' session stores are local SQLite files.

Workloads (ratio = peer time / threadline time; above 1 means threadline is faster):
  Agents SDK ``SQLiteSession`` vs threadline ``Session`` on a SQLite file
    W1  append latency, one item per call (``add_items([item])`` vs ``append_message``)
    W2  read a 1000-item session (``get_items()`` vs ``get_history()``)
  ADK ``DatabaseSessionService`` (``sqlite+aiosqlite://``) vs threadline ``SessionManager``
    L   list one user's sessions out of N (``list_sessions`` returns them all: it has no limit;
        threadline returns the newest 50 and a cursor; walking every page is shown too)
    A   ``append_event`` vs ``append_message`` latency
    C   ``create_session`` latency (the rest of ADK's N sessions are inserted in one transaction
        through ADK's own ORM classes, because one call per session takes ~20 ms here)
Durability differs by default: both peers commit with SQLite's ``synchronous=FULL`` (an fsync
per commit) while threadline defaults to WAL + ``synchronous=NORMAL``, so write rows also show
threadline opened with ``?synchronous=full``. Latencies are medians of interleaved calls.

>>> main()  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from sessions import print_table, sid
from textgen import TextGen

import threadline

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # belt and braces: no exporter
Row = tuple[str, str, str, str, str]
HEADER = ("workload", "peer", "threadline", "ratio", "note")


async def clock(fn: Callable[[], object] | Callable[[], Awaitable[object]]) -> float:
    """Seconds one call of ``fn`` takes (awaited when it returns an awaitable)."""
    start = time.perf_counter()
    result = fn()
    if asyncio.iscoroutine(result):
        await result
    return time.perf_counter() - start


async def medians(fns: list[Callable[[], Any]], rounds: int) -> list[float]:
    """Median seconds of each function, called round-robin so load hits all alike."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, samples, strict=True):
            out.append(await clock(fn))
    return [statistics.median(s) for s in samples]


def items(n: int, seed: int) -> list[Any]:
    """Chat items as plain dicts (``Any``: each API types them as its own TypedDict)."""
    gen = TextGen(seed)
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": gen.message()} for i in range(n)
    ]


def tl_session(path: str, session_id: str) -> threadline.Session:
    return threadline.Session(threadline.connect(path), session_id=session_id)


def full_url(path: Path) -> str:
    return f"sqlite:///{path}?synchronous=full"  # path is absolute: sqlite:////tmp/...


# --------------------------------------------------------------------------- Agents SDK


async def agents_rows(tmp: Path, n_append: int, n_read: int) -> list[Row]:
    # Optional peers, imported lazily (mypy may run without them installed).
    from agents import SQLiteSession  # type: ignore[import-not-found, unused-ignore]

    rows: list[Row] = []
    peer = SQLiteSession("w1", str(tmp / "agents-w1.db"))
    tl = tl_session(str(tmp / "tl-w1.db"), "w1")
    tl_full = tl_session(full_url(tmp / "tl-w1-full.db"), "w1")
    it = iter(items(n_append, 1))
    feeds = [iter(items(n_append, 1)), iter(items(n_append, 1))]
    p, t, f = await medians(
        [
            lambda: peer.add_items([next(it)]),
            lambda: tl.append_message(next(feeds[0])),
            lambda: tl_full.append_message(next(feeds[1])),
        ],
        n_append,
    )
    rows.append(
        (
            "W1 append 1 item/call (µs)",
            f"{p * 1e6:.0f}",
            f"{t * 1e6:.0f}",
            f"{p / t:.2f}x",
            "tl WAL+NORMAL (default)",
        )
    )
    rows.append(
        (
            "   same, tl ?synchronous=full (µs)",
            f"{p * 1e6:.0f}",
            f"{f * 1e6:.0f}",
            f"{p / f:.2f}x",
            "both fsync every commit",
        )
    )
    batch = items(n_read, 2)
    reader = SQLiteSession("w2", str(tmp / "agents-w2.db"))
    await reader.add_items(batch)
    tl_reader = tl_session(str(tmp / "tl-w2.db"), "w2")
    tl_reader.append_messages(batch)
    assert len(await reader.get_items()) == n_read == len(tl_reader.get_history())
    p, t = await medians([reader.get_items, tl_reader.get_history], 30)
    rows.append(
        (
            f"W2 read {n_read}-item session (ms)",
            f"{p * 1e3:.2f}",
            f"{t * 1e3:.2f}",
            f"{p / t:.2f}x",
            "peer: flat list, no tree",
        )
    )
    for s in (peer, reader):
        s.close()
    return rows


# --------------------------------------------------------------------------- Google ADK

APP, USER = "bench", "u0"


async def adk_setup(svc: Any, public: int, total: int) -> float:
    """Create ``public`` sessions through the API (timed, seconds each), then bulk-fill to total."""
    start = time.perf_counter()
    for i in range(public):
        await svc.create_session(app_name=APP, user_id=USER, session_id=sid(i))
    per_call = (time.perf_counter() - start) / public
    storage_session = svc._get_schema_classes().StorageSession  # the class create_session uses
    base = datetime.now(UTC).replace(tzinfo=None)  # ADK stores naive UTC on SQLite
    async with svc.database_session_factory() as db:
        db.add_all(
            [
                storage_session(
                    app_name=APP,
                    user_id=USER,
                    id=sid(i),
                    state={},
                    create_time=base + timedelta(microseconds=i),
                    update_time=base + timedelta(microseconds=i),
                )
                for i in range(public, total)
            ]
        )
        await db.commit()
    return per_call


def tl_registry(path: str, total: int) -> tuple[threadline.SessionManager, float]:
    manager = threadline.SessionManager(threadline.connect(path), app_name=APP)
    start = time.perf_counter()
    for i in range(total):
        manager.store.create_session(APP, sid(i), user_id=USER)
    return manager, (time.perf_counter() - start) / total


def walk_all(manager: threadline.SessionManager) -> int:
    count, cursor = 0, None
    while True:
        page = manager.list(user_id=USER, limit=50, cursor=cursor)
        count += len(page.sessions)
        cursor = page.next_cursor
        if cursor is None:
            return count


async def adk_rows(tmp: Path, total: int, n_append: int) -> list[Row]:
    from google.adk.events import Event  # type: ignore[import-not-found, unused-ignore]
    from google.adk.sessions import DatabaseSessionService  # type: ignore[import-not-found, unused-ignore]
    from google.genai import types  # type: ignore[import-not-found, unused-ignore]

    svc = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp / 'adk.db'}")
    adk_create = await adk_setup(svc, 100, total)
    manager, tl_create = tl_registry(str(tmp / "tl-registry.db"), total)
    listed = await svc.list_sessions(app_name=APP, user_id=USER)
    assert len(listed.sessions) == total == walk_all(manager)
    p, t, w = await medians(
        [
            lambda: svc.list_sessions(app_name=APP, user_id=USER),
            lambda: manager.list(user_id=USER, limit=50),
            lambda: walk_all(manager),
        ],
        5,
    )
    rows: list[Row] = [
        (
            f"L list one user's {total:,} sessions (ms)",
            f"{p * 1e3:.1f}",
            f"{t * 1e3:.2f}",
            f"{p / t:.0f}x",
            "tl: newest 50 + cursor",
        ),
        (
            f"   tl walking all {total:,} by pages (ms)",
            f"{p * 1e3:.1f}",
            f"{w * 1e3:.1f}",
            f"{p / w:.1f}x",
            "both return every session",
        ),
    ]
    session = await svc.get_session(app_name=APP, user_id=USER, session_id=sid(0))
    assert session is not None
    texts = iter(items(n_append, 3))
    feeds = [iter(items(n_append, 3)), iter(items(n_append, 3))]
    tl = manager.get_session(sid(0))
    tl_full = tl_session(full_url(tmp / "tl-append-full.db"), sid(0))

    def event() -> Any:
        part = types.Part(text=next(texts)["content"])
        return Event(
            author="user", invocation_id="bench", content=types.Content(role="user", parts=[part])
        )

    p, t, f = await medians(
        [
            lambda: svc.append_event(session, event()),
            lambda: tl.append_message(next(feeds[0])),
            lambda: tl_full.append_message(next(feeds[1])),
        ],
        n_append,
    )
    rows += [
        (
            "A append_event vs append_message (µs)",
            f"{p * 1e6:.0f}",
            f"{t * 1e6:.0f}",
            f"{p / t:.2f}x",
            "tl WAL+NORMAL (default)",
        ),
        (
            "   same, tl ?synchronous=full (µs)",
            f"{p * 1e6:.0f}",
            f"{f * 1e6:.0f}",
            f"{p / f:.2f}x",
            "both fsync every commit",
        ),
        (
            "C create_session (µs)",
            f"{adk_create * 1e6:.0f}",
            f"{tl_create * 1e6:.0f}",
            f"{adk_create / tl_create:.2f}x",
            "tl WAL+NORMAL (default)",
        ),
    ]
    await svc.close()
    return rows


# --------------------------------------------------------------------------- main


async def section(name: str, run: Callable[[], Awaitable[list[Row]]]) -> None:
    print(f"\n{name}")
    try:
        rows = await run()
    except ImportError as exc:
        print(f"  not installed ({exc.name or exc}); skipped")
        return
    except Exception as exc:  # a peer's API change must not hide the other peer's numbers
        print(f"  failed: {type(exc).__name__}: {exc}")
        return
    print_table(rows, HEADER)


async def run_all(quick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="tl-bench-peers-") as tmpdir:
        tmp = Path(tmpdir)
        await section(
            "OpenAI Agents SDK — agents.SQLiteSession",
            lambda: agents_rows(tmp, 200 if quick else 1000, 1000),
        )
        await section(
            "Google ADK — google.adk.sessions.DatabaseSessionService (sqlite+aiosqlite)",
            lambda: adk_rows(tmp, 2_000 if quick else 10_000, 30 if quick else 100),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    args = parser.parse_args()
    asyncio.run(run_all(args.quick))


if __name__ == "__main__":
    main()
