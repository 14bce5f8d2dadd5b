"""Read replicas (integrations.md §20): what routing reads to a streaming standby costs and buys.

Run:  python benchmarks/replicas.py PRIMARY_DSN REPLICA_DSN          (REPLICA: a hot standby
      python benchmarks/replicas.py PRIMARY_DSN REPLICA_DSN --quick   of PRIMARY)

One schema (``tl_bench_replicas_*``, dropped at the end) holds ``--sessions`` sessions of
``--messages`` messages of varied text (``textgen``). The same workloads then run through two
stores, interleaved round by round: ``threadline.connect(primary)`` (0 replicas) and
``threadline.connect(primary, replicas=[replica])`` (1 replica):

* **read throughput**: ``--threads`` threads each looping over a listing page, a search and
  one session's path (``get_path``), for ``--seconds`` per round; reads/s;
* **search latency**: one thread, one search at a time; p50/p99 in ms;
* **read-your-writes**: one thread alternating an append and a listing of the same store:
  the append pays the position query (one round trip), the listing the replica's replay check
  (one round trip on the replica) and, if the standby has not replayed the append yet, the
  primary; per pair, in ms, and the share of those listings the replica served.

Both servers run on this one host, sharing its cores: a replica here takes CPU from the
primary instead of adding a machine's worth, so the throughput columns measure routing
overhead, not the gain a replica on its own machine gives (not measurable on one host).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
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
from threadline.messages import normalize_message

APP = "bench"
WORDS = ("river", "garden", "budget", "travel", "python", "weather")


def with_schema(dsn: str, schema: str) -> str:
    options = quote(f"-csearch_path={schema},public", safe="")
    return f"{dsn}{'&' if '?' in dsn else '?'}options={options}"


def lsn(conn: Any, sql: str) -> int:
    row = conn.execute(f"SELECT ({sql} - '0/0'::pg_lsn)::bigint").fetchone()
    return int(row[0]) if row and row[0] is not None else -1


def wait_caught_up(primary: str, replica: str) -> None:
    with psycopg.connect(primary, autocommit=True) as conn:
        target = lsn(conn, "pg_current_wal_insert_lsn()")
    with psycopg.connect(replica, autocommit=True) as conn:
        while lsn(conn, "pg_last_wal_replay_lsn()") < target:
            time.sleep(0.05)


def populate(store: Any, sessions: int, messages: int) -> None:
    text = TextGen()
    for s in range(sessions):
        batch = [
            normalize_message({"role": "user", "content": text.message()}) for _ in range(messages)
        ]
        store.append_messages(APP, f"s{s}", batch)


def throughput(store: Any, threads: int, seconds: float, sessions: int) -> float:
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def loop(index: int) -> None:
        n = index
        while time.monotonic() < stop:
            store.list_sessions(APP, limit=20)
            store.search_messages(APP, WORDS[n % len(WORDS)], limit=10)
            store.get_path(APP, f"s{n % sessions}")
            counts[index] += 3
            n += threads

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts) / seconds


def timed(calls: int, fn: Callable[[int], None]) -> list[float]:
    times = []
    for i in range(calls):
        started = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - started) * 1000)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("primary")
    parser.add_argument("replica")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.messages, args.seconds, args.rounds = 40, 10, 1.0, 1
    schema = f"tl_bench_replicas_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.primary, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    primary, replica = with_schema(args.primary, schema), with_schema(args.replica, schema)
    try:
        with threadline.connect(primary) as writer:
            populate(writer, args.sessions, args.messages)
        wait_caught_up(args.primary, args.replica)
        stores = {
            "0 replicas": threadline.connect(primary),
            "1 replica": threadline.connect(primary, replicas=[replica]),
        }
        rate: dict[str, list[float]] = {name: [] for name in stores}
        search: dict[str, list[float]] = {name: [] for name in stores}
        pairs: dict[str, list[float]] = {name: [] for name in stores}
        appends: dict[str, list[float]] = {name: [] for name in stores}
        own_reads_on_replica = 0
        for r in range(args.rounds):
            order = list(stores) if r % 2 == 0 else list(reversed(stores))
            for name in order:
                store = stores[name]
                rate[name].append(throughput(store, args.threads, args.seconds, args.sessions))
                search[name] += timed(
                    200, lambda i, s=store: s.search_messages(APP, WORDS[i % len(WORDS)])
                )

                def pair(i: int, s: Any = store, n: str = name, r: int = r) -> None:
                    message = normalize_message({"role": "user", "content": f"rw {i}"})
                    started = time.perf_counter()
                    s.append_messages(APP, f"rw-{n}-{r}", [message])
                    appends[n].append((time.perf_counter() - started) * 1000)
                    s.list_sessions(APP, limit=5)

                counter = getattr(store, "_replicas", None)
                before = counter.replicas[0].reads if counter else 0
                pairs[name] += timed(200, pair)
                if counter:
                    own_reads_on_replica += counter.replicas[0].reads - before
        served = stores["1 replica"]._replicas.replicas[0].reads  # type: ignore[attr-defined]
        for store in stores.values():
            store.close()
    finally:
        with psycopg.connect(args.primary, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    print(
        f"Read replicas: {args.sessions} sessions x {args.messages} messages, "
        f"{args.rounds} interleaved rounds, {args.threads} reader threads, one host\n"
    )
    print("| store | reads/s (list+search+path) | search p50 ms | search p99 ms "
          "| append+own read ms (p50) | append alone ms (p50) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name in stores:
        print(
            f"| {name} | {statistics.median(rate[name]):,.0f} "
            f"| {pct(search[name], 0.5):.2f} | {pct(search[name], 0.99):.2f} "
            f"| {pct(pairs[name], 0.5):.2f} | {pct(appends[name], 0.5):.2f} |"
        )
    print(f"\nreads served by the replica: {served:,}; listings right after the store's own")
    share = own_reads_on_replica / (200 * args.rounds)
    print(f"append served by the replica (it had replayed the append already): {share:.0%}")
    print("Both servers share this host's cores: throughput gains of a replica on its own "
          "machine are not measurable here.")  # fmt: skip


if __name__ == "__main__":
    main()
