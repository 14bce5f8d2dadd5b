"""A Session's identity is fixed once it has touched storage, and the manager never hands out
an object another caller can re-point; its cache of Session objects is bounded."""

from __future__ import annotations

from typing import Any

import pytest

from threadline import InvalidArgumentError, Session, SessionManager
from threadline.messages import user


def test_for_session_on_a_used_session_returns_a_new_one(store: Any) -> None:
    first = Session.create(store).for_app("app").for_session("a").for_user("u1")
    assert first.for_session("a") is first  # still building: the chain sets it in place
    first.append_message(user("in a", id="m1"))
    second = first.for_session("b")
    third = first.for_user("u2")
    assert (first.session_id, first.user_id) == ("a", "u1")
    assert (second.session_id, second.user_id, second.app_name) == ("b", "u1", "app")
    assert (third.session_id, third.user_id) == ("a", "u2")
    second.append_message(user("in b", id="m2"))
    assert [m["id"] for m in first.get_history()] == ["m1"]
    assert [m["id"] for m in second.get_history()] == ["m2"]


def test_repointing_a_managed_session_cannot_redirect_the_manager(store: Any) -> None:
    manager = SessionManager(store, app_name="app")
    manager.get_session("a").for_session("b")  # stored under b before the fix
    manager.append("a", user("for a", id="m1"))
    assert [m["id"] for m in manager.get_history("a")] == ["m1"]
    assert manager.get_history("b") == []


def test_the_session_cache_is_bounded(store: Any) -> None:
    manager = SessionManager(store, app_name="app", max_cached_sessions=3)
    for i in range(50):
        manager.append(f"s{i}", user(f"hello {i}"))
    assert len(manager._sessions) == 3  # 51 before: one per session ever touched
    assert [m["parts"][0]["text"] for m in manager.get_history("s7")] == ["hello 7"]
    with pytest.raises(InvalidArgumentError):
        SessionManager(store, max_cached_sessions=0)
