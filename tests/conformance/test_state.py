"""Scoped state.

Black-box: only the public API of ``threadline`` (and the ``Store`` protocol to check what
reached storage).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import threadline
from threadline import (
    InvalidMessageError,
    MessageNotFoundError,
    Session,
    SessionManager,
)
from threadline.messages import user


def new(store: Any, sid: str = "s1", user_id: str | None = "u1") -> Session:
    session = Session.create(store).for_session(sid)
    if user_id is not None:
        session.for_user(user_id)
    return session


FULL = {"app:theme": "dark", "user:lang": "en", "step": 3, "temp:scratch": "x"}


def test_scopes_are_merged_with_prefixes_kept(store: Any) -> None:
    a = new(store, "a", "u1")
    a.update_state(FULL)
    assert dict(a.state) == FULL
    assert a.get_state("step") == 3
    assert a.get_state("temp:scratch") == "x"
    assert a.get_state("missing") is None
    assert a.get_state("missing", "fallback") == "fallback"
    # a new object of the same session: everything but temp:
    assert dict(new(store, "a", "u1").state) == {"app:theme": "dark", "user:lang": "en", "step": 3}
    # another session of the same user: app: and user:
    assert dict(new(store, "b", "u1").state) == {"app:theme": "dark", "user:lang": "en"}
    # another user: app: only
    assert dict(new(store, "c", "u2").state) == {"app:theme": "dark"}
    # another app: nothing
    other = SessionManager(store, app_name="elsewhere").get_session("a").for_user("u1")
    assert dict(other.state) == {}


def test_state_is_a_read_only_mapping(store: Any) -> None:
    session = new(store)
    session.update_state({"k": 1})
    assert isinstance(session.state, Mapping)
    assert session.state["k"] == 1
    with pytest.raises(TypeError):
        session.state["k"] = 2  # type: ignore[index]
    assert session.get_state("k") == 1


def test_none_deletes_keys_of_every_scope(store: Any) -> None:
    session = new(store)
    session.update_state(FULL)
    session.update_state({"app:theme": None, "user:lang": None, "step": None, "temp:scratch": None})
    assert dict(session.state) == {}
    assert dict(new(store).state) == {}
    assert dict(new(store, "b").state) == {}


def test_json_values_round_trip(store: Any) -> None:
    value = {"list": [1, 2.5, "three", None, True], "nested": {"a": {"b": []}}, "text": "é😀"}
    session = new(store)
    session.update_state({"doc": value, "user:n": 0, "app:flag": False})
    assert new(store).get_state("doc") == value
    assert new(store).get_state("user:n") == 0
    assert new(store).get_state("app:flag") is False


def test_partial_updates_merge(store: Any) -> None:
    session = new(store)
    session.update_state({"a": 1, "b": 2})
    session.update_state({"b": 20, "c": 30})
    assert {k: v for k, v in new(store).state.items()} == {"a": 1, "b": 20, "c": 30}


def test_temp_keys_never_stored(store: Any) -> None:
    session = new(store)
    session.update_state({"temp:only": 1, "kept": 2})
    session.append_message(user("hi", id="m1"), state_delta={"temp:also": 3, "more": 4})
    assert session.get_state("temp:only") == 1
    assert session.get_state("temp:also") == 3
    stored = store.get_state("default", "s1", "u1")
    assert not [k for k in stored if k.startswith("temp:")]
    assert stored["kept"] == 2 and stored["more"] == 4
    fresh = new(store)
    assert fresh.get_state("temp:only") is None
    assert fresh.get_state("temp:also") is None


def test_temp_keys_absent_after_reopening_a_file_store(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        session = new(store)
        session.update_state({"temp:t": 1, "s": 1, "user:u": 1, "app:a": 1})
        session.append_message(user("hi", id="m1"), state_delta={"temp:t2": 2})
        assert session.get_state("temp:t") == 1 and session.get_state("temp:t2") == 2
    with threadline.connect(file_store_url) as store:
        assert dict(new(store).state) == {"s": 1, "user:u": 1, "app:a": 1}
        message = new(store).get_message("m1")
        assert message is not None
        assert "temp:t2" not in message.get("metadata", {}).get("stateDelta", {})


def test_state_delta_on_append_is_applied_and_recorded(store: Any) -> None:
    session = new(store)
    delta = {"step": 1, "user:lang": "fr", "app:count": 1, "temp:scratch": "t"}
    message = user("hello", id="m1")
    message["metadata"] = {"source": "test"}
    returned = session.append_message(message, state_delta=delta)
    recorded = {"step": 1, "user:lang": "fr", "app:count": 1}
    assert returned["metadata"]["stateDelta"] == recorded
    assert returned["metadata"]["source"] == "test"
    stored = session.get_message("m1")
    assert stored is not None
    assert stored["metadata"]["stateDelta"] == recorded
    assert stored["metadata"]["source"] == "test"
    assert dict(session.state) == {**recorded, "temp:scratch": "t"}
    assert dict(new(store).state) == recorded
    assert "stateDelta" not in message["metadata"]  # the caller's dict is not mutated


def test_state_delta_with_only_temp_keys(store: Any) -> None:
    session = new(store)
    returned = session.append_message(user("hi", id="m1"), state_delta={"temp:x": 1})
    recorded = returned.get("metadata", {}).get("stateDelta", {})
    assert "temp:x" not in recorded
    assert session.get_state("temp:x") == 1


def test_state_delta_none_deletes(store: Any) -> None:
    session = new(store)
    session.update_state({"gone": 1, "kept": 2})
    session.append_message(user("hi", id="m1"), state_delta={"gone": None})
    assert dict(new(store).state) == {"kept": 2}
    assert session.get_message("m1")["metadata"]["stateDelta"] == {"gone": None}  # type: ignore[index]


def test_state_delta_is_atomic_with_the_insert(store: Any) -> None:
    session = new(store)
    session.update_state({"step": 0})
    with pytest.raises(InvalidMessageError):
        session.append_message({"id": "bad", "role": "", "parts": []}, state_delta={"step": 1})
    with pytest.raises(InvalidMessageError):
        session.append_message(
            {"id": "compaction_x", "role": "user", "parts": []}, state_delta={"step": 2}
        )
    with pytest.raises(MessageNotFoundError):
        session.append_message(user("orphan", id="o1"), parent_id="nope", state_delta={"step": 3})
    assert session.get_state("step") == 0
    assert new(store).get_state("step") == 0
    assert session.get_message("o1") is None
    assert session.get_history() == []


def test_reappending_existing_id_does_not_apply_delta(store: Any) -> None:
    session = new(store)
    session.append_message(user("hi", id="m1"), state_delta={"step": 1})
    again = session.append_message(user("other text", id="m1"), state_delta={"step": 99})
    assert again["parts"][0]["text"] == "hi"
    assert session.get_state("step") == 1
    assert new(store).get_state("step") == 1


def test_manager_state_api(store: Any) -> None:
    manager = SessionManager(store, app_name="mstate")
    manager.create(session_id="s1", user_id="u1")
    manager.create(session_id="s2", user_id="u1")
    manager.create(session_id="s3", user_id="u2")
    before = manager.get("s1").updated_at  # type: ignore[union-attr]
    manager.update_state("s1", {"k": 1, "user:u": 2, "app:a": 3})
    assert manager.get("s1").updated_at > before  # type: ignore[union-attr]
    assert dict(manager.get_state("s1")) == {"k": 1, "user:u": 2, "app:a": 3}
    assert dict(manager.get_state("s2")) == {"user:u": 2, "app:a": 3}
    assert dict(manager.get_state("s3")) == {"app:a": 3}
    session = manager.get_session("s1")
    assert session.get_state("k") == 1
    session.update_state({"k": None})
    assert "k" not in manager.get_state("s1")


def test_state_write_creates_registry_row(store: Any) -> None:
    manager = SessionManager(store)
    session = new(store, "fresh", "u5")
    assert manager.get("fresh") is None
    session.update_state({"k": 1})
    row = manager.get("fresh")
    assert row is not None and row.user_id == "u5"


def test_temp_only_update_writes_nothing(store: Any) -> None:
    session = new(store, "tmp", None)
    session.update_state({"temp:x": 1})
    assert session.get_state("temp:x") == 1
    assert store.get_state("default", "tmp", None) == {}


def test_update_state_is_all_or_nothing(store: Any) -> None:
    session = new(store)
    session.update_state({"a": 0})
    try:
        session.update_state({"a": 1, "bad": object()})
    except Exception:
        # rejected: nothing of the delta was applied
        assert session.get_state("a") == 0
        assert new(store).get_state("a") == 0
        assert new(store).get_state("bad") is None


def test_temp_state_does_not_follow_a_switch_to_another_session(store: threadline.Store) -> None:
    session = threadline.Session(store, session_id="first")
    session.update_state({"temp:draft": "x", "topic": "tea"})
    other = session.for_session("second")  # a used session is never re-pointed: a new one
    assert other is not session and other.session_id == "second"
    assert "temp:draft" not in other.state and "topic" not in other.state
    assert session.session_id == "first" and session.get_state("temp:draft") == "x"
