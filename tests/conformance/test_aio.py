"""``threadline.aio``: the async twin follows the sync rules, never touches storage on the event
loop, loses and forks nothing under concurrency, survives cancellation whole, and runs async
compaction end to end."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import random
import threading
from typing import Any

import pytest

import threadline
from threadline import AsyncSession, AsyncSessionManager, Session
from threadline.compaction import create_async_compact_function
from threadline.errors import CompactionError, InvalidMessageError
from threadline.messages import text_of


def test_two_hundred_coroutines_on_twenty_sessions_lose_and_fork_nothing(
    file_store_url: str,
) -> None:
    async def main() -> dict[str, list[str]]:
        async with AsyncSessionManager(file_store_url) as manager:
            await asyncio.gather(
                *(
                    manager.append(f"s{i % 20}", {"role": "user", "content": f"m{i}"})
                    for i in range(200)
                )
            )
            texts = {}
            for n in range(20):
                session = await manager.get_session(f"s{n}")
                history = await session.get_history()
                assert await session.get_path_length() == len(history)  # one linear path
                for parent, child in itertools.pairwise(history):
                    children = await session.get_branches(parent["id"])
                    assert [c["id"] for c in children] == [child["id"]]  # no fork
                assert await manager.get_message_count(f"s{n}") == len(history)
                texts[f"s{n}"] = sorted(text_of(m) for m in history)
            return texts

    expected = {f"s{n}": sorted(f"m{i}" for i in range(n, 200, 20)) for n in range(20)}
    assert asyncio.run(main()) == expected  # every message once, in its own session


def test_no_storage_call_runs_on_the_event_loop_thread(store_url: str) -> None:
    store = threadline.connect(store_url)
    threads: list[int] = []
    names: list[str] = []
    for name in [n for n in dir(store) if not n.startswith("_") and callable(getattr(store, n))]:
        method = getattr(store, name)

        def recording(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
            threads.append(threading.get_ident())
            names.append(_name)
            return _method(*args, **kwargs)

        setattr(store, name, recording)

    async def main() -> int:
        session = AsyncSession.create(store).for_session("s").with_context("memory")
        await session.append_message({"role": "user", "content": "hello there"})
        await session.append_messages([{"role": "assistant", "content": "hi"}])
        await session.get_history()
        await session.get_history(limit=1)
        await session.search("hello")
        await session.update_state({"topic": "greetings"})
        await session.get_state("topic")
        await session.freeze_system_prompt()
        tools = await session.tools()
        await tools.execute("set_context", {"label": "memory", "content": "Says hello."})
        manager = AsyncSessionManager(store)
        await manager.list()
        await manager.get_or_create("other")
        await manager.append("other", {"role": "user", "content": "x"})
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    on_loop = [n for n, t in zip(names, threads, strict=True) if t == loop_thread]
    store.close()
    assert threads and on_loop == []


def test_a_cancelled_append_is_stored_whole_or_not_at_all(file_store_url: str) -> None:
    rng = random.Random(3)
    batch = [{"role": "user", "content": f"part {i}"} for i in range(3)]

    async def main() -> tuple[int, list[Any]]:
        session = AsyncSession.create(file_store_url).for_session("c")
        cancelled = 0
        for _ in range(1000):
            task = asyncio.create_task(session.append_messages([dict(m) for m in batch]))
            await asyncio.sleep(rng.choice([0, 0, 0.0001, 0.001]))
            cancelled += task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.sleep(0.2)  # a cancelled await's thread may still be committing
        history = await session.get_history()
        await session.close()
        return cancelled, history

    cancelled, history = asyncio.run(main())
    assert cancelled > 0
    texts = [text_of(m) for m in history]
    assert len(texts) % 3 == 0  # every batch whole: never one or two of its three messages
    assert texts == ["part 0", "part 1", "part 2"] * (len(texts) // 3)


@pytest.mark.postgres
def test_cancelled_appends_return_every_connection_to_the_pool(pg_dsn: str) -> None:
    """1,000 randomized cancellations of appends on PostgreSQL: each batch is whole or absent,
    and the pool ends at its idle size with every connection idle (none leaked or lost)."""
    rng = random.Random(11)
    store = threadline.connect(pg_dsn + "&pool_min_size=2&pool_max_size=2")
    pool = store._pool  # type: ignore[attr-defined]
    batch = [{"role": "user", "content": f"part {i}"} for i in range(3)]

    async def settled() -> tuple[int, int, int]:
        for _ in range(200):  # a cancelled await's thread may still be committing
            stats = pool.stats()
            if stats == (2, 2, 0):
                break
            await asyncio.sleep(0.05)
        return pool.stats()

    async def main() -> tuple[tuple[int, int, int], tuple[int, int, int], int, list[Any]]:
        session = AsyncSession.create(store).for_session("c")
        await session.get_history()
        idle = await settled()
        cancelled = 0
        for _ in range(1000):
            task = asyncio.create_task(session.append_messages([dict(m) for m in batch]))
            await asyncio.sleep(rng.choice([0, 0, 0.0001, 0.0005, 0.001, 0.003]))
            cancelled += task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        after = await settled()
        return idle, after, cancelled, await session.get_history()

    idle, after, cancelled, history = asyncio.run(main())
    store.close()
    assert cancelled > 100
    assert idle == (2, 2, 0)
    assert after == idle  # back to its idle size, every connection idle, nobody waiting
    texts = [text_of(m) for m in history]
    assert texts == ["part 0", "part 1", "part 2"] * (len(texts) // 3)


def test_cancelled_appends_leave_every_sqlite_connection_idle(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SQLite twin of the pool check: after 1,000 randomized cancellations (appends and
    reads), every connection the store opened is out of any transaction, each reader is back in
    the store's idle list, and the writer lock is free."""
    import sqlite3

    opened: list[sqlite3.Connection] = []
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    store = threadline.connect(f"sqlite:///{tmp_path / 'c.db'}")
    rng = random.Random(5)
    batch = [{"role": "user", "content": f"part {i}"} for i in range(3)]

    async def main() -> int:
        session = AsyncSession.create(store).for_session("c")
        cancelled = 0
        for n in range(1000):
            call = session.get_history() if n % 4 == 3 else session.append_messages(
                [dict(m) for m in batch])  # fmt: skip
            task = asyncio.ensure_future(call)
            await asyncio.sleep(rng.choice([0, 0, 0.0001, 0.0005, 0.001]))
            cancelled += task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        return cancelled

    cancelled = asyncio.run(main())  # returns once every cancelled await's thread has finished
    history = Session.create(store).for_session("c").get_history()
    assert cancelled > 100
    texts = [text_of(m) for m in history]
    assert texts == ["part 0", "part 1", "part 2"] * (len(texts) // 3)
    readers = [c for c in opened if c is not store._conn]  # type: ignore[attr-defined]
    assert readers and not any(c.in_transaction for c in opened)
    idle = {id(r.conn) for r in store._idle_readers}  # type: ignore[attr-defined]
    assert idle == {id(c) for c in readers}  # every reader back, none lost or leaked
    assert store._lock.acquire(blocking=False)  # type: ignore[attr-defined]
    store._lock.release()  # type: ignore[attr-defined]
    store.close()


def test_async_compaction_runs_end_to_end(store: Any) -> None:
    calls: list[str] = []

    async def summarize(prompt: str) -> str:
        calls.append(prompt)
        await asyncio.sleep(0)
        return "Earlier: a long chat about trains."

    fn = create_async_compact_function(
        summarize, protect_head=0, tail_token_budget=30, min_tail_messages=1
    )

    async def main() -> list[str]:
        session = AsyncSession.create(store).for_session("long").on_compaction(fn)
        session.compact_after(60)
        for i in range(12):
            await session.append_message(
                {"role": "user", "content": f"trains and stations {i} " * 3}
            )
        return [text_of(m) for m in await session.get_history()]

    texts = asyncio.run(main())
    assert calls and texts[0] == "Earlier: a long chat about trains."
    assert len(store.get_path("default", "long")) == 12  # the originals stay


def test_the_sync_session_refuses_an_async_compaction_function_when_registered() -> None:
    async def summarize(history: Any, context: Any = None) -> None:
        return None

    with pytest.raises(CompactionError, match="AsyncSession"):
        Session.create(":memory:").on_compaction(summarize)
    with pytest.raises(CompactionError, match="AsyncSession"):
        threadline.SessionManager(":memory:").on_compaction(
            create_async_compact_function(lambda prompt: asyncio.sleep(0, "x"))
        )


def test_errors_are_the_sync_ones() -> None:
    async def main() -> None:
        session = AsyncSession.create(":memory:")
        with pytest.raises(InvalidMessageError):
            await session.append_message("not a message")

    asyncio.run(main())


def test_the_default_function_around_an_async_summariser_is_refused_by_the_sync_session() -> None:
    # create_compact_function(<async summariser>) (e.g. summarizers.openai(AsyncOpenAI(), ...))
    # could only fail on every append in a sync session: refused when registered.
    async def summarize(prompt: str) -> str:
        return "## Topic\nearlier"

    fn = threadline.create_compact_function(summarize)
    with pytest.raises(CompactionError, match="AsyncSession"):
        Session.create(":memory:").on_compaction(fn)
    with pytest.raises(CompactionError, match="AsyncSession"):
        threadline.SessionManager(":memory:").on_compaction(fn)
    with pytest.raises(CompactionError, match="AsyncRunner"):
        threadline.Runner(threadline.SessionManager(":memory:"), lambda s, m, t: "ok", memory=fn)


def test_the_async_twins_await_the_default_function_around_an_async_summariser(
    store: Any,
) -> None:
    prompts: list[str] = []

    async def summarize(prompt: str) -> str:
        prompts.append(prompt)
        await asyncio.sleep(0)
        return "## Topic\nearlier"

    fn = threadline.create_compact_function(summarize, protect_head=0, tail_token_budget=30,
                                            min_tail_messages=1)  # fmt: skip
    errors: list[BaseException] = []

    async def main() -> tuple[list[str], list[str]]:
        session = (
            AsyncSession.create(store).for_session("a").on_compaction(fn).compact_after(60)
            .on_compaction_error(errors.append)
        )  # fmt: skip
        for i in range(8):
            await session.append_message({"role": "user", "content": f"trains {i} " * 6})
        manager = (
            AsyncSessionManager(store).on_compaction(fn).compact_when(4, keep=2)
            .on_compaction_error(errors.append)
        )  # fmt: skip
        for i in range(5):
            await manager.append("b", {"role": "user", "content": f"boats {i}"})
        return (
            [text_of(m) for m in await session.get_history()],
            [text_of(m) for m in await manager.get_history("b")],
        )

    by_session, by_manager = asyncio.run(main())
    assert errors == [] and prompts
    assert by_session[0] == "## Topic\nearlier" and len(store.get_path("default", "a")) == 8
    assert by_manager == ["## Topic\nearlier", "boats 3", "boats 4"]


def test_an_async_function_on_the_async_manager_replaces_a_sync_one() -> None:
    ran: list[str] = []

    def sync_fn(history: Any) -> None:
        ran.append("sync")

    async def async_fn(history: Any) -> None:
        ran.append("async")

    async def main() -> None:
        manager = AsyncSessionManager(":memory:").on_compaction(sync_fn).compact_when(1, 0)
        manager.on_compaction(async_fn)
        await manager.append("s", {"role": "user", "content": "a"})
        await manager.append("s", {"role": "user", "content": "b"})
        await manager.close()

    asyncio.run(main())
    assert ran == ["async"]


class _AsyncNotes:
    """A writable context provider with async methods (e.g. backed by an async HTTP API)."""

    def __init__(self) -> None:
        self.text = "Likes tea."
        self.threads: set[int] = set()

    async def get(self) -> str:
        self.threads.add(threading.get_ident())
        await asyncio.sleep(0)
        return self.text

    async def set(self, content: str) -> None:
        self.threads.add(threading.get_ident())
        await asyncio.sleep(0)
        self.text = content


def test_async_context_providers_work_on_the_async_session(store: Any) -> None:
    notes = _AsyncNotes()

    async def main() -> tuple[str, str, int]:
        session = AsyncSession.create(store).for_session("p").with_context("notes", provider=notes)
        prompt = await session.freeze_system_prompt()
        tools = await session.tools()
        answer = await tools.execute("set_context", {"label": "notes", "content": "Likes coffee."})
        await session.append_message({"role": "user", "content": "hi"})
        return prompt, answer, threading.get_ident()

    prompt, answer, loop_thread = asyncio.run(main())
    assert "Likes tea." in prompt and answer.startswith("Written to notes")
    assert notes.text == "Likes coffee." and notes.threads == {loop_thread}  # awaited on the loop
    sync = Session.create(store).for_session("p").with_context("notes", provider=_AsyncNotes())
    with pytest.raises(threadline.ThreadlineError, match=r"threadline\.aio"):
        sync.freeze_system_prompt()  # the sync session cannot await it


class _ExecutorNotes:
    """An async provider whose coroutine needs the loop's default executor itself: blocking
    client work via ``asyncio.to_thread``, and a ``threadline.aio`` call of its own."""

    def __init__(self, manager: AsyncSessionManager) -> None:
        self.manager = manager

    async def get(self) -> str:
        text = await asyncio.to_thread(lambda: "Likes tea.")
        await self.manager.get_state("elsewhere")  # threadline.aio: a default-executor call
        return text

    async def set(self, content: str) -> None:
        await asyncio.to_thread(lambda: None)


@pytest.mark.parametrize("calls", [2, 12])
def test_async_providers_using_the_default_executor_do_not_hang(store: Any, calls: int) -> None:
    """A call meeting an async provider waits for the loop to run its coroutine; that wait must
    not hold a thread of the loop's default executor, which the coroutine may need: with a
    two-thread executor, two (or twelve) concurrent calls would hold all of it for ever."""

    async def main() -> list[str]:
        asyncio.get_running_loop().set_default_executor(
            concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="default")
        )
        manager = AsyncSessionManager(store)
        sessions = [
            AsyncSession.create(store)
            .for_session(f"p{i}")
            .with_context("notes", provider=_ExecutorNotes(manager))
            for i in range(calls)
        ]
        frozen = asyncio.gather(*(s.freeze_system_prompt() for s in sessions))
        return await asyncio.wait_for(frozen, 15)

    prompts = asyncio.run(main())
    assert len(prompts) == calls and all("Likes tea." in p for p in prompts)
