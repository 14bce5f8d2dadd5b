"""The ADK adapter's bookkeeping (head id + exact ``last_update_time`` of each session) is
threadline-internal state: written in the same transaction as each event's message, read by
the adapter's listing, and seen by none of threadline's own reads of state (``Session.state``,
``Store.get_state``, listings, export) nor writable through its public state API.

Every test runs on a SQLite file, SQLite in memory and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions

import threadline
from threadline import SessionManager
from threadline._state import INTERNAL_PREFIX
from threadline.errors import InvalidArgumentError
from threadline.export import export_sessions, import_sessions
from threadline.integrations.adk import ThreadlineSessionService
from threadline.store import Store

APP = "my_app"
ADK_STATE = {"app:a": 1, "user:b": 2, "c": 3, "d": None}
LEGACY = "__adk_last_update__"  # where versions before this fix kept the bookkeeping


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def adk_session(store: Store, *, events: int = 2) -> Any:
    """An ADK session ``u1/s1`` with ``events`` events carrying state deltas."""
    service = ThreadlineSessionService(store)
    session = _run(service.create_session(app_name=APP, user_id="u1", session_id="s1"))
    for i in range(events):
        delta = dict(ADK_STATE) if i == 0 else {"c": 3 + i}
        event = Event(invocation_id=f"i{i}", author="user", actions=EventActions(state_delta=delta))
        _run(service.append_event(session, event))
    return service, session


def test_threadline_reads_show_only_adks_own_keys(store: Store) -> None:
    adk_session(store)
    want = {"app:a": 1, "user:b": 2, "c": 4, "d": {"__adk_none__": True}}
    assert store.get_state(APP, "u1/s1", "u1") == want
    session = threadline.Session.create(store).for_app(APP).for_session("u1/s1").for_user("u1")
    assert dict(session.state) == want
    assert SessionManager(store, APP).get_session("u1/s1", user_id="u1").get_state("c") == 4
    (listing,) = store.list_sessions_with_state(APP).sessions
    assert listing.state == {"c": 4, "d": {"__adk_none__": True}}
    assert listing.to_dict()["state"] == listing.state
    assert not any(key.startswith(INTERNAL_PREFIX) for key in repr(listing).split("'"))


def test_export_of_an_adk_session_holds_only_adks_own_keys(store: Store) -> None:
    adk_session(store)
    (record,) = export_sessions(store, APP)
    assert record["state"] == {"c": 4, "d": {"__adk_none__": True}}
    assert record["user"]["state"] == {"user:b": 2}
    assert record["app_scope"]["state"] == {"app:a": 1}
    text = json.dumps(record)
    assert INTERNAL_PREFIX not in text and LEGACY not in text  # nor in the undo records


def test_the_adapter_still_reads_its_bookkeeping_and_lists_exactly(store: Store) -> None:
    service, session = adk_session(store)
    (listing,) = store.list_sessions_with_state(APP).sessions
    assert listing.internal == {
        INTERNAL_PREFIX + "adk": [session.events[-1].id, session.last_update_time]
    }
    (listed,) = _run(service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert listed.last_update_time == session.last_update_time
    got = _run(service.get_session(app_name=APP, user_id="u1", session_id="s1"))
    assert got == session and "d" in got.state and got.state["d"] is None


def test_public_state_writes_refuse_internal_keys(store: Store) -> None:
    adk_session(store)
    key = INTERNAL_PREFIX + "adk"
    session = threadline.Session.create(store).for_app(APP).for_session("u1/s1").for_user("u1")
    with pytest.raises(InvalidArgumentError, match="reserved"):
        session.update_state({key: None})
    with pytest.raises(InvalidArgumentError, match="reserved"):
        session.append_message({"role": "user", "content": "hi"}, state_delta={key: 1})
    with pytest.raises(InvalidArgumentError, match="reserved"):
        session.state_view().set(key, 1)
    with pytest.raises(InvalidArgumentError, match="reserved"):
        SessionManager(store, APP).create(session_id="x", state={key: 1})
    (record,) = export_sessions(store, APP)
    record["state"][key] = [None, 0.0]  # an import may not write one either
    with pytest.raises(InvalidArgumentError):
        import_sessions(store, [record], replace=True)
    assert store.list_sessions_with_state(APP).sessions[0].internal[key][1] > 0


def test_deleting_and_forgetting_remove_the_internal_keys(store: Store) -> None:
    service, _ = adk_session(store)
    _run(service.delete_session(app_name=APP, user_id="u1", session_id="s1"))
    store.touch_session(APP, "u1/s1", user_id="u1")
    assert store.list_sessions_with_state(APP).sessions[0].internal == {}
    store.delete_session(APP, "u1/s1")
    adk_session(store, events=1)
    assert store.forget_user(APP, "u1") == 1
    store.touch_session(APP, "u1/s1", user_id="u1")
    assert store.list_sessions_with_state(APP).sessions[0].internal == {}


def test_rewind_leaves_internal_keys_alone_and_the_listing_stays_exact(store: Store) -> None:
    service, session = adk_session(store, events=3)
    store.rewind(APP, "u1/s1", session.events[-1].id)
    assert INTERNAL_PREFIX + "adk" not in store.get_state(APP, "u1/s1", "u1")
    got = _run(service.get_session(app_name=APP, user_id="u1", session_id="s1"))
    (listed,) = _run(service.list_sessions(app_name=APP)).sessions
    assert listed.last_update_time == got.last_update_time == session.events[-2].timestamp


def test_sessions_written_with_the_old_key_read_correctly_then_lose_it(store: Store) -> None:
    _, session = adk_session(store, events=1)
    last = [session.events[-1].id, session.last_update_time]
    # What an earlier version stored: the bookkeeping as a plain session key, no internal key.
    store.update_state(APP, "u1/s1", "u1", {LEGACY: last, INTERNAL_PREFIX + "adk": None})
    fresh = ThreadlineSessionService(store)
    (listed,) = _run(fresh.list_sessions(app_name=APP)).sessions
    assert listed.state == session.state and listed.last_update_time == session.last_update_time
    got = _run(fresh.get_session(app_name=APP, user_id="u1", session_id="s1"))
    assert got == session and LEGACY not in got.state
    event = Event(invocation_id="i9", author="user", actions=EventActions(state_delta={"e": 1}))
    _run(fresh.append_event(got, event))
    assert LEGACY not in store.get_state(APP, "u1/s1", "u1")
    (listed,) = _run(fresh.list_sessions(app_name=APP)).sessions
    assert listed.last_update_time == event.timestamp


@pytest.mark.parametrize(
    "key", [INTERNAL_PREFIX + "adk", INTERNAL_PREFIX + "anything", LEGACY], ids=repr
)
def test_adk_state_deltas_naming_reserved_keys_are_refused(store: Store, key: str) -> None:
    # Amendment 20: refused with a typed error before anything is applied or stored; the
    # session, its bookkeeping and its listing stay as they were.
    service = ThreadlineSessionService(store)
    session = _run(service.create_session(app_name=APP, user_id="u1", session_id="s1"))
    _run(service.append_event(session, Event(author="user", invocation_id="i0")))
    before_listed = _run(service.list_sessions(app_name=APP, user_id="u1")).sessions
    bad = Event(author="user", invocation_id="i1", actions=EventActions(state_delta={key: 1}))
    with pytest.raises(InvalidArgumentError, match="reserved"):
        _run(service.append_event(session, bad))
    assert len(session.events) == 1 and key not in session.state
    again = _run(service.get_session(app_name=APP, user_id="u1", session_id="s1"))
    assert again is not None and len(again.events) == 1 and again.state == {}
    assert _run(service.list_sessions(app_name=APP, user_id="u1")).sessions == before_listed
    assert key not in store.get_state(APP, "u1/s1", "u1")
    with pytest.raises(InvalidArgumentError, match="reserved"):
        _run(service.create_session(app_name=APP, user_id="u1", session_id="s2", state={key: 1}))
    assert _run(service.get_session(app_name=APP, user_id="u1", session_id="s2")) is None
