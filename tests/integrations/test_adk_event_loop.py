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
async def test_sqlite_writes_go_through_the_single_writer_thread(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """On SQLite the service writes in its one writer thread, whether it is given a path, a
    URL or a store from ``connect_lazily`` (told apart by its URL, without opening it)."""
    import sqlite3

    from threadline.store import connect_lazily

    writes: list[str] = []
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)

        def trace(statement: str) -> None:
            if statement.lstrip().upper().startswith("INSERT"):
                writes.append(threading.current_thread().name)

        conn.set_trace_callback(trace)  # runs in the thread executing the statement
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    path = tmp_path / "adk.db"
    target: Any = {
        "path": str(path),
        "sqlite url": f"sqlite:///{path}",
        "lazy store": connect_lazily(path),
    }[given]
    service = ThreadlineSessionService(target)
    session = await service.create_session(app_name="app", user_id="u1")
    content = types.Content(role="user", parts=[types.Part(text="hello")])
    await service.append_event(session, Event(author="user", content=content))
    await service.close()
    if given == "lazy store":
        target.close()  # the user's own store: the service leaves it open
    assert writes and {name.split("_")[0] for name in writes} == {"threadline-adk-writer"}
