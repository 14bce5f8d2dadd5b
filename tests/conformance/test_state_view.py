"""``session.state_view()``: ADK-TS ``State`` with a pending delta, on every backend.

The seed: ``new State({existing: "value"}, {})``; ``state.set("new", "data")`` puts only "new"
in the delta; ``hasDelta()`` is true; ``toDict()`` is ``{existing: "value", new: "data"}``;
``ctx.state.get("user:name", "Guest")``, ``set("temp:counter", counter + 1)``,
``has("user:preferences")``; changes are persisted after each invocation.
"""

from __future__ import annotations

from typing import Any

import pytest

import threadline
from threadline import InvalidArgumentError, Session, SessionManager, StateView, ThreadlineError


def test_the_seed_example(store: threadline.Store) -> None:
    session = Session.create(store).for_session("state").for_user("u1")
    session.update_state({"existing": "value"})
    state = session.state_view()
    assert isinstance(state, StateView) and not state.has_delta()
    state.set("new", "data")
    assert state.delta == {"new": "data"}
    assert state.has_delta()
    assert state.to_dict() == {"existing": "value", "new": "data"}
    assert session.get_state("new") is None  # pending: nothing written yet
    state.commit()
    assert not state.has_delta() and state.delta == {}
    assert SessionManager(store).get_state("state") == {"existing": "value", "new": "data"}


def test_the_before_agent_callback_example(store: threadline.Store) -> None:
    manager = SessionManager(store, app_name="stateful")
    manager.create(session_id="s1", user_id="u1", state={"app:theme": "dark"})
    for _ in range(3):  # three invocations, each committed after it
        state = manager.get_session("s1", user_id="u1").state_view()
        assert state.get("user:name", "Guest") == "Guest"
        assert state.get("app:theme", "light") == "dark"
        state.set("temp:counter", state.get("temp:counter", 0) + 1)
        state.set("user:last_seen", 1767225600)
        if state.has("user:preferences"):
            state.set("user:seen_prefs", True)
        state.commit()
    session = manager.get_session("s1", user_id="u1")
    assert session.get_state("temp:counter") == 3  # temp: lives on the session object
    assert manager.get_session("s2", user_id="u1").get_state("user:last_seen") == 1767225600
    assert store.get_state("stateful", "s1", "u1") == {
        "app:theme": "dark", "user:last_seen": 1767225600}


def test_none_deletes_on_commit_and_reads_as_unset(store: threadline.Store) -> None:
    session = Session.create(store).for_session("del")
    session.update_state({"draft": "hi", "keep": 1})
    state = session.state_view()
    state.set("draft", None)
    assert not state.has("draft") and state.get("draft", "gone") == "gone"
    assert "draft" not in state and "keep" in state
    assert state.to_dict() == {"keep": 1}
    state.commit()
    assert dict(session.state) == {"keep": 1}


def test_bad_sets_raise_at_once_and_leave_the_delta_alone(store: threadline.Store) -> None:
    state = Session.create(store).for_session("bad").state_view()  # no user
    bad: list[tuple[Any, Any]] = [
        ("user:name", "Ana"), ("", 1), (3, 1), ("k", float("nan")), ("k", object()),
    ]
    for key, value in bad:
        with pytest.raises(InvalidArgumentError):
            state.set(key, value)
    assert not state.has_delta()
    state.set("temp:anything", object())  # temp: values are never stored: any object
    assert state.has_delta()


def test_over_a_custom_provider_only_temp_keys_can_be_set() -> None:
    custom = Session(_DictProvider(), session_id="p")
    state = custom.state_view()
    state.set("temp:step", 1)
    with pytest.raises(ThreadlineError):
        state.set("topic", "tea")
    state.commit()
    assert custom.get_state("temp:step") == 1


class _DictProvider:
    """The smallest SessionProvider: enough for state_view over temp: keys."""

    def __init__(self) -> None:
        self.messages: dict[str, Any] = {}

    def get_message(self, message_id: str) -> Any:
        return self.messages.get(message_id)

    def get_history(self, leaf_id: str | None = None) -> list[Any]:
        return list(self.messages.values())

    def get_latest_leaf(self) -> Any:
        return None

    def get_branches(self, message_id: str) -> list[Any]:
        return []

    def get_path_length(self, leaf_id: str | None = None) -> int:
        return len(self.messages)

    def append_message(self, message: Any, parent_id: str | None = None) -> None:
        self.messages[message["id"]] = message

    def update_message(self, message: Any) -> None:
        self.messages[message["id"]] = message

    def delete_messages(self, message_ids: Any) -> None:
        for mid in message_ids:
            self.messages.pop(mid, None)

    def clear_messages(self) -> None:
        self.messages.clear()

    def add_compaction(self, summary: str, from_message_id: str, to_message_id: str) -> Any:
        return None

    def get_compactions(self) -> list[Any]:
        return []

    def search_messages(self, query: str, limit: int) -> list[Any]:
        return []
