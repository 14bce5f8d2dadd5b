"""Conformance: concurrent writers from separate connects, checked against an interval oracle.

Four threads, each with its OWN ``threadline.connect`` of the same store (a SQLite file, or a
PostgreSQL schema), as separate processes would, run random operations on three sessions:
appends (some carrying a session-state delta), updates and deletes of their own messages,
``add_usage``, ``delete_session`` and ``load_sessions(replace=True)`` of a fresh dump. Each
thread records what was acknowledged and when (``time.monotonic`` before the call and after
it returned). An operation is linearised somewhere inside that interval, so afterwards only
what every admissible order agrees on is asserted (no timing assumption):

* a session "destroyer" (delete or replace) D is surely after a write W if D started after W
  returned, and surely before it if D returned before W started;
* an acknowledged append (or loaded message) that no destroyer can follow is readable whole,
  with its last acknowledged update, and found by search; one that a destroyer surely
  follows, or its own thread deleted, is gone;
* per session: ``message_count`` equals the stored rows, ``last_seq`` is at least every
  row's seq, the head is a stored message (``None`` only for an empty tree) and the path to
  it is a parent chain; a thread's own state key holds its last delta, and its undo record
  the delta before it, when no destroyer can interleave; the usage counters lie between the
  usage calls surely after the last destroyer and those not surely before one;
* a dump taken by a thread while others write passes ``check_dump`` (it loads back);
* no row of ``tl_messages`` / ``tl_state`` / ``tl_message_refs`` refers to a missing session.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import threadline
from threadline.errors import MessageNotFoundError
from threadline.messages import normalize_message
from threadline.store._sql.dump_check import check_dump

from .conftest import raw_query

APP = "oracle"
SESSIONS = ("s0", "s1", "s2")
THREADS = 4
OPS_PER_THREAD = int(os.environ.get("THREADLINE_ORACLE_STEPS", 250))
SEED = int(os.environ.get("THREADLINE_ORACLE_SEED", 1000))
TIME_CAP = 6.0  # seconds per thread: a slow CI machine runs fewer operations, same checks


@dataclass
class Op:
    kind: str
    session: str
    start: float
    end: float
    thread: int
    ids: list[str] = field(default_factory=list)
    value: Any = None


@dataclass
class Msg:
    """What the oracle knows of one message: the acknowledged write that created it."""

    session: str
    owner: int
    created: Op
    content: dict[str, Any]
    deleted_by_owner: bool = False
    destroyed: bool = False  # an update of it said it is gone


def _text(word: str) -> dict[str, Any]:
    return normalize_message({"role": "user", "content": f"hello {word} there"})


class Worker:
    def __init__(self, url: str, index: int, seed: int) -> None:
        self.store = threadline.connect(url)
        self.index = index
        self.rng = random.Random(seed)
        self.ops: list[Op] = []
        self.msgs: dict[str, Msg] = {}
        self.errors: list[BaseException] = []
        self.counter = 0

    def _word(self) -> str:
        self.counter += 1
        return f"w{self.index}x{self.counter}q"

    def run(self, barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            deadline = time.monotonic() + TIME_CAP
            for n in range(OPS_PER_THREAD):
                if time.monotonic() > deadline:
                    break
                # The last fifth destroys nothing: what it writes must all be there.
                self.step(calm=n > OPS_PER_THREAD * 4 // 5)
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.store.close()

    def step(self, calm: bool = False) -> None:
        rng, store, me = self.rng, self.store, self.index
        session = rng.choice(SESSIONS)
        mine = [i for i, m in self.msgs.items() if m.session == session and not m.deleted_by_owner]
        if rng.random() < 0.1:
            # A read racing the writes sees one state: a dump that loads back, a whole path.
            dump = store.dump_session(APP, session)
            if dump is not None:
                check_dump(dump)
            store.get_path(APP, session)
            return
        roll = rng.random() * (0.92 if calm else 1.0)
        if roll < 0.55:
            word = self._word()
            message = {**_text(word), "id": f"m-{word}"}
            delta = {f"k{me}": self.counter} if rng.random() < 0.5 else None
            start = time.monotonic()
            stored = store.append_messages(APP, session, [message], state_delta=delta)
            op = Op("append", session, start, time.monotonic(), me, [message["id"]], delta)
            self.ops.append(op)
            self.msgs[message["id"]] = Msg(session, me, op, stored[0])
        elif roll < 0.67 and mine:
            target = rng.choice(mine)
            message = {**_text(self._word()), "id": target}
            start = time.monotonic()
            try:
                stored = store.update_message(APP, session, message)
            except MessageNotFoundError:
                self.msgs[target].destroyed = True
                return
            self.ops.append(Op("update", session, start, time.monotonic(), me, [target]))
            self.msgs[target].content = stored
        elif roll < 0.74 and mine:
            target = rng.choice(mine)
            start = time.monotonic()
            store.delete_messages(APP, session, [target])
            self.ops.append(Op("delete_messages", session, start, time.monotonic(), me, [target]))
            self.msgs[target].deleted_by_owner = True
        elif roll < 0.77 and mine:
            target = rng.choice(mine)
            try:
                store.set_head(APP, session, target)
            except MessageNotFoundError:
                self.msgs[target].destroyed = True
        elif roll < 0.79 and not calm:
            start = time.monotonic()
            store.clear_messages(APP, session)
            self.ops.append(Op("clear", session, start, time.monotonic(), me))
        elif roll < 0.92:
            start = time.monotonic()
            store.add_usage(APP, session, 1, 2, 0.5)
            self.ops.append(Op("usage", session, start, time.monotonic(), me))
        elif roll < 0.96:
            start = time.monotonic()
            store.delete_session(APP, session)
            self.ops.append(Op("destroy", session, start, time.monotonic(), me))
        else:
            words = [self._word() for _ in range(rng.randint(1, 3))]
            scratch = threadline.connect(":memory:")
            messages = [{**_text(w), "id": f"m-{w}"} for w in words]
            scratch.append_messages(APP, session, messages)
            dump = scratch.dump_session(APP, session)
            scratch.close()
            assert dump is not None
            start = time.monotonic()
            store.load_sessions([(APP, dump)], replace=True)
            op = Op("destroy", session, start, time.monotonic(), me, [m["id"] for m in messages])
            self.ops.append(op)
            for node in dump.messages:
                self.msgs[node.message["id"]] = Msg(session, me, op, node.message)


def _after(a: Op, b: Op) -> bool:
    """``a`` is surely linearised after ``b``."""
    return a.start > b.end


def _check(url: str, workers: list[Worker]) -> None:
    ops = [op for w in workers for op in w.ops]
    destroyers = {s: [o for o in ops if o.kind == "destroy" and o.session == s] for s in SESSIONS}
    clears = {s: [o for o in ops if o.kind == "clear" and o.session == s] for s in SESSIONS}

    def stable(op: Op, wipes: dict[str, list[Op]] = destroyers) -> bool:
        """No destroyer of the session but ``op`` itself can come after ``op``."""
        return all(d is op or _after(op, d) for d in wipes[op.session])

    def surely_destroyed(op: Op) -> bool:
        wipes = destroyers[op.session] + clears[op.session]
        return any(d is not op and _after(d, op) for d in wipes)

    store = threadline.connect(url)
    try:
        tree: dict[str, dict[str, Any]] = {}
        for s in SESSIONS:
            nodes = store.get_tree(APP, s, limit=100000)
            tree[s] = {node.message["id"]: node for node in nodes}
        msgs = {i: m for w in workers for i, m in w.msgs.items()}
        must_live: list[str] = []
        for message_id, m in msgs.items():
            row = tree[m.session].get(message_id)
            gone = m.deleted_by_owner or surely_destroyed(m.created)
            if gone:
                assert row is None, f"{message_id} of {m.session} outlived its delete"
            elif stable(m.created) and stable(m.created, clears) and not m.destroyed:
                assert row is not None, f"acknowledged {message_id} of {m.session} was lost"
                got = store.get_message(APP, m.session, message_id)
                assert got == m.content, f"{message_id}: {got!r} != {m.content!r}"
                must_live.append(message_id)
            if row is not None:
                assert row.message == store.get_message(APP, m.session, message_id)
        known = set(msgs)
        for s in SESSIONS:
            assert set(tree[s]) <= known, f"{s}: rows nobody wrote: {set(tree[s]) - known}"
        for message_id in must_live[:40]:
            m = msgs[message_id]
            word = text_word(m.content)
            hits = store.search_messages(APP, word, session_id=m.session)
            assert any(h.id == message_id for h in hits), f"search missed {word}"
        for s in SESSIONS:
            _check_session(store, s, tree[s], workers, destroyers[s], stable)
    finally:
        store.close()
    for table, column in (
        ("tl_messages", "session_id"),
        ("tl_message_refs", "session_id"),
        ("tl_state", "owner_id"),
    ):
        extra = " AND t.owner = 'session'" if table == "tl_state" else ""
        orphans = raw_query(
            url,
            f"SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM tl_sessions s "
            f"WHERE s.app = t.app AND s.id = t.{column}){extra}",
        )
        assert orphans[0][0] == 0, f"{table}: {orphans[0][0]} orphan rows"


def text_word(message: dict[str, Any]) -> str:
    text = message["parts"][0]["text"]
    return str(text.split()[1])


def _check_session(
    store: Any,
    s: str,
    nodes: dict[str, Any],
    workers: list[Worker],
    destroyers: list[Op],
    stable: Any,
) -> None:
    info = store.get_session(APP, s)
    dump = store.dump_session(APP, s)
    if info is None:
        assert not nodes, f"{s}: messages without a session"
        assert dump is None
        return
    assert dump is not None
    assert info.message_count == len(nodes), f"{s}: message_count {info.message_count}"
    assert dump.last_seq >= max((n.seq for n in nodes.values()), default=0), f"{s}: last_seq"
    head = store.get_head(APP, s)
    if not nodes:
        assert head is None and dump.head_id is None, f"{s}: head {dump.head_id} of no tree"
    else:
        assert head is not None and head["id"] in nodes, f"{s}: head {dump.head_id} not stored"
        path = store.get_path(APP, s)
        assert path[-1]["id"] == head["id"]
        for parent, child in zip([None, *path], path, strict=False):
            expected = parent["id"] if parent is not None else None
            assert nodes[child["id"]].parent_id == expected, f"{s}: path is not a chain"
        assert store.get_path_length(APP, s) == len(path)
    # State: a thread's own key holds its last delta, when no destroyer can follow it.
    state = store.get_state(APP, s, None)
    for w in workers:
        key = f"k{w.index}"
        deltas = [op for op in w.ops if op.kind == "append" and op.session == s and op.value]
        if deltas and stable(deltas[-1]):
            assert state.get(key) == deltas[-1].value[key], f"{s}: state {key}"
        for before, op in itertools.pairwise(deltas):
            if stable(before) and op.ids[0] in nodes:
                undo = dump.state_undo.get(op.ids[0])
                assert undo == {key: [True, before.value[key]]}, f"{s}: undo of {op.ids[0]}"
    # Usage: between the calls surely after the last destroyer and those not surely before.
    usage = [op for w in workers for op in w.ops if op.kind == "usage" and op.session == s]
    low = sum(1 for u in usage if all(_after(u, d) for d in destroyers))
    high = sum(1 for u in usage if not any(_after(d, u) for d in destroyers))
    assert low <= info.input_tokens <= high, f"{s}: input_tokens {info.input_tokens}"
    assert info.output_tokens == 2 * info.input_tokens


def test_concurrent_writers_agree_with_the_oracle(file_store_url: str) -> None:
    threadline.connect(file_store_url).close()  # create the schema once, before the race
    workers = [Worker(file_store_url, i, SEED + i) for i in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    threads = [threading.Thread(target=w.run, args=(barrier,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    errors = [e for w in workers for e in w.errors]
    if errors:
        raise errors[0]
    assert sum(len(w.ops) for w in workers) > THREADS * 10
    _check(file_store_url, workers)
