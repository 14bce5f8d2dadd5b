"""``ThreadlineSessionService`` against ADK's session-service contract.

The behaviours are those of google/adk-python ``tests/unittests/sessions/test_session_service.py``
(the tests taking the shared ``session_service`` fixture of ``_conformance.py``), restated here
one test per behaviour, plus what ``DatabaseSessionService`` adds (stale writers, sessions that
are gone, values JSON cannot hold). Every test runs on each threadline backend: a SQLite file,
SQLite in memory and PostgreSQL (skipped without ``THREADLINE_TEST_PG_DSN``).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest
import pytest_asyncio
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

import threadline
from threadline._state import INTERNAL_PREFIX
from threadline.errors import InvalidArgumentError
from threadline.integrations.adk import (
    ThreadlineSessionService,
    event_to_message,
    message_to_event,
    threadline_session_id,
)
from threadline.store import Store

pytestmark = pytest.mark.asyncio

APP = "my_app"


@pytest.fixture
def service(store: Store) -> ThreadlineSessionService:
    return ThreadlineSessionService(store)


def delta_event(delta: dict[str, Any], **fields: Any) -> Event:
    return Event(
        invocation_id="inv1", author="user", actions=EventActions(state_delta=delta), **fields
    )


async def reload(service: ThreadlineSessionService, user: str, sid: str, **config: Any) -> Any:
    cfg = GetSessionConfig(**config) if config else None
    return await service.get_session(app_name=APP, user_id=user, session_id=sid, config=cfg)


# -- create, get, delete ------------------------------------------------------------------------


async def test_get_session_of_an_unknown_id_returns_none(service: ThreadlineSessionService) -> None:
    assert await reload(service, "u1", "123") is None


async def test_created_session_has_its_ids_state_and_a_past_update_time(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", state={"key": "value"})
    assert (session.app_name, session.user_id, session.state) == (APP, "u1", {"key": "value"})
    assert session.id
    assert isinstance(session.last_update_time, float)
    assert session.last_update_time <= time.time()


async def test_get_session_returns_an_object_equal_to_the_created_one(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", state={"key": "value"})
    assert await reload(service, "u1", session.id) == session


async def test_deleted_session_is_gone(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    assert await reload(service, "u1", session.id) is None


async def test_deleting_an_unknown_session_is_a_no_op(service: ThreadlineSessionService) -> None:
    await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.delete_session(app_name=APP, user_id="u1", session_id="other")
    await service.delete_session(app_name=APP, user_id="u2", session_id="s1")
    await service.delete_session(app_name="other_app", user_id="u1", session_id="s1")
    assert await reload(service, "u1", "s1") is not None


async def test_creating_an_existing_id_raises_already_exists(
    service: ThreadlineSessionService,
) -> None:
    await service.create_session(app_name=APP, user_id="u1", session_id="existing")
    with pytest.raises(AlreadyExistsError):
        await service.create_session(app_name=APP, user_id="u1", session_id="existing")


async def test_a_padded_duplicate_id_raises_and_keeps_the_original(
    service: ThreadlineSessionService,
) -> None:
    await service.create_session(app_name=APP, user_id="u1", session_id="s1", state={"k": "orig"})
    with pytest.raises(AlreadyExistsError):
        await service.create_session(
            app_name=APP, user_id="u1", session_id="  s1  ", state={"k": "x"}
        )
    assert (await reload(service, "u1", "s1")).state == {"k": "orig"}


async def test_a_padded_id_reaches_the_same_session_on_create_get_and_delete(
    service: ThreadlineSessionService,
) -> None:
    created = await service.create_session(
        app_name=APP, user_id="u1", session_id="order-42\n", state={"cart": "book"}
    )
    assert created.id == "order-42"
    got = await reload(service, "u1", "order-42\n")
    assert got is not None and got.id == "order-42" and got.state["cart"] == "book"
    await service.delete_session(app_name=APP, user_id="u1", session_id="order-42\n")
    assert await reload(service, "u1", "order-42") is None


async def test_a_blank_id_gets_a_generated_one(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="   ")
    assert session.id.strip() == session.id and session.id


async def test_the_same_id_under_two_users_is_two_sessions(
    service: ThreadlineSessionService,
) -> None:
    first = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(first, Event(invocation_id="inv1", author="user"))
    await service.create_session(app_name=APP, user_id="u2", session_id="s1")
    second = await reload(service, "u2", "s1")
    assert second.user_id == "u2" and second.events == []
    assert len((await reload(service, "u1", "s1")).events) == 1


async def test_two_concurrent_creates_of_one_id_let_exactly_one_win(
    service: ThreadlineSessionService,
) -> None:
    for round_ in range(3):
        sid = f"race-{round_}"
        results = await asyncio.gather(
            *(service.create_session(app_name=APP, user_id="u1", session_id=sid) for _ in "ab"),
            return_exceptions=True,
        )
        (winner,) = [r for r in results if isinstance(r, Session)]
        (loser,) = [r for r in results if isinstance(r, BaseException)]
        assert isinstance(loser, AlreadyExistsError) and sid in str(loser)
        assert (await reload(service, "u1", sid)) == winner


async def test_user_ids_with_slashes_do_not_collide(service: ThreadlineSessionService) -> None:
    await service.create_session(app_name=APP, user_id="a/b", session_id="c", state={"k": 1})
    await service.create_session(app_name=APP, user_id="a", session_id="b/c", state={"k": 2})
    assert (await reload(service, "a/b", "c")).state == {"k": 1}
    assert (await reload(service, "a", "b/c")).state == {"k": 2}


# -- listing ------------------------------------------------------------------------------------


async def test_list_sessions_returns_every_session_of_the_user_with_its_state(
    service: ThreadlineSessionService,
) -> None:
    ids = [f"session{i}" for i in range(5)]
    for sid in ids:
        await service.create_session(app_name=APP, user_id="u1", session_id=sid, state={"key": sid})
    listed = (await service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert {s.id for s in listed} == set(ids)
    assert all(s.state == {"key": s.id} and s.events == [] for s in listed)


async def test_list_sessions_without_a_user_lists_every_user(
    service: ThreadlineSessionService,
) -> None:
    for user, sid in (("u1", "s1a"), ("u1", "s1b"), ("u2", "s2a")):
        await service.create_session(app_name=APP, user_id=user, session_id=sid, state={"k": sid})
    one = (await service.list_sessions(app_name=APP, user_id="u1")).sessions
    two = (await service.list_sessions(app_name=APP, user_id="u2")).sessions
    every = (await service.list_sessions(app_name=APP, user_id=None)).sessions
    assert sorted(s.id for s in one) == ["s1a", "s1b"]
    assert [s.id for s in two] == ["s2a"]
    assert {(s.user_id, s.id): s.state for s in every} == {
        ("u1", "s1a"): {"k": "s1a"},
        ("u1", "s1b"): {"k": "s1b"},
        ("u2", "s2a"): {"k": "s2a"},
    }


async def test_an_empty_user_id_is_a_user_like_any_other(service: ThreadlineSessionService) -> None:
    # ADK's contract (test_list_sessions_with_empty_user_id_lists_only_that_user): "" is a
    # user id; listing it lists that user's sessions only, not every user's.
    await service.create_session(app_name=APP, user_id="", session_id="a", state={"k": 1})
    await service.create_session(app_name=APP, user_id="", session_id="b")
    await service.create_session(app_name=APP, user_id="u1", session_id="a")
    await service.create_session(app_name=APP, user_id="%", session_id="c")
    listed = (await service.list_sessions(app_name=APP, user_id="")).sessions
    assert sorted((s.user_id, s.id) for s in listed) == [("", "a"), ("", "b")]
    everyone = (await service.list_sessions(app_name=APP)).sessions
    assert sorted((s.user_id, s.id) for s in everyone) == [
        ("", "a"),
        ("", "b"),
        ("%", "c"),
        ("u1", "a"),
    ]
    got = await reload(service, "", "a")
    assert got is not None and got.user_id == "" and got.state == {"k": 1}
    assert await reload(service, "u1", "b") is None
    assert [s.id for s in (await service.list_sessions(app_name=APP, user_id="%")).sessions] == [
        "c"
    ]


async def test_an_empty_user_id_keeps_its_own_events_and_user_state(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="", session_id="s")
    await service.append_event(session, delta_event({"user:lang": "nb", "topic": "tea"}))
    other = await service.create_session(app_name=APP, user_id="%", session_id="s")
    assert other.state == {}  # "%" is another user: none of ""'s user: keys
    assert await service.get_user_state(app_name=APP, user_id="") == {"lang": "nb"}
    assert await service.get_user_state(app_name=APP, user_id="%") == {}
    got = await reload(service, "", "s")
    assert got is not None and len(got.events) == 1
    assert got.state == {"user:lang": "nb", "topic": "tea"}
    listed = (await service.list_sessions(app_name=APP, user_id="")).sessions
    assert [(s.id, s.state) for s in listed] == [("s", got.state)]
    assert listed[0].last_update_time == got.last_update_time
    await service.delete_session(app_name=APP, user_id="", session_id="s")
    assert await reload(service, "", "s") is None
    assert await reload(service, "%", "s") is not None


# The owner of ADK's user "": a name in threadline's reserved namespace.
EMPTY_USER_OWNER = INTERNAL_PREFIX + "adk:empty-user"


def write_as_before(store: Store, user: str, sid: str, state: dict[str, Any]) -> None:
    """A session as the adapter wrote it before ``user_id=""`` was allowed (686c7f1): owned by
    the ADK user id itself, whatever it is."""
    tl_id = threadline_session_id(user, sid)
    created = time.time()
    store.create_session(
        APP, tl_id, user_id=user, metadata={"adk": {"id": sid, "created": created}}
    )
    store.update_state(APP, tl_id, user, {**state, INTERNAL_PREFIX + "adk": [None, created]})


async def test_sessions_stored_under_percent_user_ids_stay_theirs_beside_the_empty_user(
    service: ThreadlineSessionService, store: Store
) -> None:
    write_as_before(store, "%", "s1", {"user:card": "4111-secret", "k": 1})
    write_as_before(store, "%%", "s2", {"user:pin": "9"})
    mine = await service.create_session(app_name=APP, user_id="", session_id="mine")
    assert mine.state == {}  # none of the old users' user: keys
    assert await service.get_user_state(app_name=APP, user_id="") == {}
    info = store.get_session(APP, threadline_session_id("", "mine"))
    assert info is not None and info.user_id == EMPTY_USER_OWNER
    old = await reload(service, "%", "s1")
    assert old is not None and old.state == {"user:card": "4111-secret", "k": 1}
    older = await reload(service, "%%", "s2")
    assert older is not None and older.state == {"user:pin": "9"}
    assert await service.get_user_state(app_name=APP, user_id="%") == {"card": "4111-secret"}
    assert await reload(service, "", "s1") is None
    for user, ids in (("", ["mine"]), ("%", ["s1"]), ("%%", ["s2"])):
        listed = (await service.list_sessions(app_name=APP, user_id=user)).sessions
        assert [(s.user_id, s.id) for s in listed] == [(user, i) for i in ids]
    everyone = (await service.list_sessions(app_name=APP)).sessions
    assert sorted((s.user_id, s.id) for s in everyone) == [("", "mine"), ("%", "s1"), ("%%", "s2")]
    await service.append_event(old, delta_event({"user:card": "5500-new"}))
    assert await service.get_user_state(app_name=APP, user_id="%") == {"card": "5500-new"}
    assert await service.get_user_state(app_name=APP, user_id="") == {}
    await service.delete_session(app_name=APP, user_id="%%", session_id="s2")
    assert await reload(service, "%%", "s2") is None
    assert await reload(service, "", "mine") is not None


async def test_the_empty_users_owner_name_is_refused_as_an_adk_user_id(
    service: ThreadlineSessionService,
) -> None:
    await service.create_session(app_name=APP, user_id="", session_id="s", state={"user:k": 1})
    name = EMPTY_USER_OWNER
    calls = [
        service.create_session(app_name=APP, user_id=name, session_id="s"),
        service.create_session(app_name=APP, user_id=name, session_id="t"),
        service.get_session(app_name=APP, user_id=name, session_id="s"),
        service.list_sessions(app_name=APP, user_id=name),
        service.get_user_state(app_name=APP, user_id=name),
        service.delete_session(app_name=APP, user_id=name, session_id="s"),
        service.append_event(
            Session(id="s", app_name=APP, user_id=name), delta_event({"user:k": 2})
        ),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError, match="reserved"):
            await call
    everyone = (await service.list_sessions(app_name=APP)).sessions
    assert [(s.user_id, s.id, s.state) for s in everyone] == [("", "s", {"user:k": 1})]


async def test_list_sessions_orders_least_recently_updated_first(
    service: ThreadlineSessionService,
) -> None:
    for sid in ("a", "b", "c"):
        await service.create_session(app_name=APP, user_id="u1", session_id=sid)
    session_a = await reload(service, "u1", "a")
    await asyncio.sleep(0.01)
    await service.append_event(session_a, Event(invocation_id="inv", author="user"))
    listed = (await service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert [s.id for s in listed] == ["b", "c", "a"]


async def test_list_sessions_of_an_unknown_app_or_user_is_empty(
    service: ThreadlineSessionService,
) -> None:
    await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    assert (await service.list_sessions(app_name="unknown")).sessions == []
    assert (await service.list_sessions(app_name=APP, user_id="nobody")).sessions == []


async def test_list_sessions_merges_app_and_user_state_and_drops_temp(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(
        app_name=APP,
        user_id="u1",
        session_id="s1",
        state={"app:a": "av", "user:u": "uv", "sk": "sv", "temp:t": "tv"},
    )
    await service.append_event(session, delta_event({"sk2": "sv2"}))
    (listed,) = (await service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert listed.state == {"app:a": "av", "user:u": "uv", "sk": "sv", "sk2": "sv2"}


async def test_list_sessions_skips_threadline_sessions_not_made_by_adk(
    service: ThreadlineSessionService, store: Store
) -> None:
    store.touch_session(APP, "plain", user_id="u1")
    await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    assert [s.id for s in (await service.list_sessions(app_name=APP)).sessions] == ["s1"]


async def test_listed_sessions_equal_what_get_session_returns_without_events(
    service: ThreadlineSessionService,
) -> None:
    for i, user in enumerate(("u1", "u2", "u1", "u2", "u1")):
        session = await service.create_session(
            app_name=APP, user_id=user, session_id=f"s{i}", state={"app:a": i, "user:u": i}
        )
        if i % 2:
            stamp = 1700000000.123456789 + i  # sub-microsecond digits must survive
            await service.append_event(session, delta_event({"k": i}, timestamp=stamp))
    listed = (await service.list_sessions(app_name=APP)).sessions
    assert len(listed) == 5
    for got in listed:
        full = await reload(service, got.user_id, got.id)
        assert got.model_dump() == full.model_copy(update={"events": []}).model_dump()
    assert len({id(s.events) for s in listed}) == 5  # no list shared between sessions
    stamps = [(s.last_update_time, s.user_id, s.id) for s in listed]
    assert stamps == sorted(stamps)


async def test_listing_sees_messages_appended_around_the_service(
    service: ThreadlineSessionService, store: Store
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(session, delta_event({"k": 1}, timestamp=1700000000.5))
    message = {
        "id": "m-own",
        "role": "user",
        "parts": [{"type": "text", "text": "hi"}],
        "createdAt": "2030-01-01T00:00:00.250Z",
    }
    store.append_messages(APP, "u1/s1", [message], user_id="u1")
    (listed,) = (await service.list_sessions(app_name=APP, user_id="u1")).sessions
    assert listed.last_update_time == (await reload(service, "u1", "s1")).last_update_time
    assert listed.last_update_time == 1893456000.25


async def test_sessions_without_the_bookkeeping_key_are_still_listed(
    service: ThreadlineSessionService, store: Store
) -> None:
    await service.create_session(app_name=APP, user_id="u1", session_id="s1", state={"k": 1})
    store.update_state(APP, "u1/s1", "u1", {INTERNAL_PREFIX + "adk": None})
    (listed,) = (await service.list_sessions(app_name=APP)).sessions
    got = await reload(service, "u1", "s1")
    assert (listed.id, listed.state, listed.last_update_time) == (
        "s1",
        {"k": 1},
        got.last_update_time,
    )


# -- state scopes -------------------------------------------------------------------------------


async def test_app_state_is_shared_by_all_users_of_the_app(
    service: ThreadlineSessionService,
) -> None:
    s1 = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"app:k1": "v1"}
    )
    await service.append_event(s1, delta_event({"app:k2": "v2"}))
    s2 = await service.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert s2.state == {"app:k1": "v1", "app:k2": "v2"}
    got = await reload(service, "u1", "s1")
    assert got.state["app:k1"] == "v1" and got.state["app:k2"] == "v2"


async def test_user_state_is_shared_only_by_the_users_sessions(
    service: ThreadlineSessionService,
) -> None:
    s1 = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"user:k1": "v1"}
    )
    await service.append_event(s1, delta_event({"user:k2": "v2"}))
    s1b = await service.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert s1b.state == {"user:k1": "v1", "user:k2": "v2"}
    s2 = await service.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert s2.state == {}


async def test_session_state_is_not_shared_between_sessions(
    service: ThreadlineSessionService,
) -> None:
    s1 = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"sk1": "v1"}
    )
    await service.append_event(s1, delta_event({"sk2": "v2"}))
    got = await reload(service, "u1", "s1")
    assert got.state == {"sk1": "v1", "sk2": "v2"}
    s1b = await service.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert s1b.state == {}


async def test_a_dict_valued_delta_replaces_the_stored_value(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(
        app_name=APP,
        user_id="u1",
        session_id="s1",
        state={"profile": {"name": "ada", "role": "admin"}},
    )
    await service.append_event(session, delta_event({"profile": {"name": "bob"}}))
    assert (await reload(service, "u1", "s1")).state["profile"] == {"name": "bob"}
    assert session.state["profile"] == {"name": "bob"}


async def test_a_none_valued_delta_is_stored_not_dropped(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"flag": True}
    )
    await service.append_event(session, delta_event({"flag": None}))
    reloaded = await reload(service, "u1", "s1")
    assert "flag" in reloaded.state and reloaded.state["flag"] is None
    assert "flag" in session.state and session.state["flag"] is None


async def test_a_boolean_survives_an_unrelated_delta(service: ThreadlineSessionService) -> None:
    session = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"flag": False}
    )
    await service.append_event(session, delta_event({"new_flag": True}))
    reloaded = await reload(service, "u1", "s1")
    assert reloaded.state["flag"] is False and reloaded.state["new_flag"] is True
    assert session.state["flag"] is False and session.state["new_flag"] is True


async def test_a_dict_valued_app_delta_replaces_the_stored_value(
    service: ThreadlineSessionService,
) -> None:
    s1 = await service.create_session(
        app_name=APP,
        user_id="u1",
        session_id="s1",
        state={"app:cfg": {"name": "ada", "role": "admin"}},
    )
    await service.append_event(s1, delta_event({"app:cfg": {"name": "bob"}}))
    s2 = await service.create_session(app_name=APP, user_id="u2", session_id="s2")
    assert s2.state["app:cfg"] == {"name": "bob"} and s1.state["app:cfg"] == {"name": "bob"}


async def test_a_none_valued_user_delta_is_stored_not_dropped(
    service: ThreadlineSessionService,
) -> None:
    s1 = await service.create_session(
        app_name=APP, user_id="u1", session_id="s1", state={"user:pref": "dark_mode"}
    )
    await service.append_event(s1, delta_event({"user:pref": None}))
    s1b = await service.create_session(app_name=APP, user_id="u1", session_id="s1b")
    assert "user:pref" in s1b.state and s1b.state["user:pref"] is None
    assert "user:pref" in s1.state and s1.state["user:pref"] is None


async def test_temp_state_is_in_the_session_object_but_not_stored(
    service: ThreadlineSessionService, store: Store
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    event = delta_event({"temp:k1": "v1", "sk": "v2"})
    await service.append_event(session, event)
    assert session.state["temp:k1"] == "v1" and session.state["sk"] == "v2"
    assert "temp:k1" not in event.actions.state_delta
    got = await reload(service, "u1", "s1")
    assert "temp:k1" not in got.state and "temp:k1" not in got.events[0].actions.state_delta
    assert got.events[0].actions.state_delta == {"sk": "v2"}
    assert "temp:k1" not in store.get_state(APP, "u1/s1", "u1")


async def test_temp_state_is_visible_to_the_next_event_of_the_invocation(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="seq")
    first = Event(
        invocation_id="inv1", author="agent1", actions=EventActions(state_delta={"temp:out": "a1"})
    )
    await service.append_event(session, first)
    assert session.state["temp:out"] == "a1"
    assert "temp:out" not in first.actions.state_delta


async def test_a_value_json_cannot_hold_is_stored_as_text(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(session, delta_event({"callback": lambda: 1, "ok": 2}))
    got = await reload(service, "u1", "s1")
    assert len(got.events) == 1
    assert got.state["ok"] == 2 and isinstance(got.state["callback"], str)


async def test_state_scopes_are_threadline_scopes(
    service: ThreadlineSessionService, store: Store
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(session, delta_event({"app:a": 1, "user:b": 2, "c": 3}))
    assert store.get_state(APP, "elsewhere", None) == {"app:a": 1}
    assert store.get_state(APP, "elsewhere", "u1") == {"app:a": 1, "user:b": 2}
    stored = store.get_state(APP, "u1/s1", "u1")
    (event,) = (await reload(service, "u1", "s1")).events
    # The adapter's bookkeeping (head id, last update time) is internal: in no state read.
    assert stored == {"app:a": 1, "user:b": 2, "c": 3}
    (listing,) = store.list_sessions_with_state(APP).sessions
    assert listing.internal == {INTERNAL_PREFIX + "adk": [event.id, event.timestamp]}


# -- get_user_state ---------------------------------------------------------------------------


async def test_user_state_is_empty_when_nothing_was_stored(
    service: ThreadlineSessionService,
) -> None:
    assert await service.get_user_state(app_name=APP, user_id="u1") == {}


async def test_user_state_holds_user_keys_written_by_events_without_prefix(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(
        session,
        Event(
            author="system",
            actions=EventActions(state_delta={"user:profile": {"name": "Alice"}, "session_key": 1}),
        ),
    )
    assert await service.get_user_state(app_name=APP, user_id="u1") == {
        "profile": {"name": "Alice"}
    }


async def test_user_state_is_not_visible_to_other_users(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, delta_event({"user:secret": "only-for-u1"}))
    assert await service.get_user_state(app_name=APP, user_id="u2") == {}


async def test_user_state_is_not_visible_in_other_apps(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, delta_event({"user:data": "only-app-a"}))
    assert await service.get_user_state(app_name="other_app", user_id="u1") == {}


async def test_user_state_reflects_the_latest_write(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, delta_event({"user:counter": 1}))
    await service.append_event(session, delta_event({"user:counter": 2}))
    assert (await service.get_user_state(app_name=APP, user_id="u1"))["counter"] == 2


async def test_user_state_keeps_none_values(service: ThreadlineSessionService) -> None:
    await service.create_session(app_name=APP, user_id="u1", state={"user:gone": None})
    assert await service.get_user_state(app_name=APP, user_id="u1") == {"gone": None}


# -- events -------------------------------------------------------------------------------------


async def test_an_event_with_inline_bytes_and_grounding_round_trips(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    content = types.Content(
        role="user", parts=[types.Part.from_bytes(data=b"test_image_data", mime_type="image/png")]
    )
    grounding = types.GroundingMetadata(search_entry_point=types.SearchEntryPoint(sdk_blob=b"blob"))
    event = Event(invocation_id="inv", author="user", content=content, grounding_metadata=grounding)
    await service.append_event(session, event)
    assert session.events[0].content == content
    (got,) = (await reload(service, "u1", session.id)).events
    assert got.content == content and got.grounding_metadata == grounding


async def test_an_event_with_every_field_set_round_trips_into_an_equal_session(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    event = Event(
        invocation_id="invocation",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="test_text")]),
        turn_complete=True,
        partial=False,
        actions=EventActions(artifact_delta={"file": 0}, transfer_to_agent="agent", escalate=True),
        long_running_tool_ids={"tool1"},
        error_code="error_code",
        error_message="error_message",
        interrupted=True,
        grounding_metadata=types.GroundingMetadata(web_search_queries=["query1"]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1, candidates_token_count=1, total_token_count=2
        ),
        citation_metadata=types.CitationMetadata(),
        custom_metadata={"custom_key": "custom_value"},
        timestamp=1700000000.123,
        input_transcription=types.Transcription(text="input transcription", finished=True),
        output_transcription=types.Transcription(text="output transcription", finished=True),
    )
    await service.append_event(session, event)
    assert await reload(service, "u1", session.id) == session


async def test_function_calls_and_responses_round_trip(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    call = Event(
        invocation_id="inv",
        author="agent",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text="Let me check."),
                types.Part(
                    function_call=types.FunctionCall(id="c1", name="weather", args={"city": "Oslo"})
                ),
            ],
        ),
    )
    response = Event(
        invocation_id="inv",
        author="agent",
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="weather", response={"sky": "rain"}
                    )
                )
            ],
        ),
    )
    for event in (call, response):
        await service.append_event(session, event)
    got = await reload(service, "u1", session.id)
    assert got.events == [call, response]


async def test_requested_tool_confirmations_are_preserved(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    confirmation = ToolConfirmation(
        hint="dynamic hint", confirmed=False, payload={"resource_id": "album_1"}
    )
    event = Event(
        invocation_id="inv",
        author="user",
        actions=EventActions(requested_tool_confirmations={"tool_call_1": confirmation}),
    )
    await service.append_event(session, event)
    (got,) = (await reload(service, "u1", session.id)).events
    assert got.actions.requested_tool_confirmations["tool_call_1"] == confirmation


async def test_last_update_time_is_the_appended_events_timestamp(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    created = session.last_update_time
    event = Event(invocation_id="inv", author="user", timestamp=created + 10)
    await service.append_event(session, event)
    assert session.last_update_time == created + 10
    got = await reload(service, "u1", session.id)
    assert got.last_update_time == created + 10 > created


async def test_event_timestamps_come_back_exactly(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    stamps = [1730613600.0, 1730615400.0, 1700000000.123456]  # two in a repeated local hour
    for stamp in stamps:
        await service.append_event(session, Event(author="user", timestamp=stamp))
    assert [e.timestamp for e in (await reload(service, "u1", session.id)).events] == stamps


@pytest.fixture
def new_york_time() -> Any:
    """The process's local time zone set to US Eastern (POSIX rule: no tzdata needed), whose
    01:00-02:00 comes twice on 2024-11-03; the previous zone afterwards."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX-only")
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "EST5EDT,M3.2.0,M11.1.0"
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = previous
        time.tzset()


async def test_timestamps_in_a_local_hour_that_repeats_come_back_exactly(
    service: ThreadlineSessionService, new_york_time: None
) -> None:
    assert time.localtime(1730613600.0).tm_hour == time.localtime(1730610000.0).tm_hour == 1
    session = await service.create_session(app_name=APP, user_id="u1")
    stamps = [1730613600.0, 1730615400.0]  # 01:00 and 01:30 EST, the hour's second pass
    for stamp in stamps:
        await service.append_event(session, Event(author="user", timestamp=stamp))
    got = await reload(service, "u1", session.id)
    assert [e.timestamp for e in got.events] == stamps
    assert got.last_update_time == stamps[-1]


async def test_partial_events_are_not_persisted(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(session, Event(author="user", partial=True))
    assert session.events == []
    assert (await reload(service, "u1", session.id)).events == []


async def test_events_come_back_in_append_order(service: ThreadlineSessionService) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    for event_id in ("event_z", "event_a", "event_m"):
        await service.append_event(session, Event(author="user", id=event_id, timestamp=100.0))
    got = await reload(service, "u1", session.id)
    assert [e.id for e in got.events] == ["event_z", "event_a", "event_m"]


async def test_appending_to_a_deleted_session_raises_session_not_found(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    await service.delete_session(app_name=APP, user_id="u1", session_id=session.id)
    with pytest.raises(SessionNotFoundError):
        await service.append_event(session, Event(invocation_id="inv1", author="user"))


async def test_appending_to_a_session_never_created_raises_and_creates_nothing(
    service: ThreadlineSessionService,
) -> None:
    ghost = Session(app_name=APP, user_id="u1", id="never_created")
    with pytest.raises(SessionNotFoundError):
        await service.append_event(ghost, delta_event({"k": 1}))
    assert await reload(service, "u1", "never_created") is None
    assert (await service.list_sessions(app_name=APP)).sessions == []
    assert ghost.events == [] and ghost.state == {}


async def test_a_session_object_built_by_hand_for_a_stored_session_can_append(
    service: ThreadlineSessionService,
) -> None:
    # A Session this service did not hand out (no revision of ours on it), with an update
    # time that does not match the stored one: ADK's services accept it as the current one.
    stored = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    await service.append_event(stored, Event(invocation_id="inv1", author="user"))
    by_hand = Session(
        app_name=APP, user_id="u1", id="s1", last_update_time=stored.last_update_time - 0.0001
    )
    await service.append_event(by_hand, Event(invocation_id="inv2", author="user"))
    assert [e.invocation_id for e in (await reload(service, "u1", "s1")).events] == [
        "inv1",
        "inv2",
    ]


async def test_an_update_time_nudged_on_the_session_object_does_not_make_it_stale(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    first = Event(invocation_id="inv1", author="user", timestamp=session.last_update_time + 10)
    await service.append_event(session, first)
    session.last_update_time -= 0.0001  # as a float round trip elsewhere might leave it
    await service.append_event(
        session, Event(invocation_id="inv2", author="user", timestamp=first.timestamp + 10)
    )
    assert len((await reload(service, "u1", "s1")).events) == 2


async def test_appending_to_a_stale_session_raises_and_writes_nothing(
    service: ThreadlineSessionService,
) -> None:
    now = time.time()
    original = await service.create_session(app_name=APP, user_id="u1")
    await service.append_event(original, delta_event({"sk1": "v1"}, timestamp=now + 1))
    updated = await reload(service, "u1", original.id)
    await service.append_event(
        updated,
        Event(
            invocation_id="inv2",
            author="user",
            timestamp=now + 2,
            actions=EventActions(state_delta={"sk2": "v2"}),
        ),
    )
    stale = original.model_copy(deep=True)
    with pytest.raises(StaleSessionError, match="modified in storage"):
        await service.append_event(stale, delta_event({"sk3": "v3"}, timestamp=now + 3))
    final = await reload(service, "u1", original.id)
    assert [e.invocation_id for e in final.events] == ["inv1", "inv2"]
    assert final.state == {"sk1": "v1", "sk2": "v2"}


async def test_concurrent_stale_copies_let_exactly_one_writer_win(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1")
    latest = await reload(service, "u1", session.id)
    copies = [latest.model_copy(deep=True) for _ in range(2)]
    results = await asyncio.gather(
        *(service.append_event(c, delta_event({f"k{i}": i})) for i, c in enumerate(copies)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, StaleSessionError) for r in results) == 1
    assert len((await reload(service, "u1", session.id)).events) == 1


async def test_stale_copies_in_two_services_of_their_own_let_exactly_one_writer_win(
    file_store_url: str,
) -> None:
    # Two stores (as two processes have): no lock of this process serialises them, the
    # append's own transaction must (its condition on the head).
    services = [ThreadlineSessionService(file_store_url) for _ in range(2)]
    try:
        session = await services[0].create_session(app_name=APP, user_id="u1")
        for round_ in range(5):
            copies = [
                await s.get_session(app_name=APP, user_id="u1", session_id=session.id)
                for s in services
            ]
            results = await asyncio.gather(
                *(
                    s.append_event(c, delta_event({"k": f"{round_}{i}"}))  # type: ignore[arg-type]
                    for i, (s, c) in enumerate(zip(services, copies, strict=True))
                ),
                return_exceptions=True,
            )
            assert sum(isinstance(r, StaleSessionError) for r in results) == 1
        assert len((await reload(services[1], "u1", session.id)).events) == 5
    finally:
        for s in services:
            await s.close()


async def test_an_equal_redelivered_event_is_stored_and_applied_once(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="dup")
    event = delta_event({"counter": 1})
    await service.append_event(session, event)
    await service.append_event(session, event)
    await service.append_event(session, event.model_copy(deep=True))
    got = await reload(service, "u1", "dup")
    assert [e.id for e in got.events] == [event.id] and got.state == {"counter": 1}


async def test_different_events_sharing_an_id_are_both_stored(
    service: ThreadlineSessionService,
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="multi")
    await service.append_event(session, Event(id="shared", invocation_id="a", author="user"))
    await service.append_event(session, Event(id="shared", invocation_id="b", author="agent"))
    got = await reload(service, "u1", "multi")
    assert [(e.id, e.author) for e in got.events] == [("shared", "user"), ("shared", "agent")]


# -- GetSessionConfig ---------------------------------------------------------------------------


@pytest_asyncio.fixture
async def five_events(service: ThreadlineSessionService) -> tuple[str, int]:
    base = int(time.time())
    session = await service.create_session(app_name=APP, user_id="u1")
    for i in range(1, 6):
        await service.append_event(session, Event(author="user", timestamp=base + i))
    return session.id, base


async def test_without_config_every_event_is_returned(
    service: ThreadlineSessionService, five_events: tuple[str, int]
) -> None:
    assert len((await reload(service, "u1", five_events[0])).events) == 5


async def test_zero_recent_events_returns_none_but_keeps_the_update_time(
    service: ThreadlineSessionService, five_events: tuple[str, int]
) -> None:
    sid, base = five_events
    got = await reload(service, "u1", sid, num_recent_events=0)
    assert got.events == [] and got.last_update_time == base + 5


async def test_num_recent_events_returns_the_newest(
    service: ThreadlineSessionService, five_events: tuple[str, int]
) -> None:
    sid, base = five_events
    got = await reload(service, "u1", sid, num_recent_events=3)
    assert [e.timestamp for e in got.events] == [base + 3, base + 4, base + 5]


async def test_after_timestamp_is_inclusive(
    service: ThreadlineSessionService, five_events: tuple[str, int]
) -> None:
    sid, base = five_events
    got = await reload(service, "u1", sid, after_timestamp=base + 4)
    assert [e.timestamp for e in got.events] == [base + 4, base + 5]
    assert (await reload(service, "u1", sid, after_timestamp=base + 50)).events == []


async def test_both_filters_apply_together(
    service: ThreadlineSessionService, five_events: tuple[str, int]
) -> None:
    sid, base = five_events
    got = await reload(service, "u1", sid, num_recent_events=3, after_timestamp=base + 4)
    assert len(got.events) == 2


async def test_a_negative_recent_event_count_is_rejected() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        GetSessionConfig(num_recent_events=-1)


# -- threadline's view ---------------------------------------------------------------------------


async def test_events_are_threadline_messages_that_search_finds(
    service: ThreadlineSessionService, store: Store
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    text = types.Content(role="user", parts=[types.Part(text="The blue whale is enormous")])
    await service.append_event(session, Event(invocation_id="i1", author="user", content=text))
    (message,) = store.get_path(APP, "u1/s1")
    assert message["parts"] == [{"type": "text", "text": "The blue whale is enormous"}]
    assert message["metadata"]["invocationId"] == "i1"
    hits = store.search_messages(APP, "whale", user_id="u1")
    assert [(hit.session_id, hit.id) for hit in hits] == [("u1/s1", session.events[0].id)]


async def test_messages_written_by_threadline_are_read_as_events(
    service: ThreadlineSessionService, store: Store
) -> None:
    session = await service.create_session(app_name=APP, user_id="u1", session_id="s1")
    store.append_messages(
        APP,
        "u1/s1",
        [threadline.messages.normalize_message({"id": "m1", "role": "assistant", "content": "Hi"})],
    )
    (event,) = (await reload(service, "u1", session.id)).events
    assert (event.id, event.author, event.content.parts[0].text) == ("m1", "model", "Hi")


async def test_sessions_persist_across_service_instances(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'adk.db'}"
    first = ThreadlineSessionService(url)
    session = await first.create_session(app_name=APP, user_id="u1", state={"k": "v"})
    await first.append_event(session, delta_event({"n": 1}))
    await first.close()
    second = ThreadlineSessionService(url)
    try:
        assert (
            await second.get_session(app_name=APP, user_id="u1", session_id=session.id) == session
        )
    finally:
        await second.close()


async def test_a_partial_event_round_trips_through_a_message() -> None:
    event = Event(
        author="agent",
        partial=True,
        content=types.Content(
            role="model", parts=[types.Part(text="Hel", thought_signature=b"\x00\x01")]
        ),
    )
    message = event_to_message(event)
    assert message["metadata"]["partial"] is True
    assert message_to_event(message) == event


async def test_the_stored_event_leaves_out_only_the_nones_validation_puts_back() -> None:
    event = Event(author="user", actions=EventActions(state_delta={"k": 1}))
    plain = event_to_message(event)
    stored = plain["metadata"]["adk"]["event"]
    assert None not in stored.values() and None not in stored["actions"].values()
    assert stored["actions"]["state_delta"] == {"k": 1} and stored["author"] == "user"
    assert stored["actions"]["artifact_delta"] == {}  # not None: kept
    assert message_to_event(plain) == event  # the left-out fields come back as None
    full = Event(
        author="agent",
        branch="a.b",
        invocation_id="i1",
        turn_complete=False,
        custom_metadata={"x": None},
        actions=EventActions(escalate=True, transfer_to_agent="other", state_delta={"n": None}),
    )
    message = event_to_message(full)
    assert message["metadata"]["adk"]["event"]["custom_metadata"] == {"x": None}
    assert message["metadata"]["adk"]["event"]["actions"]["state_delta"] == {"n": None}
    back = message_to_event(message)
    assert back == full and back.model_dump() == full.model_dump()


@pytest.mark.parametrize("read", ["created", "got"])
async def test_a_session_object_of_a_deleted_session_never_writes_to_its_successor(
    service: ThreadlineSessionService, read: str
) -> None:
    """Clarification 23: an ADK session object is bound to the session it was read from. The
    user deletes it and creates one with the same id: appending through the old object (both
    empty, so no head tells them apart) raises SessionNotFoundError and leaves the new one
    untouched."""
    old = await service.create_session(app_name=APP, user_id="u1", session_id="chat")
    if read == "got":
        old = await reload(service, "u1", "chat")
    await service.delete_session(app_name=APP, user_id="u1", session_id="chat")
    await service.create_session(app_name=APP, user_id="u1", session_id="chat", state={"k": 1})
    with pytest.raises(SessionNotFoundError):
        await service.append_event(old, delta_event({"k": 2}))
    new = await reload(service, "u1", "chat")
    assert new.events == [] and new.state == {"k": 1}
    await service.append_event(new, delta_event({"k": 3}))  # the new object writes as usual
    assert (await reload(service, "u1", "chat")).state == {"k": 3}
