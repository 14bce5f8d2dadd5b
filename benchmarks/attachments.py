"""Large messages: what an out-of-row attachment costs against the raw floor.

Run:  python benchmarks/attachments.py            (30 messages of each kind)
      python benchmarks/attachments.py --quick    (8 of each)

Workloads, measured interleaved (threadline, floor, threadline, ...) on SQLite files with WAL
and synchronous=NORMAL on both sides:
  B1  append a message with a 1 MB image (a 1.33 MB data URL) — floors, each one plain INSERT
      and a commit: of the data URL as the caller hands it over, i.e. the same bytes (B1b, the
      acceptance bar <= 2x), and of the image's decoded raw bytes (B1a, for information)
  B2  append a 1 MB text message, searchable — floor: the row, FTS5 porter and trigram index
      rows of the same text in one transaction (the indexes threadline keeps); threadline's
      batched indexing is run before the clock stops
  B3  get_history(limit=10) of a session holding such images, each read back whole — floor:
      the 10 newest inline message rows read and decoded with json.loads
Ratios are threadline / floor (lower is better; the acceptance bars are B1 <= 2x, B2 <= 1.5x).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from textgen import TextGen

import threadline
from threadline import Session

MB = 1024 * 1024


def _floor_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(
        """CREATE TABLE blobs(id TEXT PRIMARY KEY, data BLOB);
        CREATE TABLE msgs(id TEXT PRIMARY KEY, data TEXT);
        CREATE TABLE inline_msgs(id TEXT PRIMARY KEY, data TEXT);
        CREATE TABLE inline_rows(id TEXT PRIMARY KEY, data TEXT);
        CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='porter unicode61');
        CREATE VIRTUAL TABLE tri USING fts5(text, tokenize='trigram', detail=none,
                                            columnsize=0);"""
    )
    return db


def _image(rng: random.Random) -> tuple[str, bytes]:
    raw = rng.randbytes(MB)
    return "data:image/png;base64," + base64.b64encode(raw).decode(), raw


def _text(gen: TextGen) -> str:
    parts: list[str] = []
    size = 0
    while size < MB:
        parts.append(gen.message())
        size += len(parts[-1]) + 1
    return " ".join(parts)


def _best(samples: list[float]) -> float:
    samples.sort()
    return samples[len(samples) // 2]  # the median: robust to one slow fsync


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count = 8 if args.quick else 30
    rng = random.Random(1)
    gen = TextGen(seed=2)
    results: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = threadline.connect(os.path.join(tmp, "tl.db"))
        session = Session.create(store).for_session("big")
        floor = _floor_db(os.path.join(tmp, "floor.db"))
        inline_db = _floor_db(os.path.join(tmp, "inline.db"))  # its own file: its own WAL

        # B1: binary
        ours: list[float] = []
        raw_floor: list[float] = []
        inline_floor: list[float] = []
        for _ in range(count):
            url, raw = _image(rng)
            part = {"type": "file", "mediaType": "image/png", "url": url}
            message = {"role": "user", "parts": [part]}

            def plain(sql: str, value: object, db: sqlite3.Connection = floor) -> None:
                db.execute("BEGIN IMMEDIATE")
                db.execute(sql, (uuid.uuid4().hex, value))
                db.execute("COMMIT")

            ours.append(_time(lambda m=message: session.append_message(m)))
            raw_floor.append(_time(lambda r=raw: plain("INSERT INTO blobs VALUES (?, ?)", r)))
            inline_floor.append(
                _time(lambda d=url: plain("INSERT INTO inline_msgs VALUES (?, ?)", d, inline_db))
            )
        results.append(("B1a append 1 MB image / raw bytes", _best(ours), _best(raw_floor)))
        results.append(("B1b append 1 MB image / same bytes", _best(ours), _best(inline_floor)))

        # B2: text (threadline indexes in batches: the batch is flushed inside the clock)
        text_session = Session.create(store).for_session("text")
        texts = [_text(gen) for _ in range(count)]

        def ours_text() -> None:
            for text in texts:
                text_session.append_message({"role": "user", "content": text})
            store._write("index", lambda tx: store._catch_up_index(tx.conn))  # type: ignore[attr-defined]

        def floor_text() -> None:
            for text in texts:
                mid = uuid.uuid4().hex
                data = json.dumps(
                    {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}
                )
                floor.execute("BEGIN IMMEDIATE")
                cur = floor.execute("INSERT INTO msgs VALUES (?, ?)", (mid, data))
                floor.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (cur.lastrowid, text))
                floor.execute("INSERT INTO tri(rowid, text) VALUES (?, ?)", (cur.lastrowid, text))
                floor.execute("COMMIT")

        a = _time(ours_text) / count
        b = _time(floor_text) / count
        results.append(("B2 append, 1 MB text, indexed", a, b))

        # B3: reading images back
        reader = Session.create(store).for_session("big")
        for i in range(count):  # the B3 floor: message rows with the image inline
            url, _ = _image(rng)
            row = {"id": uuid.uuid4().hex, "role": "user", "parts": [{"type": "file", "url": url}]}
            inline_db.execute("INSERT INTO inline_rows VALUES (?, ?)", (str(i), json.dumps(row)))
        newest = "SELECT data FROM inline_rows ORDER BY rowid DESC LIMIT 10"

        def plain_read() -> None:
            rows = inline_db.execute(newest).fetchall()
            assert len(rows) == min(10, count)
            [json.loads(row[0]) for row in rows]

        history = [_time(lambda: reader.get_history(limit=10)) for _ in range(5)]
        plain_reads = [_time(plain_read) for _ in range(5)]
        results.append(("B3 get_history, 10 x 1 MB images", _best(history), _best(plain_reads)))
        store.close()
        floor.close()
        inline_db.close()

    width = max(len(name) for name, _, _ in results)
    print(f"{'workload':<{width}}  threadline     floor   ratio   ({count} messages each)")
    for name, ours_s, floor_s in results:
        ratio = ours_s / floor_s
        print(f"{name:<{width}}  {ours_s * 1000:8.2f} ms {floor_s * 1000:7.2f} ms {ratio:6.2f}x")


if __name__ == "__main__":
    main()
