"""Conformance: concurrent writers in several processes (DESIGN.md principle 4, api.md §1).

Four processes each append 250 messages with the default parent (the head) into one session of
one store. Every append moves the head atomically with the insert, so the result is one linear
path of 1000 messages: nothing lost, nothing forked.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import threadline
from threadline import Session

PROCESSES = 4
PER_PROCESS = 250
SESSION = "race"


# The child runs this source through the builtin ``exec`` (picklable by reference), so it does
# not need to import this test module: with --import-mode=importlib it is not importable.
WRITER = """
import traceback
import threadline
from threadline import Session

try:
    store = threadline.connect(url)
    try:
        session = Session.create(store).for_session(session_id)
        session.get_history(limit=1)  # open connections / create tables before the race
        barrier.wait(timeout=60)
        for i in range(per_process):
            session.append_message(
                {"id": f"p{k}-{i}", "role": "user",
                 "parts": [{"type": "text", "text": f"process {k} message {i}"}]}
            )
    finally:
        store.close()
except BaseException:
    problems.put(f"process {k}:\\n{traceback.format_exc()}")
    raise
"""


def _writer_globals(url: str, k: int, barrier: Any, problems: Any) -> dict[str, Any]:
    return {"__name__": f"writer{k}", "url": url, "k": k, "barrier": barrier,
            "problems": problems, "session_id": SESSION, "per_process": PER_PROCESS}


def test_processes_appending_to_one_session_form_one_linear_path(file_store_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    problems = ctx.Queue()
    procs = [ctx.Process(target=exec,
                         args=(WRITER, _writer_globals(file_store_url, k, barrier, problems)))
             for k in range(PROCESSES)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(timeout=240)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    reports = []
    while not problems.empty():
        reports.append(problems.get())
    assert reports == []
    assert [p.exitcode for p in procs] == [0] * PROCESSES

    expected = {f"p{k}-{i}" for k in range(PROCESSES) for i in range(PER_PROCESS)}
    with threadline.connect(file_store_url) as store:
        session = Session.create(store).for_session(SESSION)
        path = session.get_history()
        path_ids = [m["id"] for m in path]
        assert session.get_path_length() == PROCESSES * PER_PROCESS
        assert len(path_ids) == PROCESSES * PER_PROCESS
        assert set(path_ids) == expected  # none lost, none duplicated on the path
        info = store.get_session("default", SESSION)
        assert info is not None and info.message_count == PROCESSES * PER_PROCESS
        # one linear path: the root has no parent, and no message has two children
        for mid in path_ids:
            assert len(session.get_branches(mid)) <= 1, mid
        assert session.get_branches(path_ids[-1]) == []
        assert session.get_latest_leaf()["id"] == path_ids[-1]
        # each process's own messages keep their order along the path
        position = {mid: n for n, mid in enumerate(path_ids)}
        for k in range(PROCESSES):
            mine = [position[f"p{k}-{i}"] for i in range(PER_PROCESS)]
            assert mine == sorted(mine)
