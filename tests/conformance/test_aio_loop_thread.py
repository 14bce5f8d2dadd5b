"""No database call of ``threadline.aio`` runs on the event loop thread (spec §12), recorded
where the database is actually reached: every SQL statement SQLite runs (a trace callback on
every connection the store opens) and every round trip of a psycopg connection
(``Connection.wait``, which each execute, commit and rollback goes through), on every backend.
The workload covers the async sessions, managers, tools, state views, async compaction and
``AsyncRunner`` turns (memory, hooks, tool calls, overflow)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import threadline
from threadline import AsyncSession, AsyncSessionManager, CompactResult, Hooks
from threadline.aio import AsyncRunner
from threadline.compaction import create_async_compact_function
from threadline.messages import text_of


class DbCalls:
    """Threads of the database calls made while recording (thread id, what ran)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def add(self, what: str) -> None:
        with self._lock:
            self.calls.append((threading.get_ident(), what))

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def on(self, thread: int) -> list[str]:
        with self._lock:
            return [what for t, what in self.calls if t == thread]


@pytest.fixture
def db_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[DbCalls]:
    recorder = DbCalls()
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        conn.set_trace_callback(recorder.add)  # called in the thread running the statement
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    try:
        import psycopg
    except ImportError:  # pragma: no cover - the dev extra installs it
        psycopg = None
    if psycopg is not None:
        real_wait = psycopg.Connection.wait

        def wait(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.add("postgres round trip")
            return real_wait(self, gen, *args, **kwargs)

        monkeypatch.setattr(psycopg.Connection, "wait", wait)
    yield recorder


def _tool_model(system: str, messages: list[Any], tools: Any) -> Any:
    """Calls set_context on a user message, then answers (async: the runner awaits it)."""
    if messages[-1]["role"] == "user":
        args = json.dumps({"label": "memory", "content": f"Said: {text_of(messages[-1])}"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "set_context", "arguments": args}}]}  # fmt: skip
    return "Noted."


async def _workload(store: threadline.Store) -> None:
    async def summarize(history: list[Any], context: Any = None) -> CompactResult:
        await asyncio.sleep(0)
        return CompactResult(history[0]["id"], history[-1]["id"], "Earlier.")

    session = (
        AsyncSession.create(store).for_session("s").for_user("u").with_context("memory")
        .with_cached_prompt().on_compaction(summarize).compact_after(10**6)
    )  # fmt: skip
    first = await session.append_message({"role": "user", "content": "hello there"})
    await session.append_messages([{"role": "assistant", "content": "hi", "metadata": {
        "branch": "root.a", "invocationId": "inv-1"}}])  # fmt: skip
    for window in ({}, {"limit": 1}, {"runs": 1}, {"branch": "root.a"}, {"after": 0}):
        await session.get_history(**window)
    await session.get_message(first["id"])
    await session.get_path_length()
    await session.get_branches(first["id"])
    await session.search("hello")
    await session.update_state({"topic": "greetings", "user:lang": "en"})
    await session.get_state("topic")
    view = await session.state_view()
    view.set("temp:n", 1)
    view.set("mood", "good")
    await view.commit()
    await session.freeze_system_prompt()
    await session.refresh_system_prompt()
    tools = await session.tools()
    await tools.execute("set_context", {"label": "memory", "content": "Says hello."})
    await session.get_context_blocks()
    await session.compact()
    await session.get_compactions()
    await session.checkout(first["id"])
    await session.append_message({"role": "user", "content": "a branch"})

    manager = (
        AsyncSessionManager(store, max_messages=4).with_context("memory")
        .on_compaction(create_async_compact_function(lambda prompt: asyncio.sleep(0, "S")))
        .compact_when(6, keep=2).with_searchable_history()
    )  # fmt: skip
    await manager.create(session_id="m", user_id="u")
    await manager.get("m")
    await manager.get_or_create("other")
    await manager.list()
    await manager.append("m", {"role": "user", "content": "x", "metadata": {
        "invocationId": "inv-x"}})  # fmt: skip
    await manager.append_all("m", [{"role": "assistant", "content": f"y{i}"} for i in range(6)])
    await manager.get_history("m")
    await manager.get_message_count("m")
    await manager.search("x")
    history = await manager.get_history("m", limit=None)
    await manager.fork("m", history[-1]["id"])
    await manager.update_state("m", {"k": 1})
    await manager.get_state("m")
    await manager.rewind("m", before_invocation_id="inv-x")
    manager_tools = await manager.tools()
    await manager_tools.execute("session_search", {"query": "x"})
    await manager.delete("other")

    async def before(ctx: Any) -> None:
        ctx.set_state("runs", ctx.get_state("runs", 0) + 1)

    async def amodel(system: str, messages: list[Any], tools: Any) -> Any:
        return _tool_model(system, messages, tools)

    overflowed: list[int] = []
    memory = create_async_compact_function(lambda prompt: asyncio.sleep(0, "Gone."))
    for model, hooks in (
        (amodel, Hooks(before_run=before)),
        (_tool_model, Hooks(after_run=lambda ctx: ctx.get_state("runs"))),
    ):
        runner = AsyncRunner(
            AsyncSessionManager(store, app_name="turns").with_context("memory"), model,
            runs=1, max_context_tokens=2_000, memory=memory, hooks=hooks,
        ).on_overflow(overflowed.append)  # fmt: skip
        for text in ("one", "two", "three"):
            await runner.arun(text, session_id="t", user_id="u")
        await runner.arun("a new session")
    assert overflowed  # memory and on_overflow ran
    await manager.forget_user("u")
    await session.close()


def test_no_database_call_runs_on_the_event_loop_thread(store_url: str, db_calls: DbCalls) -> None:
    store = threadline.connect(store_url)  # opened while recording: its connections traced

    async def main() -> tuple[list[str], int, int]:
        loop_thread = threading.get_ident()  # also the thread that opened the store, before
        db_calls.clear()
        await _workload(store)
        on_loop = db_calls.on(loop_thread)
        recorded = len(db_calls.calls)
        # The recorder would see a call made on the loop: a sync read here is caught.
        AsyncSession.create(store).for_session("s").sync.get_history()
        return on_loop, recorded, len(db_calls.on(loop_thread)) - len(on_loop)

    on_loop, recorded, caught = asyncio.run(main())
    store.close()
    assert recorded > 100 and caught > 0  # the workload reached the database; the probe works
    assert on_loop == []


def test_opening_a_store_from_a_url_runs_off_the_loop_too(
    store_url: str, db_calls: DbCalls
) -> None:
    """``AsyncSessionManager(url)``, ``AsyncSession.create(url)``, the Agents SDK adapter's
    ``ThreadlineSession(sid, url)`` and the ADK services are plain constructors called on the
    loop: the database is opened (connections, schema migration) by their first storage call,
    in a worker thread."""
    pytest.importorskip("google.adk")
    from google.adk.events.event import Event
    from google.genai import types

    from threadline.integrations.adk import ThreadlineMemoryService, ThreadlineSessionService
    from threadline.integrations.openai_agents import ThreadlineSession

    async def main() -> tuple[list[str], int]:
        loop_thread = threading.get_ident()
        async with AsyncSessionManager(store_url, app_name="a") as manager:
            await manager.append("s", {"role": "user", "content": "hello"})
            assert [text_of(m) for m in await manager.get_history("s")] == ["hello"]
        session = AsyncSession.create(store_url).for_app("b").for_session("s")
        await session.append_message({"role": "user", "content": "hi"})
        await session.close()
        agents = ThreadlineSession("s", store_url)
        await agents.add_items([{"role": "user", "content": "hey"}])
        assert len(await agents.get_items()) == 1
        agents.close()
        sessions, memory = ThreadlineSessionService(store_url), ThreadlineMemoryService(store_url)
        adk = await sessions.create_session(app_name="adk", user_id="u1")
        said = types.Content(role="user", parts=[types.Part(text="remember the milk")])
        await sessions.append_event(adk, Event(author="user", content=said))
        await memory.add_session_to_memory(adk)
        assert len(
            (await memory.search_memory(app_name="adk", user_id="u1", query="milk")).memories
        )
        await sessions.close()
        await memory.close()
        return db_calls.on(loop_thread), len(db_calls.calls)

    on_loop, recorded = asyncio.run(main())
    assert recorded > 10 and on_loop == []


def test_a_bad_url_still_fails_at_construction() -> None:
    for bad in ("mysql://db/x", "sqlite:///x.db?bogus=1", ""):
        with pytest.raises(ValueError):
            AsyncSessionManager(bad)
        with pytest.raises(ValueError):
            AsyncSession.create(bad)
