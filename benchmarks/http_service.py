"""The HTTP service under load: 50 concurrent clients appending and reading on PostgreSQL with
4 uvicorn workers, beside the same workload in-process (AsyncSessionManager on the same
database) to show what the service costs.

Run:  THREADLINE_BENCH_PG_DSN=postgresql://... python benchmarks/http_service.py
      [--clients 50] [--rounds 40] [--workers 4]

Each client owns a session and, per round, appends a message (POST .../messages) then reads
the last 20 messages of its history (GET .../messages?limit=20). Afterwards every session is
checked: exactly ``rounds`` messages, in order — a lost or duplicated message fails the run.
Latencies are per call as the client sees them (the client runs in this process: on a small
machine it shares the cores with the server, so absolute numbers are pessimistic).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def _start(url: str, workers: int) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    code = (
        "import sys; from threadline.server import serve; "
        f"serve(sys.argv[1], port={port}, workers={workers})"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as http:

        async def client(c: int) -> None:
            nonlocal errors
            for r in range(rounds):
                body = {
                    "id": f"m{r:04d}",
                    "role": "user",
                    "content": texts[(c * rounds + r) % len(texts)],
                }
                start = time.perf_counter()
                answer = await http.post(f"/v1/sessions/c{c}/messages", json=body)
                timings["append"].append(time.perf_counter() - start)
                errors += answer.status_code != 201
                start = time.perf_counter()
                answer = await http.get(f"/v1/sessions/c{c}/messages", params={"limit": 20})
                timings["read"].append(time.perf_counter() - start)
                errors += answer.status_code != 200

        start = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        elapsed = time.perf_counter() - start
        lost = 0
        for c in range(clients):
            answer = await http.get(f"/v1/sessions/c{c}/messages")
            ids = [m["id"] for m in answer.json()["messages"]]
            lost += ids != [f"m{r:04d}" for r in range(rounds)]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    dsn = os.environ.get("THREADLINE_BENCH_PG_DSN", "")
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
    with fresh_schema(dsn) as url:
        local = asyncio.run(_local_run(url, args.clients, args.rounds, texts))
        line, local_rate = _row("in-process (AsyncSession)", *local)
        print(line)
    with fresh_schema(dsn) as url:
        key = create_key(url, "bench")
        proc, base = _start(url, args.workers)
        try:
            served = asyncio.run(_http_run(base, key, args.clients, args.rounds, texts))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        line, http_rate = _row(f"HTTP, {args.workers} workers", *served)
        print(line)
    print(f"\nservice throughput / in-process: {http_rate / local_rate:.2f}x")
    failed = local[1] + local[2] + served[1] + served[2]
    if failed:
        raise SystemExit(f"FAILED: {failed} errors or sessions with lost messages")


if __name__ == "__main__":
    main()
