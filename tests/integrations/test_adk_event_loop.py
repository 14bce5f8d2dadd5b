"""No storage call of the ADK services runs on the event-loop thread."""

from __future__ import annotations

import functools
import threading
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from threadline.integrations.adk import ThreadlineMemoryService, ThreadlineSessionService
from threadline.store import Store

pytestmark = pytest.mark.asyncio


class RecordingStore:
    """Delegates to a store and records the thread of every method call."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if not callable(attribute):
            return attribute

        @functools.wraps(attribute)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, threading.get_ident()))
            return attribute(*args, **kwargs)

        return recorded


async def test_no_store_call_runs_on_the_event_loop_thread(store: Store) -> None:
    recording = RecordingStore(store)
    service = ThreadlineSessionService(recording)  # type: ignore[arg-type]
    memory = ThreadlineMemoryService(recording)  # type: ignore[arg-type]
    loop_thread = threading.get_ident()

    session = await service.create_session(app_name="app", user_id="u1", state={"user:x": 1})
    content = types.Content(role="user", parts=[types.Part(text="remember the milk")])
    await service.append_event(
        session, Event(author="user", content=content, actions=EventActions(state_delta={"k": 1}))
    )
    await service.get_session(app_name="app", user_id="u1", session_id=session.id)
    await service.list_sessions(app_name="app")
    await service.get_user_state(app_name="app", user_id="u1")
    await memory.add_session_to_memory(session)
    await memory.search_memory(app_name="app", user_id="u1", query="milk")
    await memory.delete_memory(app_name="app", user_id="u1", memory_id=session.events[0].id)
    await service.delete_session(app_name="app", user_id="u1", session_id=session.id)

    called = {name for name, _ in recording.calls}
    assert {"create_session", "append_messages", "get_state", "search_messages"} <= called
    assert [name for name, thread in recording.calls if thread == loop_thread] == []


@pytest.mark.parametrize("given", ["path", "sqlite url", "lazy store"])
async def test_the_services_start_no_thread_and_leave_the_garbage_collector_alone(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """Every statement runs in a thread of the loop's default executor (as every
    ``threadline.aio`` call on a store), never in a thread of the adapter's own, whether it
    is given a path, a URL or a store from ``connect_lazily``; and a library never switches
    its host process's garbage collector (not even while listing thousands of sessions)."""
    import gc
    import sqlite3

    from threadline.store import connect_lazily

    switched: list[str] = []
    monkeypatch.setattr(gc, "disable", lambda: switched.append("disable"))
    monkeypatch.setattr(gc, "enable", lambda: switched.append("enable"))
    statements: list[str] = []
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        # Runs in the thread executing the statement.
        conn.set_trace_callback(lambda _: statements.append(threading.current_thread().name))
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    path = tmp_path / "adk.db"
    target: Any = {
        "path": str(path),
        "sqlite url": f"sqlite:///{path}",
        "lazy store": connect_lazily(path),
    }[given]
    service = ThreadlineSessionService(target)
    memory = ThreadlineMemoryService(target)
    threads_before = {thread.name for thread in threading.enumerate()}
    session = await service.create_session(app_name="app", user_id="u1")
    content = types.Content(role="user", parts=[types.Part(text="hello")])
    await service.append_event(session, Event(author="user", content=content))
    await service.list_sessions(app_name="app")
    await memory.add_session_to_memory(session)
    await memory.search_memory(app_name="app", user_id="u1", query="hello")
    await service.delete_session(app_name="app", user_id="u1", session_id=session.id)
    new_threads = {t.name for t in threading.enumerate()} - threads_before
    await service.close()
    await memory.close()
    if given == "lazy store":
        target.close()  # the user's own store: the services leave it open
    assert statements and {name.split("_")[0] for name in statements} == {"asyncio"}
    assert {name.split("_")[0] for name in new_threads} <= {"asyncio"}
    assert switched == []
