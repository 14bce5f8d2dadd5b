"""A process killed (SIGKILL) while writing large messages leaves neither a message without
its attachment nor an orphan attachment that breaks a later read.

A writer subprocess appends messages carrying megabyte-sized images (some repeated, so
deduplication is exercised) and deletes some of them again, printing each acknowledged
append; the test kills it at random moments over several rounds, then checks that every
acknowledged message reads back byte-identical and that the attachment tables are consistent.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline import Session

ROUNDS = 4

WRITER = r"""
import base64, random, sys
import threadline
from threadline import Session

def content(mid):
    rng = random.Random(mid.rsplit("-", 1)[0] if mid.endswith("-dup") else mid)
    raw = rng.randbytes(rng.randint(300_000, 1_500_000))
    return "data:image/png;base64," + base64.b64encode(raw).decode()

url, prefix = sys.argv[1], sys.argv[2]
session = Session.create(threadline.connect(url)).for_session("crash")
print("ready", flush=True)
for i in range(10_000):  # the test kills us long before
    mid = f"{prefix}-{i}" + ("-dup" if i % 3 == 2 else "")
    parts = [{"type": "file", "mediaType": "image/png", "url": content(mid)}]
    session.append_message({"id": mid, "role": "user", "parts": parts})
    print(mid, flush=True)
    if i % 4 == 3:
        # said before the delete: the kill may land between its commit and any later print
        print("deleting " + mid, flush=True)
        session.delete_messages([mid])
"""


def _env() -> dict[str, str]:
    src = str(Path(threadline.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _round(url: str, prefix: str, seconds: float) -> tuple[list[str], set[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, prefix],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    if first != "ready\n":
        proc.kill()
        pytest.fail(f"writer did not start: {first!r}\n{proc.stderr.read()}")
    time.sleep(seconds)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    acked: list[str] = []
    deleted: set[str] = set()
    for line in proc.stdout.read().splitlines():
        if line.startswith("deleting "):  # may be stored or gone: both are right
            deleted.add(line.removeprefix("deleting "))
        elif line:
            acked.append(line)
    proc.stdout.close()
    proc.stderr.close()
    return acked, deleted


def _count(store: Any, sql: str) -> int:
    return int(store._read("check", lambda tx: tx.one(sql))[0])


@pytest.mark.parametrize(
    "backend", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_killed_large_writes_leave_consistent_attachments(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'crash.db'}"
        if backend == "sqlite-file"
        else request.getfixturevalue("pg_dsn")
    )
    rng = random.Random(7)
    acked: list[str] = []
    deleted: set[str] = set()
    for n in range(ROUNDS):
        got, gone = _round(url, f"r{n}", rng.uniform(0.3, 1.5))
        acked += got
        deleted |= gone
    assert acked, "the writer never acknowledged an append"
    with threadline.connect(url) as store:
        session = Session.create(store).for_session("crash")
        stored = {m["id"]: m for m in session.get_history()}
        for mid in acked:
            if mid in deleted:
                continue
            assert mid in stored, f"acknowledged {mid} is missing"
        for message in stored.values():  # every stored message reads whole
            assert message["parts"][0]["url"].startswith("data:image/png;base64,")
        orphans = _count(
            store,
            "SELECT COUNT(*) FROM tl_attachments a WHERE NOT EXISTS (SELECT 1 FROM "
            "tl_message_refs r WHERE r.app = a.app AND r.sha256 = a.sha256)",
        )
        missing = _count(
            store,
            "SELECT COUNT(*) FROM tl_message_refs r WHERE NOT EXISTS (SELECT 1 FROM "
            "tl_attachments a WHERE a.app = r.app AND a.sha256 = r.sha256)",
        )
        short = _count(
            store,
            "SELECT COUNT(*) FROM tl_attachments a WHERE a.chunks <> (SELECT COUNT(*) FROM "
            "tl_attachment_chunks c WHERE c.app = a.app AND c.sha256 = a.sha256)",
        )
        refs = _count(store, "SELECT COUNT(*) FROM tl_message_refs")
        assert (orphans, missing, short) == (0, 0, 0)
        assert refs == len(stored)
