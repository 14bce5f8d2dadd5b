"""Framework adapters against the frameworks' own backends, in the same run.

Run:  python benchmarks/adapters.py            (1,000 items)
      python benchmarks/adapters.py --quick    (200 items)

OpenAI Agents SDK — ThreadlineSession vs the SDK's SQLiteSession, both on a SQLite file at the
same durability (WAL, synchronous=FULL: SQLiteSession's setting):
  add_items     one item per call (µs per item)
  get_items     the newest 50 items of the session (ms per call)
Ratios are threadline / SDK (lower is better; the bar is "no slower": <= 1.0 within noise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from textgen import TextGen

from threadline.integrations.openai_agents import ThreadlineSession


async def _agents_workload(session: Any, texts: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    for text in texts:
        await session.add_items([{"role": "user", "content": text}])
    per_add = (time.perf_counter() - start) / len(texts)
    reads = []
    for _ in range(30):
        start = time.perf_counter()
        items = await session.get_items(limit=50)
        reads.append(time.perf_counter() - start)
    assert len(items) == 50
    return per_add, statistics.median(reads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count = 200 if args.quick else 1000
    gen = TextGen(seed=5)
    texts = [gen.message() for _ in range(count)]
    from agents import SQLiteSession

    rows: list[tuple[str, float, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        ours_add, theirs_add, ours_get, theirs_get = [], [], [], []
        for round_ in range(3):  # interleaved rounds, fresh files each time
            tl = ThreadlineSession(
                f"s{round_}", f"sqlite:///{os.path.join(tmp, f'tl{round_}.db')}?synchronous=full"
            )
            sdk = SQLiteSession(f"s{round_}", os.path.join(tmp, f"sdk{round_}.db"))
            a, b = asyncio.run(_agents_workload(tl, texts))
            c, d = asyncio.run(_agents_workload(sdk, texts))
            tl.close()
            sdk.close()
            ours_add.append(a)
            ours_get.append(b)
            theirs_add.append(c)
            theirs_get.append(d)
        rows.append(
            (
                "add_items, 1 item/call",
                statistics.median(ours_add),
                statistics.median(theirs_add),
                "µs",
            )
        )
        rows.append(
            (
                "get_items(limit=50)",
                statistics.median(ours_get),
                statistics.median(theirs_get),
                "ms",
            )
        )
    print(f"OpenAI Agents SDK ({count} items, SQLite file, synchronous=FULL, 3 rounds)")
    print(f"{'workload':<26} {'ThreadlineSession':>18} {'SQLiteSession':>14}  ratio")
    for name, ours, theirs, unit in rows:
        scale = 1e6 if unit == "µs" else 1e3
        print(
            f"{name:<26} {ours * scale:>15.1f} {unit} {theirs * scale:>11.1f} {unit}  "
            f"{ours / theirs:5.2f}"
        )


if __name__ == "__main__":
    main()
