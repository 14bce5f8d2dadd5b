"""Event-loop lag while threadline.aio works: does storage ever run on the loop?

Run:  python benchmarks/aio_loop_lag.py                    (SQLite file)
      THREADLINE_BENCH_PG_DSN=postgresql://... python benchmarks/aio_loop_lag.py

A ticker coroutine sleeps 1 ms in a loop and records how late it wakes up, while 200 coroutines
append to 20 sessions and read their histories (AsyncSessionManager). The same ticker runs
alone first (the floor: what the machine's scheduler costs), and the same work is run once more
with the sync SessionManager called straight from coroutines (what lag looks like when storage
does run on the loop: the ceiling). Lag is reported as p50 / p99 / max; a store call on the loop
shows up as lag of its duration.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from textgen import TextGen

from threadline import SessionManager
from threadline.aio import AsyncSessionManager


async def _ticker(stop: asyncio.Event, lags: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - start - 0.001)


async def _work(url: str, texts: list[str]) -> None:
    async with AsyncSessionManager(url) as manager:

        async def one(i: int) -> None:
            sid = f"s{i % 20}"
            await manager.append(sid, {"role": "user", "content": texts[i]})
            session = await manager.get_session(sid)
            await session.get_history()
            await session.search("deployment")

        await asyncio.gather(*(one(i) for i in range(len(texts))))


async def _work_on_loop(url: str, texts: list[str]) -> None:
    """The same work, but every store call made on the loop (the sync manager, not awaited)."""
    with SessionManager(url) as manager:

        async def one(i: int) -> None:
            sid = f"s{i % 20}"
            manager.append(sid, {"role": "user", "content": texts[i]})
            await asyncio.sleep(0)
            session = manager.get_session(sid)
            session.get_history()
            await asyncio.sleep(0)
            session.search("deployment")

        await asyncio.gather(*(one(i) for i in range(len(texts))))


async def _measure(url: str | None, texts: list[str], *, on_loop: bool = False) -> list[float]:
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(stop, lags))
    await asyncio.sleep(0.01)  # the ticker is running before the work starts
    if url is None:
        await asyncio.sleep(1.0)
    elif on_loop:
        await _work_on_loop(url, texts)
    else:
        await _work(url, texts)
    stop.set()
    await ticker
    return lags


def _row(name: str, lags: list[float]) -> str:
    ms = sorted(lag * 1000 for lag in lags)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"{name:<22} {statistics.median(ms):7.2f} {p99:7.2f} {ms[-1]:7.2f}   ({len(ms)} ticks)"


def main() -> None:
    texts = [TextGen(seed=9).message() for _ in range(200)]
    print(f"{'loop lag (ms)':<22} {'p50':>7} {'p99':>7} {'max':>7}")
    print(_row("idle loop (floor)", asyncio.run(_measure(None, texts))))
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{os.path.join(tmp, 'lag.db')}"
        print(_row("200 coroutines, SQLite", asyncio.run(_measure(url, texts))))
        on_loop = f"sqlite:///{os.path.join(tmp, 'on_loop.db')}"
        print(_row("  same, sync on loop", asyncio.run(_measure(on_loop, texts, on_loop=True))))
    pg = os.environ.get("THREADLINE_BENCH_PG_DSN")
    if pg:
        print(_row("200 coroutines, PG", asyncio.run(_measure(pg, texts))))
        print(_row("  same, sync on loop", asyncio.run(_measure(pg, texts, on_loop=True))))


if __name__ == "__main__":
    main()
