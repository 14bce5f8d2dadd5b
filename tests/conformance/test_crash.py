"""Conformance: a process crash never loses an acknowledged write nor corrupts the file.

A writer subprocess appends messages to a SQLite file in a loop and prints each id after
``append_message`` returned. The test SIGKILLs it at random moments, several rounds in a row
(the first round right after it connected, while the tables may still be being created),
then rounds of batch appends (`append_messages`), which must be stored whole or not at all. Then
every acknowledged id must be stored, ``PRAGMA integrity_check`` must say ``ok`` and the head
path must hold every stored message in acknowledgement order.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import threadline
from threadline import Session

ROUNDS = 5  # single appends
BATCH_ROUNDS = 3  # append_messages of BATCH messages
BATCH = 4
SESSION = "crash"

WRITER = r"""
import random, sys
import threadline
BATCH = int(sys.argv[3])
from threadline import Session

url, prefix = sys.argv[1], sys.argv[2]
store = threadline.connect(url)
session = Session.create(store).for_session("crash")
rng = random.Random()
print("ready", flush=True)
def message(mid):
    text = "crash tok" + mid.replace("-", "q") + "x " + "pad " * rng.randint(0, 400)
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}

for i in range(100_000):  # bounded: the test kills us long before
    if prefix.startswith("b"):  # batch rounds: BATCH messages in one append_messages call
        batch = [message(f"{prefix}-{i}-{j}") for j in range(BATCH)]
        session.append_messages(batch)
        mid = batch[-1]["id"]
    else:
        mid = f"{prefix}-{i}"
        session.append_message(message(mid))
    sys.stdout.write(mid + "\n")
    sys.stdout.flush()
"""


def _env() -> dict[str, str]:
    src = str(Path(threadline.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run_round(url: str, prefix: str, kill_after: int) -> list[str]:
    """Start a writer, SIGKILL it once ``kill_after`` ids were acknowledged; return all acks."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, prefix, str(BATCH)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    acked: list[str] = []
    try:
        first = proc.stdout.readline()
        if first != "ready\n":
            proc.kill()
            pytest.fail(f"writer did not start: {first!r}\n{proc.stderr.read()}")
        while len(acked) < kill_after:
            line = proc.stdout.readline()
            if not line.endswith("\n"):
                proc.kill()
                pytest.fail(f"writer died early after {acked[-1:]}:\n{proc.stderr.read()}")
            acked.append(line[:-1])
        os.kill(proc.pid, signal.SIGKILL)
        rest = proc.stdout.read()
        # ids printed before the kill count as acknowledged; a torn last line does not
        acked.extend(line for line in rest.split("\n")[:-1] if line)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return acked


def _integrity(path: Path) -> list[tuple[str, ...]]:
    con = sqlite3.connect(path)
    try:
        return con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()


def test_sigkill_never_loses_acknowledged_writes(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    url = "sqlite:///" + str(path)
    seed = random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    acked: list[str] = []
    for r in range(ROUNDS):
        kill_after = 0 if r == 0 else rng.randint(1, 40)
        acked += _run_round(url, f"r{r}", kill_after)
    for r in range(BATCH_ROUNDS):
        acked += _run_round(url, f"b{r}", rng.randint(0, 10))
    note = f"(seed {seed}, {len(acked)} acknowledged)"

    assert _integrity(path) == [("ok",)], note
    with threadline.connect(url) as store:
        session = Session.create(store).for_session(SESSION)
        for mid in acked:
            assert session.get_message(mid) is not None, f"lost {mid} {note}"
        path_ids = [m["id"] for m in session.get_history()]
        info = store.get_session("default", SESSION)
        stored = 0 if info is None else info.message_count
        # one writer at a time, default parent: every stored message is on the head path
        assert len(path_ids) == len(set(path_ids)) == stored, note
        assert session.get_path_length() == stored, note
        position = {mid: n for n, mid in enumerate(path_ids)}
        assert [position[mid] for mid in acked] == sorted(position[mid] for mid in acked), note
        for mid in path_ids:
            assert len(session.get_branches(mid)) <= 1, f"{mid} forked {note}"
        # a batch is one transaction: each is stored whole or not at all
        batches: dict[str, int] = {}
        for mid in path_ids:
            if mid.startswith("b"):
                key = mid.rsplit("-", 1)[0]
                batches[key] = batches.get(key, 0) + 1
        assert all(count == BATCH for count in batches.values()), f"{batches} {note}"
        # the search index is in step with the rows
        for mid in acked[:: max(1, len(acked) // 25)]:
            word = "tok" + mid.replace("-", "q") + "x"  # no id's word contains another's
            assert [h.id for h in session.search(word)] == [mid], f"{mid} {note}"
        # and the store still takes writes on the head
        session.append_message({"id": "after", "role": "user", "content": "still works"})
        assert [m["id"] for m in session.get_history()] == [*path_ids, "after"]
    assert _integrity(path) == [("ok",)], note
