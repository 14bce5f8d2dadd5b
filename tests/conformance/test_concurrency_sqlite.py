"""Conformance: concurrent writers in several processes.

Four processes each append 250 messages with the default parent (the head) into one session of
one store. Every append moves the head atomically with the insert, so the result is one linear
path of 1000 messages: nothing lost, nothing forked. A second race appends batches
(``append_messages``) from three processes: each batch must land as consecutive messages.
"""

from __future__ import annotations

import multiprocessing

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
            if batch:  # one append_messages call of `batch` messages
                session.append_messages(
                    [{"id": f"p{k}-{i}-{j}", "role": "user", "content": f"p{k} b{i} m{j}"}
                     for j in range(batch)]
                )
            else:
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


def _race(url: str, session_id: str, processes: int, per_process: int, batch: int) -> None:
    """Run `processes` spawned writers at once; fail with their tracebacks if any failed."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes)
    problems = ctx.Queue()
    procs = []
    for k in range(processes):
        env = {"__name__": f"writer{k}", "url": url, "k": k, "barrier": barrier,
               "problems": problems, "session_id": session_id, "per_process": per_process,
               "batch": batch}
        procs.append(ctx.Process(target=exec, args=(WRITER, env)))
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
    assert [p.exitcode for p in procs] == [0] * processes


def test_processes_appending_to_one_session_form_one_linear_path(file_store_url: str) -> None:
    _race(file_store_url, SESSION, PROCESSES, PER_PROCESS, batch=0)

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


def test_concurrent_batches_stay_contiguous(file_store_url: str) -> None:
    processes, batches, size = 3, 30, 5
    _race(file_store_url, "batches", processes, batches, batch=size)
    with threadline.connect(file_store_url) as store:
        session = Session.create(store).for_session("batches")
        path_ids = [m["id"] for m in session.get_history()]
        assert len(path_ids) == processes * batches * size
        assert session.get_path_length() == len(path_ids)
        # each append_messages call is one transaction: its messages are consecutive
        for start in range(0, len(path_ids), size):
            chunk = path_ids[start:start + size]
            prefix = chunk[0].rsplit("-", 1)[0]
            assert chunk == [f"{prefix}-{j}" for j in range(size)], chunk
        for mid in path_ids[::7]:
            assert len(session.get_branches(mid)) <= 1, mid
