"""Read paths that must stay cheap: history windows, hostile searches, appends beside reads.

Run:  python benchmarks/reads.py [--messages 100000]

Workloads, on one SQLite file holding one session of N messages (text from textgen):
  R1  get_history(limit=20): ms per call (reads about 20 rows, whatever N is)
  R2  hostile searches: "lorem " * 64, '"lorem ipsum" ' * 64, 64 distinct %/_ terms
      (ms per query; repeated terms collapse, substring scans are capped)
  R3  append latency on the same store object while another thread runs R2's queries in a
      loop (median and worst ms; reads use their own connections, so appends do not queue)
Floor: the plain sqlite3 read of the last 20 rows by seq (R1).
Runs the threadline found in ../src, so the same script measures any checkout.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from textgen import TextGen

import threadline
from threadline.messages import normalize_message

HOSTILE = {
    '"lorem " * 64': "lorem " * 64,
    "'\"lorem ipsum\" ' * 64": '"lorem ipsum" ' * 64,
    "64 %/_ terms": " ".join(f"a{i}%b_{i}" for i in range(64)),
}


def _ms(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    gen = TextGen()
    path = Path(tempfile.mkdtemp()) / "reads.db"
    store = threadline.connect(f"sqlite:///{path}")
    for start in range(0, args.messages, 1000):
        batch = [
            normalize_message({"role": "user", "content": gen.message()})
            for _ in range(min(1000, args.messages - start))
        ]
        store.append_messages("bench", "s", batch)
    session = threadline.Session.create(store).for_app("bench").for_session("s")

    rows: list[tuple[str, str]] = []
    r1 = _ms(lambda: session.get_history(limit=20), 20)
    raw = sqlite3.connect(path)
    floor = _ms(
        lambda: raw.execute(
            "SELECT data FROM tl_messages WHERE app = 'bench' AND session_id = 's' "
            "ORDER BY seq DESC LIMIT 20"
        ).fetchall(),
        20,
    )
    rows.append(
        ("R1 get_history(limit=20) (ms)", f"{r1:.2f}  (floor {floor:.2f}, {r1 / floor:.1f}x)")
    )
    for name, query in HOSTILE.items():
        rows.append(
            (
                f"R2 search {name} (ms)",
                f"{_ms(lambda q=query: store.search_messages('bench', q), 3):.1f}",
            )
        )

    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            for query in HOSTILE.values():
                store.search_messages("bench", query)

    thread = threading.Thread(target=hammer)
    thread.start()
    time.sleep(0.2)
    latencies = []
    for i in range(20):
        start = time.perf_counter()
        store.append_messages(
            "bench", "other", [normalize_message({"role": "user", "content": f"x{i}"})]
        )
        latencies.append((time.perf_counter() - start) * 1000)
        time.sleep(0.05)
    stop.set()
    thread.join()
    rows.append(
        ("R3 append beside hostile searches, median (ms)", f"{statistics.median(latencies):.2f}")
    )
    rows.append(("R3 append beside hostile searches, worst (ms)", f"{max(latencies):.2f}"))
    store.close()

    width = max(len(k) for k, _ in rows)
    print(f"{'workload':<{width}}  value   ({args.messages:,} messages, one session)")
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
