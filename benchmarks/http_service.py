"""The HTTP service under load: 50 concurrent clients appending and reading on PostgreSQL with
4 uvicorn workers, beside the same workload in-process (AsyncSessionManager on the same
database) to show what the service costs.

Run:  THREADLINE_BENCH_PG_DSN=postgresql://... python benchmarks/http_service.py
      [--clients 50] [--rounds 40] [--workers 4] [--repeat 3]

Each client owns a session and, per round, appends a message (POST .../messages) then reads
the last 20 messages of its history (GET .../messages?limit=20). Afterwards every session is
checked: exactly ``rounds`` messages, in order — a lost or duplicated message fails the run,
and so does any error (each printed, with the server's log). ``--repeat N`` runs N pairs, the
side that goes first alternating, and prints the range of the throughput ratio.
Latencies are per call as the client sees them (the client runs in this process: on a small
machine it shares the cores with the server, so absolute numbers are pessimistic).

``--latency``: one client, one request at a time (append, then read the last 20), against one
worker, on a SQLite file and (with the DSN) on PostgreSQL: the service with its per-worker API
key cache off (``THREADLINE_KEY_CACHE_TTL=0``: a store lookup per request) and on (the
default), beside the key lookup alone (``store.find_api_key``) and the same calls in-process,
so the share of a request the key lookup costs is measured in the same run.

Run:  python benchmarks/http_service.py --latency [--rounds 400]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import httpx
from postgres_columns import fresh_schema
from textgen import TextGen

from threadline.aio import AsyncSessionManager
from threadline.server import create_key

Timings = dict[str, list[float]]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(
    url: str, workers: int, env_extra: dict[str, str] | None = None, log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    code = (
        "import sys; from threadline.server import serve; "
        f"serve(sys.argv[1], port={port}, workers={workers})"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    env.update(env_extra or {})
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-c", code, url], env=env, stdout=out, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


async def _http_run(
    base: str, key: str, clients: int, rounds: int, texts: list[str]
) -> tuple[Timings, int, int, float]:
    timings: Timings = {"append": [], "read": []}
    errors = 0
    failures: list[str] = []  # the first few, printed: an error count alone explains nothing

    async def call(method: str, path: str, expected: int, **kwargs: Any) -> float:
        nonlocal errors
        start = time.perf_counter()
        try:
            answer = await http.request(method, path, **kwargs)
            if answer.status_code != expected:
                raise RuntimeError(f"{answer.status_code} {answer.text[:200]}")
        except (httpx.HTTPError, RuntimeError) as exc:
            errors += 1
            if len(failures) < 5:
                failures.append(f"{method} {path}: {type(exc).__name__}: {exc}")
        return time.perf_counter() - start

    # An idle connection is dropped by the client after 1 s, well before uvicorn closes it
    # (5 s): on a loaded machine a connection the server had just closed was reused, and the
    # request failed with ReadError (the usual rule: client keep-alive < server keep-alive).
    limits = httpx.Limits(
        max_connections=clients, max_keepalive_connections=clients, keepalive_expiry=1.0
    )
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as http:

        async def client(c: int) -> None:
            for r in range(rounds):
                body = {
                    "id": f"m{r:04d}",
                    "role": "user",
                    "content": texts[(c * rounds + r) % len(texts)],
                }
                path = f"/v1/sessions/c{c}/messages"
                timings["append"].append(await call("POST", path, 201, json=body))
                timings["read"].append(await call("GET", path, 200, params={"limit": 20}))

        start = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        elapsed = time.perf_counter() - start
        lost = 0
        for c in range(clients):
            answer = await http.get(f"/v1/sessions/c{c}/messages")
            ids = [m["id"] for m in answer.json()["messages"]]
            lost += ids != [f"m{r:04d}" for r in range(rounds)]
    for failure in failures:
        print(f"  error: {failure}")
    return timings, errors, lost, elapsed


async def _local_run(
    url: str, clients: int, rounds: int, texts: list[str]
) -> tuple[Timings, int, int, float]:
    timings: Timings = {"append": [], "read": []}
    errors = 0
    async with AsyncSessionManager(url, app_name="bench") as manager:

        async def client(c: int) -> None:
            nonlocal errors
            session = await manager.get_session(f"c{c}")
            for r in range(rounds):
                body = {
                    "id": f"m{r:04d}",
                    "role": "user",
                    "content": texts[(c * rounds + r) % len(texts)],
                }
                start = time.perf_counter()
                try:
                    await session.append_message(body)
                except Exception:
                    errors += 1
                timings["append"].append(time.perf_counter() - start)
                start = time.perf_counter()
                await session.get_history(limit=20)
                timings["read"].append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        elapsed = time.perf_counter() - start
        lost = 0
        for c in range(clients):
            ids = [m["id"] for m in await manager.get_history(f"c{c}")]
            lost += ids != [f"m{r:04d}" for r in range(rounds)]
    return timings, errors, lost, elapsed


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _row(name: str, timings: Timings, errors: int, lost: int, elapsed: float) -> tuple[str, float]:
    calls = len(timings["append"]) + len(timings["read"])
    rate = calls / elapsed
    a, r = timings["append"], timings["read"]
    line = (
        f"{name:<28} {calls:>6} {errors:>6} {lost:>5} "
        f"{1000 * statistics.median(a):>8.2f} {_ms(a, 0.99):>8.2f} "
        f"{1000 * statistics.median(r):>8.2f} {_ms(r, 0.99):>8.2f} {rate:>9.0f}"
    )
    return line, rate


# -- --latency: one client, one request at a time --------------------------------------------
Op = Callable[[int], None]


def _timed_rounds(ops: dict[str, Op], rounds: int) -> dict[str, list[float]]:
    """Each op once per round, the order rotating every round (background load on a shared
    machine then hits every op alike); 20 untimed warm-up rounds first."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    names = list(ops)
    for r in range(-20, rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            ops[name](r)
            took = time.perf_counter() - start
            if r >= 0:
                times[name].append(took)
    return times


def _http_ops(http: httpx.Client, sid: str, texts: list[str]) -> tuple[Op, Op]:
    http.post("/v1/sessions", json={"session_id": sid})

    def append(r: int) -> None:
        body = {"role": "user", "content": texts[r % len(texts)]}
        answer = http.post(f"/v1/sessions/{sid}/messages", json=body)
        if answer.status_code != 201:
            raise SystemExit(f"append failed: {answer.status_code} {answer.text}")

    def read(r: int) -> None:
        answer = http.get(f"/v1/sessions/{sid}/messages", params={"limit": 20})
        if answer.status_code != 200:
            raise SystemExit(f"read failed: {answer.status_code} {answer.text}")

    return append, read


def _latency(url: str, label: str, rounds: int, texts: list[str]) -> None:
    import contextlib

    import threadline
    from threadline.server._keys import hash_key

    key = create_key(url, "bench")
    sides = {"HTTP, key cache off": {"THREADLINE_KEY_CACHE_TTL": "0"}, "HTTP, key cache on": {}}
    with contextlib.ExitStack() as stack:
        ops: dict[str, Op] = {}
        for n, (name, env) in enumerate(sides.items()):
            proc, base = _start(url, 1, env)
            stack.callback(proc.wait, 30)
            stack.callback(proc.terminate)
            http = stack.enter_context(
                httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            )
            ops[f"{name}|append"], ops[f"{name}|read"] = _http_ops(http, f"lat{n}", texts)
        store = stack.enter_context(threadline.connect(url))
        session = threadline.SessionManager(store, "bench-local").get_session("local")
        digest = hash_key(key)

        def local_append(r: int) -> None:
            session.append_message({"role": "user", "content": texts[r % len(texts)]})

        def local_read(r: int) -> None:
            session.get_history(limit=20)

        def lookup(r: int) -> None:
            if store.find_api_key(digest) is None:
                raise SystemExit("the key was not found")

        ops["in-process (SessionManager)|append"] = local_append
        ops["in-process (SessionManager)|read"] = local_read
        ops["key lookup alone|find_api_key"] = lookup
        times = _timed_rounds(ops, rounds)
    p50 = {name: statistics.median(values) for name, values in times.items()}
    print(f"{label}: one client, one request at a time, {rounds} rounds (latencies in ms)")
    print(f"{'':<30} {'app p50':>8} {'app p99':>8} {'read p50':>8} {'read p99':>8}")
    for name in [*sides, "in-process (SessionManager)"]:
        a, r = times[f"{name}|append"], times[f"{name}|read"]
        print(
            f"{name:<30} {1000 * p50[f'{name}|append']:>8.3f} {_ms(a, 0.99):>8.3f} "
            f"{1000 * p50[f'{name}|read']:>8.3f} {_ms(r, 0.99):>8.3f}"
        )
    lookup = p50["key lookup alone|find_api_key"]
    print(f"{'key lookup alone (find_api_key)':<30} {1000 * lookup:>8.3f}")
    off, on = "HTTP, key cache off", "HTTP, key cache on"
    print(
        f"key lookup / request with the cache off: append {lookup / p50[f'{off}|append']:.0%},"
        f" read {lookup / p50[f'{off}|read']:.0%}; cache on / off: append "
        f"{p50[f'{on}|append'] / p50[f'{off}|append']:.2f}x, read "
        f"{p50[f'{on}|read'] / p50[f'{off}|read']:.2f}x\n"
    )


def latency_main(rounds: int, dsn: str) -> None:
    """The ``--latency`` mode."""
    import tempfile

    gen = TextGen(seed=13)
    texts = [gen.message() for _ in range(500)]
    with tempfile.TemporaryDirectory() as tmp:
        _latency(f"sqlite:///{Path(tmp, 'lat.db').as_posix()}", "SQLite file", rounds, texts)
    if dsn:
        with fresh_schema(dsn) as url:
            _latency(url, "PostgreSQL", rounds, texts)
    else:
        print("(set THREADLINE_BENCH_PG_DSN for PostgreSQL)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="in-process/HTTP pairs to run")
    parser.add_argument("--latency", action="store_true", help="one client, one call at a time")
    args = parser.parse_args()
    dsn = os.environ.get("THREADLINE_BENCH_PG_DSN", "")
    if args.latency:
        latency_main(args.rounds or 400, dsn)
        return
    args.rounds = args.rounds or 40
    if not dsn:
        raise SystemExit("set THREADLINE_BENCH_PG_DSN=postgresql://...")
    gen = TextGen(seed=13)
    texts = [gen.message() for _ in range(500)]
    print(
        f"{args.clients} clients x {args.rounds} rounds (append + read last 20), PostgreSQL;"
        f" the service with {args.workers} uvicorn workers\n"
    )
    columns = ("app p50", "app p99", "read p50", "read p99")
    header = f"{'':<28} {'calls':>6} {'errors':>6} {'lost':>5} " + " ".join(
        f"{c:>8}" for c in columns
    )
    header += f" {'calls/s':>9}"
    print(header + "   (latencies in ms)")
    failed = 0
    ratios: list[float] = []
    for repeat in range(args.repeat):
        # Sides alternate which goes first, so a burst of background load hits both alike.
        sides = ["local", "http"] if repeat % 2 == 0 else ["http", "local"]
        rates: dict[str, float] = {}
        for side in sides:
            result = (
                _local_side(dsn, args, texts) if side == "local" else _http_side(dsn, args, texts)
            )
            name = (
                "in-process (AsyncSession)" if side == "local" else f"HTTP, {args.workers} workers"
            )
            line, rates[side] = _row(name, *result)
            print(line)
            failed += result[1] + result[2]
        ratios.append(rates["http"] / rates["local"])
        print(f"  run {repeat + 1}: service throughput / in-process {ratios[-1]:.2f}x")
    print(
        f"\nservice throughput / in-process: {min(ratios):.2f}x - {max(ratios):.2f}x"
        f" over {len(ratios)} run(s)"
    )
    if failed:
        raise SystemExit(f"FAILED: {failed} errors or sessions with lost messages")


def _local_side(
    dsn: str, args: argparse.Namespace, texts: list[str]
) -> tuple[Timings, int, int, float]:
    with fresh_schema(dsn) as url:
        return asyncio.run(_local_run(url, args.clients, args.rounds, texts))


def _http_side(
    dsn: str, args: argparse.Namespace, texts: list[str]
) -> tuple[Timings, int, int, float]:
    with fresh_schema(dsn) as url:
        key = create_key(url, "bench")
        log = Path(tempfile.mkdtemp(prefix="threadline-bench-")) / "serve.log"
        proc, base = _start(url, args.workers, log=log)
        try:
            served = asyncio.run(_http_run(base, key, args.clients, args.rounds, texts))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        if served[1] or served[2]:
            print(f"  server log: {log}")
        return served


if __name__ == "__main__":
    main()
