"""Fault script: how fast a PostgresStore recovers after the server was down for a while.

Stops the server (``pg_ctl stop -m immediate``: every connection dies), keeps appending
during the outage (each attempt must fail fast with a ``StoreError``), starts the server
again and measures the seconds from "server accepts connections" to the first successful
append on the same store object, and how many lines the ``threadline`` and ``psycopg.pool``
loggers wrote. Prints a table; run it against a throwaway server only:

    python benchmarks/pg_outage.py --dsn postgresql://postgres@127.0.0.1:55432/threadline_test \\
        --pg-ctl "runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D DATA -l LOG" \\
        --outage 30
"""

from __future__ import annotations

import argparse
import logging
import shlex
import subprocess
import threading
import time

import psycopg

import threadline
from threadline import StoreError
from threadline.messages import normalize_message


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:  # what a default logging set-up shows
            self.records.append(f"{record.name}: {record.getMessage()[:100]}")


def _accepting(dsn: str) -> bool:
    try:
        with psycopg.connect(dsn, connect_timeout=1):
            return True
    except psycopg.Error:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--pg-ctl", required=True, help="pg_ctl command prefix with -D and -l")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds the server is down")
    args = parser.parse_args()
    pg_ctl = shlex.split(args.pg_ctl)

    counter = _Count()
    for name in ("threadline", "psycopg.pool"):
        logging.getLogger(name).addHandler(counter)
        logging.getLogger(name).setLevel(logging.DEBUG)

    store = threadline.connect(args.dsn)
    message = lambda: [normalize_message({"role": "user", "content": "ping"})]  # noqa: E731
    store.append_messages("outage", "s", message())

    subprocess.run([*pg_ctl, "-m", "immediate", "-w", "stop"], check=True, capture_output=True)
    failures, slowest = 0, 0.0
    down_until = time.monotonic() + args.outage
    while time.monotonic() < down_until:
        started = time.monotonic()
        try:
            store.append_messages("outage", "s", message())
        except StoreError:
            failures += 1
        slowest = max(slowest, time.monotonic() - started)
        time.sleep(0.2)
    subprocess.run([*pg_ctl, "-w", "start"], check=True, capture_output=True)
    while not _accepting(args.dsn):
        time.sleep(0.05)
    back = time.monotonic()
    recovered = None
    while recovered is None and time.monotonic() - back < 120:
        try:
            store.append_messages("outage", "s", message())
            recovered = time.monotonic() - back
        except StoreError:
            time.sleep(0.05)
    store.close()
    threading.Event().wait(0.1)

    rows = [
        ("outage (s)", f"{args.outage:.0f}"),
        ("failed appends during the outage", str(failures)),
        ("slowest failed append (s)", f"{slowest:.2f}"),
        (
            "first append after the server is back (s)",
            "never" if recovered is None else f"{recovered:.2f}",
        ),
        ("warnings logged (threadline + psycopg.pool)", str(len(counter.records))),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    for line in counter.records[:10]:
        print("   ", line)


if __name__ == "__main__":
    main()
