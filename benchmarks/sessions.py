"""Session registry benchmarks: ``SessionManager.list`` / ``get`` vs a plain ``sqlite3`` table.

Run:  python benchmarks/sessions.py            (10 000 and 100 000 sessions, under a minute)
      python benchmarks/sessions.py --quick    (2 000 and 10 000 sessions, a smoke run)

Workloads (issue W3 and registry reads):
  S1  newest 50 of 10 000 sessions: ``manager.list(limit=50)`` vs a plain indexed query
  S2  the same list over 100 000 sessions (absolute: must stay under 10 ms)
  S3  ``manager.get(session_id)`` latency at 100 000 vs 1 000 sessions (must not depend on count)
  S4  paging through all 10 000 sessions with ``next_cursor`` (best of 3 walks; every walk is
      checked for gaps, duplicates and order)

The plain script keeps the same 15 registry columns in a ``WITHOUT ROWID`` table keyed by
(app, id) with an index on (app, updated_at DESC, id DESC), reads with keyset pagination and
decodes every row the way a caller needs it (metadata JSON parsed, timestamps as aware
datetimes): the floor any SQLite-backed registry stands on. Its undecoded row fetch is shown too.
Latencies are medians of calls interleaved with the plain side, so background load hits both.
S3 compares a 1 000-session store with the 100 000-session one, all four lookups interleaved.
Sessions are created through the public ``store.create_session`` (one transaction each).

>>> main()  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import threadline

APP = "default"
COLUMNS = (
    "id, app, user_id, name, parent_session_id, model, source, input_tokens, output_tokens, "
    "estimated_cost, end_reason, metadata, message_count, created_at, updated_at"
)
PLAIN_SCHEMA = """
CREATE TABLE sessions (
    app TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, name TEXT, parent_session_id TEXT,
    model TEXT, source TEXT, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, estimated_cost REAL NOT NULL DEFAULT 0,
    end_reason TEXT, metadata TEXT NOT NULL DEFAULT '{}', message_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    PRIMARY KEY (app, id)) WITHOUT ROWID;
CREATE INDEX sessions_recent ON sessions (app, updated_at DESC, id DESC);
"""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
Row = tuple[str, str, str, str, str]


class Plain:
    """The floor: one registry table, keyset pagination, rows decoded to plain dicts."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(PLAIN_SCHEMA)
        self.count = 0

    def grow(self, total: int) -> None:
        """Insert sessions (one transaction) until there are ``total``."""
        now = time.time_ns() // 1000
        rows = [
            (APP, sid(i), f"u{i % 100}", f"Chat {i}", now + i, now + i)
            for i in range(self.count, total)
        ]
        self.db.execute("BEGIN")
        self.db.executemany(
            "INSERT INTO sessions (app, id, user_id, name, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        self.db.execute("COMMIT")
        self.count = total

    def rows(self, limit: int, cursor: tuple[int, str] | None = None) -> list[Any]:
        """The undecoded rows of one page (``limit + 1`` to know whether more follow)."""
        where = "app = ?"
        params: list[Any] = [APP]
        if cursor is not None:
            where += " AND (updated_at, id) < (?, ?)"
            params.extend(cursor)
        return self.db.execute(
            f"SELECT {COLUMNS} FROM sessions WHERE {where} "
            "ORDER BY updated_at DESC, id DESC LIMIT ?",
            (*params, limit + 1),
        ).fetchall()

    def list(
        self, limit: int, cursor: tuple[int, str] | None = None
    ) -> tuple[list[dict[str, Any]], tuple[int, str] | None]:
        """One decoded page and the keyset position after it (``None`` on the last page)."""
        rows = self.rows(limit, cursor)
        page = [decode(r) for r in rows[:limit]]
        after = (rows[limit - 1][14], rows[limit - 1][0]) if len(rows) > limit else None
        return page, after

    def get(self, session_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            f"SELECT {COLUMNS} FROM sessions WHERE app = ? AND id = ?", (APP, session_id)
        ).fetchone()
        return decode(row) if row is not None else None


def decode(row: Any) -> dict[str, Any]:
    """What a caller of a registry needs from a row: parsed metadata, aware datetimes."""
    names = COLUMNS.split(", ")
    out = dict(zip(names, row, strict=True))
    out["metadata"] = json.loads(row[11])
    out["created_at"] = _EPOCH + timedelta(microseconds=row[13])
    out["updated_at"] = _EPOCH + timedelta(microseconds=row[14])
    return out


def sid(i: int) -> str:
    return f"sess-{i:07d}"


@dataclass
class Registry:
    """A threadline store grown to a number of sessions through the public API."""

    store: threadline.Store
    count: int = 0
    setup_s: float = 0.0

    def grow(self, total: int) -> None:
        start = time.perf_counter()
        for i in range(self.count, total):
            self.store.create_session(APP, sid(i), user_id=f"u{i % 100}", name=f"Chat {i}")
        self.setup_s += time.perf_counter() - start
        self.count = total


def medians(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    """Median seconds of each function, called round-robin (background load hits all alike)."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, samples, strict=True):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return [statistics.median(x) for x in samples]


def probes(count: int, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [sid(rng.randrange(count)) for _ in range(n)]


def page_all(manager: threadline.SessionManager, expected: int) -> tuple[float, str]:
    """Seconds to walk every page of 50, and whether the walk was gap/duplicate-free and ordered."""
    start = time.perf_counter()
    seen: list[tuple[datetime, str]] = []
    cursor: str | None = None
    while True:
        page = manager.list(limit=50, cursor=cursor)
        seen.extend((s.updated_at, s.id) for s in page.sessions)
        cursor = page.next_cursor
        if cursor is None:
            break
    elapsed = time.perf_counter() - start
    ids = [s for _, s in seen]
    ordered = all(seen[i] > seen[i + 1] for i in range(len(seen) - 1))
    complete = len(ids) == expected and set(ids) == {sid(i) for i in range(expected)}
    if ordered and complete:
        return elapsed, "ok"
    return elapsed, f"FAILED ({len(ids)} rows, {len(set(ids))} ids)"


def plain_page_all(plain: Plain) -> float:
    start = time.perf_counter()
    cursor: tuple[int, str] | None = None
    total = 0
    while True:
        page, cursor = plain.list(50, cursor)
        total += len(page)
        if cursor is None:
            break
    assert total == plain.count
    return time.perf_counter() - start


def row(name: str, tl: float, plain: float, ratio: float, target: str, unit: str = "") -> Row:
    """A table row; times in the unit the name states, ratio as ``1.23x``."""
    return (
        name,
        f"{tl:.2f}" if tl < 10 else f"{tl:.0f}",
        f"{plain:.2f}" if plain < 10 else f"{plain:.0f}",
        f"{ratio:.2f}{unit}",
        target,
    )


def list_rows(
    manager: threadline.SessionManager, plain: Plain, count: int, abs_ms: bool
) -> list[Row]:
    """S1/S2: newest 50 vs the decoded plain page (and, for S1, the undecoded floor)."""
    tl, pl, raw = medians(
        [lambda: manager.list(limit=50), lambda: plain.list(50), lambda: plain.rows(50)], 300
    )
    if abs_ms:
        verdict = "ok" if tl < 0.010 else "FAILED"
        return [
            row(
                f"S2 list newest 50 of {count:,} (ms)",
                tl * 1e3,
                pl * 1e3,
                tl / pl,
                f"< 10 ms: {verdict}",
                "x",
            )
        ]
    return [
        row(f"S1 list newest 50 of {count:,} (ms)", tl * 1e3, pl * 1e3, tl / pl, "≤ 2x", "x"),
        row("   vs plain rows undecoded (ms)", tl * 1e3, raw * 1e3, tl / raw, "(floor, info)", "x"),
    ]


def paging_row(manager: threadline.SessionManager, plain: Plain, count: int) -> Row:
    """S4: best of 3 full walks each side; every threadline walk is checked."""
    walks = [(page_all(manager, count), plain_page_all(plain)) for _ in range(3)]
    tl = min(w[0][0] for w in walks)  # one walk is a single long sample: take the best
    pl = min(w[1] for w in walks)
    bad = [w[0][1] for w in walks if w[0][1] != "ok"]
    status = bad[0] if bad else "ok"
    name = f"S4 page all {count:,} by 50 (ms total)"
    return row(name, tl * 1e3, pl * 1e3, tl / pl, f"gaps/dups: {status}", "x")


def get_rows(
    big: tuple[threadline.SessionManager, Plain], small: tuple[threadline.SessionManager, Plain]
) -> list[Row]:
    """S3: ``get`` at both sizes, threadline and plain, all four interleaved."""
    nb, ns = big[1].count, small[1].count
    ids = [iter(probes(nb, 3000, 1)), iter(probes(ns, 3000, 2))]
    again = [iter(probes(nb, 3000, 1)), iter(probes(ns, 3000, 2))]
    tl_b, tl_s, pl_b, pl_s = medians(
        [
            lambda: big[0].get(next(ids[0])),
            lambda: small[0].get(next(ids[1])),
            lambda: big[1].get(next(again[0])),
            lambda: small[1].get(next(again[1])),
        ],
        3000,
    )
    kb, ks = f"@{nb // 1000}k", f"@{ns // 1000}k"
    return [
        row(f"S3 get µs {kb} vs {ks}: tl", tl_b * 1e6, tl_s * 1e6, tl_b / tl_s, "≤ 1.2"),
        row("   same for plain (floor)", pl_b * 1e6, pl_s * 1e6, pl_b / pl_s, "(info)"),
        row(f"   get µs {kb}, tl vs plain", tl_b * 1e6, pl_b * 1e6, tl_b / pl_b, "(info)", "x"),
    ]


def run(tmp: Path, mid: int, big: int, small: int) -> list[Row]:
    """Grow the stores step by step and measure at each size; returns the table rows."""
    store = threadline.connect(str(tmp / "tl.db"))
    store_small = threadline.connect(str(tmp / "tl-small.db"))
    reg, reg_small = Registry(store), Registry(store_small)
    plain, plain_small = Plain(str(tmp / "plain.db")), Plain(str(tmp / "plain-small.db"))
    manager = threadline.SessionManager(store)
    manager_small = threadline.SessionManager(store_small)
    reg_small.grow(small)
    plain_small.grow(small)
    reg.grow(mid)
    plain.grow(mid)
    rows = list_rows(manager, plain, mid, abs_ms=False)
    rows.append(paging_row(manager, plain, mid))
    reg.grow(big)
    plain.grow(big)
    rows += list_rows(manager, plain, big, abs_ms=True)
    rows += get_rows((manager, plain), (manager_small, plain_small))
    setup = reg.setup_s + reg_small.setup_s
    per = setup / (reg.count + reg_small.count) * 1e6
    rows.append(("setup: create_session (µs each)", f"{per:.0f}", "", "", f"{setup:.0f} s total"))
    store.close()
    store_small.close()
    return rows


HEADER = ("workload", "threadline", "plain sqlite3", "ratio", "target")


def print_table(rows: list[Row], header: Row = HEADER) -> None:
    """Print rows under ``header`` in aligned columns (the style of ``core.py``)."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    args = parser.parse_args()
    mid, big, small = (2_000, 10_000, 1_000) if args.quick else (10_000, 100_000, 1_000)
    with tempfile.TemporaryDirectory(prefix="tl-bench-sessions-") as tmpdir:
        rows = run(Path(tmpdir), mid, big, small)
    print_table(rows)


if __name__ == "__main__":
    main()
