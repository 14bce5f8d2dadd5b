"""PostgreSQL: many processes appending with the default parent never fork or lose a message.

Eight processes (``spawn``: nothing shared but the URL) each open their own store and append
250 messages to the head of one session. PostgresStore locks the session row
(``INSERT ... ON CONFLICT DO NOTHING`` + ``SELECT ... FOR UPDATE``) inside each write
transaction, so the result must be one linear path of 2000 messages.
"""

from __future__ import annotations

import itertools
import multiprocessing
import traceback
from typing import Any

import pytest

import threadline
from threadline.messages import normalize_message

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PROCESSES = 8
PER_PROCESS = 250
APP = "default"
SESSION = "crowd"


def _appender(url: str, k: int, barrier: Any, problems: Any) -> None:
    """Child process: open a store from the URL, wait for the others, then append."""
    try:
        with threadline.connect(url) as store:
            store.get_head(APP, SESSION)  # pool and schema ready before the race starts
            barrier.wait(timeout=120)
            for i in range(PER_PROCESS):
                message = normalize_message(
                    {"id": f"p{k}-{i}", "role": "user", "content": f"process {k} message {i}"}
                )
                store.append_messages(APP, SESSION, [message])
    except BaseException:
        problems.put(f"process {k}:\n{traceback.format_exc()}")
        raise


def _run_appenders(url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, problems = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(target=_appender, args=(url, k, barrier, problems)) for k in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            proc.join(timeout=280)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
    reports = []
    while not problems.empty():
        reports.append(problems.get())
    assert reports == []
    assert [proc.exitcode for proc in procs] == [0] * PROCESSES


def test_default_parent_appends_from_many_processes_form_one_path(pg_dsn: str) -> None:
    _run_appenders(pg_dsn)
    total = PROCESSES * PER_PROCESS
    expected = {f"p{k}-{i}" for k in range(PROCESSES) for i in range(PER_PROCESS)}
    with threadline.connect(pg_dsn) as store:
        path = store.get_path(APP, SESSION)
        ids = [m["id"] for m in path]
        assert len(ids) == total and set(ids) == expected  # none lost, none twice
        assert store.get_path_length(APP, SESSION) == total
        info = store.get_session(APP, SESSION)
        assert info is not None and info.message_count == total  # nothing off the path
        head = store.get_head(APP, SESSION)
        assert head is not None and head["id"] == ids[-1]
        # One linear path: exactly one root, every other message's parent is its predecessor,
        # and (with every stored message on the path) no message has two children.
        assert store.get_path(APP, SESSION, ids[0]) == [path[0]]
        for parent, child in itertools.pairwise(ids):
            assert [m["id"] for m in store.get_children(APP, SESSION, parent)] == [child]
        assert store.get_children(APP, SESSION, ids[-1]) == []
        # each process's messages keep their own order along the path
        position = {mid: n for n, mid in enumerate(ids)}
        for k in range(PROCESSES):
            mine = [position[f"p{k}-{i}"] for i in range(PER_PROCESS)]
            assert mine == sorted(mine)
        # the id-only walk agrees with the full one
        assert store.get_path_ids(APP, SESSION) == ids
