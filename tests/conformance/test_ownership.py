"""Ownership: a session's owner is fixed at creation, and nothing shared leaks between users.

* Cross-session recall (``with_searchable_history``) and the manager's ``session_search`` tool
  are private to the user by default; widening to the app is explicit.
* A write never claims an unowned session; a write naming another user finds no session.
* One provider instance shared by managers of two apps serves each app its own entries.
* ``forget_user`` removes everything of one user, and nothing of anybody else.
"""

from __future__ import annotations

from typing import Any

import pytest

from threadline import (
    InvalidArgumentError,
    SessionManager,
    SessionNotFoundError,
    StoreSearchProvider,
)
from threadline.messages import normalize_message, user

APP = "own"


def _history_search(manager: SessionManager, session_id: str, query: str, **kw: Any) -> str:
    tools = manager.get_session(session_id, **kw).tools()
    return tools.execute("search_context", {"label": "history", "query": query})


@pytest.fixture
def two_users(store: Any) -> SessionManager:
    manager = SessionManager(store, app_name=APP).with_searchable_history("history")
    manager.append("ana-1", user("ana asks about flights"), user_id="ana")
    manager.append("bob-1", user("bob private diagnosis flights"), user_id="bob")
    manager.append("anon-1", user("anonymous flights question"))
    return manager


def test_searchable_history_is_private_to_the_user(two_users: SessionManager) -> None:
    found = _history_search(two_users, "ana-1", "flights")
    assert "ana asks" in found
    assert "bob" not in found and "anonymous" not in found
    block = two_users.get_session("ana-1").get_context_block("history")
    assert block is not None and block.content == "1 session available for search."


def test_searchable_history_without_a_user_sees_only_sessions_without_one(
    two_users: SessionManager,
) -> None:
    found = _history_search(two_users, "anon-1", "flights")
    assert "anonymous" in found
    assert "ana" not in found and "bob" not in found


def test_searchable_history_app_scope_is_explicit(store: Any) -> None:
    manager = SessionManager(store, app_name=APP).with_searchable_history("history", scope="app")
    manager.append("ana-1", user("ana flights"), user_id="ana")
    manager.append("bob-1", user("bob flights"), user_id="bob")
    found = _history_search(manager, "ana-1", "flights")
    assert "ana flights" in found and "bob flights" in found
    with pytest.raises(InvalidArgumentError):
        manager.with_searchable_history("other", scope="session")


def test_manager_tools_are_limited_to_the_named_user(two_users: SessionManager) -> None:
    mine = two_users.tools(user_id="ana").execute("session_search", {"query": "flights"})
    assert "ana asks" in mine and "bob" not in mine
    everyone = two_users.tools().execute("session_search", {"query": "flights"})
    assert "bob private" in everyone


def test_an_append_with_a_user_never_claims_an_unowned_session(store: Any) -> None:
    manager = SessionManager(store, app_name=APP)
    manager.create(session_id="open")
    manager.append("open", user("hello"), user_id="mallory")
    info = manager.get("open")
    assert info is not None and info.user_id is None
    store.append_messages(APP, "open", [normalize_message(user("again"))], user_id="eve")
    store.touch_session(APP, "open", user_id="eve")
    assert store.get_session(APP, "open").user_id is None


def test_another_users_session_is_missing(two_users: SessionManager, store: Any) -> None:
    before = store.get_path(APP, "ana-1")
    assert two_users.get("ana-1", user_id="bob") is None
    assert two_users.get("ana-1", user_id="ana") is not None
    for call in (
        lambda: two_users.append("ana-1", user("bob writes"), user_id="bob"),
        lambda: two_users.get_history("ana-1", user_id="bob"),
        lambda: two_users.get_state("ana-1", user_id="bob"),
        lambda: two_users.rename("ana-1", "mine now", user_id="bob"),
        lambda: two_users.delete("ana-1", user_id="bob"),
        lambda: two_users.add_usage("ana-1", 1, 1, user_id="bob"),
        lambda: two_users.fork("ana-1", before[0]["id"], user_id="bob"),
    ):
        with pytest.raises(SessionNotFoundError):
            call()
    # The store refuses too, whoever calls it.
    with pytest.raises(SessionNotFoundError):
        store.append_messages(APP, "ana-1", [normalize_message(user("x"))], user_id="bob")
    with pytest.raises(SessionNotFoundError):
        store.update_state(APP, "ana-1", "bob", {"k": 1})
    assert store.get_path(APP, "ana-1") == before
    info = store.get_session(APP, "ana-1")
    assert info.user_id == "ana" and info.name is None
    assert store.get_state(APP, "ana-1", "ana") == {}


def test_append_with_a_user_creates_the_session_owned_by_that_user(store: Any) -> None:
    manager = SessionManager(store, app_name=APP)
    manager.append("fresh", user("hi"), user_id="ana")
    info = manager.get("fresh")
    assert info is not None and info.user_id == "ana"


def test_a_provider_shared_between_apps_serves_each_its_own_entries(store: Any) -> None:
    shared = StoreSearchProvider(store)
    x = SessionManager(store, app_name="x").with_context("kb", provider=shared)
    y = SessionManager(store, app_name="y").with_context("kb", provider=shared)
    x_tools, y_tools = x.get_session("s").tools(), y.get_session("s").tools()
    written = x_tools.execute("set_context", {"label": "kb", "content": "x only zebra"})
    assert not written.startswith("Error"), written
    assert store.count_entries("x", "kb") == 1
    assert store.count_entries("y", "kb") == 0
    found = y_tools.execute("search_context", {"label": "kb", "query": "zebra"})
    assert "x only" not in found
    assert "x only" in x_tools.execute("search_context", {"label": "kb", "query": "zebra"})


def test_count_and_search_by_owner(two_users: SessionManager, store: Any) -> None:
    assert store.count_sessions(APP) == 3
    assert store.count_sessions(APP, user_id="ana") == 1
    assert store.count_sessions(APP, without_user=True) == 1
    hits = store.search_messages(APP, "flights", without_user=True)
    assert [h.session_id for h in hits] == ["anon-1"]
    with pytest.raises(InvalidArgumentError):
        store.search_messages(APP, "flights", user_id="ana", without_user=True)


def test_forget_user_removes_everything_of_that_user_only(store: Any) -> None:
    manager = SessionManager(store, app_name=APP)
    for sid, owner in (("a1", "ana"), ("a2", "ana"), ("b1", "bob")):
        manager.append(sid, user(f"{owner} note zebra"), user_id=owner, state_delta={"k": 1})
        manager.update_state(sid, {"user:lang": owner, "app:mode": "on"}, user_id=owner)
        store.set_block(APP, "session", sid, "memory", f"{owner} memory", user_id=owner)
        store.set_prompt(APP, sid, f"prompt of {owner}")
    store.set_block(APP, "user", "ana", "profile", "ana profile")
    store.set_block(APP, "user", "bob", "profile", "bob profile")
    SessionManager(store, app_name="other").append("a1", user("ana elsewhere"), user_id="ana")

    assert manager.forget_user("ana") == 2

    assert manager.get("a1") is None and manager.get("a2") is None
    assert store.get_path(APP, "a1") == []
    assert store.get_block(APP, "session", "a1", "memory") is None
    assert store.get_prompt(APP, "a1") is None
    assert store.get_block(APP, "user", "ana", "profile") is None
    assert store.get_state(APP, "a1", "ana") == {"app:mode": "on"}
    assert [h.session_id for h in store.search_messages(APP, "zebra")] == ["b1"]
    # Bob and the other app are untouched.
    assert manager.get_state("b1") == {"k": 1, "user:lang": "bob", "app:mode": "on"}
    assert store.get_block(APP, "user", "bob", "profile") == "bob profile"
    assert store.get_block(APP, "session", "b1", "memory") == "bob memory"
    assert len(store.get_path("other", "a1")) == 1
    assert manager.forget_user("ana") == 0
    # The user can start again.
    manager.append("a1", user("new start"), user_id="ana")
    assert manager.get_history("a1", user_id="ana")[0]["parts"][0]["text"] == "new start"
