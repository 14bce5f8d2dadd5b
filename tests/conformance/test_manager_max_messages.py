"""``SessionManager(store, max_messages=N)``: RadarOS ``maxMessages`` without deleting anything.

The seed: ``new SessionManager(storage, {maxMessages: 50})``; ``const {overflow} = await
sm.appendMessages("conv-1", [user, assistant])`` — "overflow contains trimmed messages (empty if
under maxMessages)"; ``sm.getHistory("conv-1", 20)`` is the last 20 messages.
"""

from __future__ import annotations

from typing import Any

import pytest

import threadline
from threadline import AppendResult, InvalidArgumentError, SessionManager
from threadline.messages import assistant, user


def _exchange(i: int) -> list[dict[str, Any]]:
    return [user(f"Hello {i}", id=f"u{i}"), assistant(f"Hi there {i}!", id=f"a{i}")]


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def test_the_seed_example(store: threadline.Store) -> None:
    sm = SessionManager(store, app_name="radar", max_messages=50)
    sm.get_or_create("conv-1", user_id="user-42")
    for i in range(25):  # 50 messages: exactly at the cap
        result = sm.append_all("conv-1", _exchange(i), user_id="user-42")
        assert isinstance(result, AppendResult) and isinstance(result, list)
        assert ids(result) == [f"u{i}", f"a{i}"]
        assert result.overflow == []
    result = sm.append_all("conv-1", _exchange(25))
    assert ids(result.overflow) == ["u0", "a0"]  # oldest first
    assert result.overflow[0]["parts"][0]["text"] == "Hello 0"
    assert ids(sm.append_all("conv-1", _exchange(26)).overflow) == ["u1", "a1"]
    history = sm.get_history("conv-1")
    assert len(history) == 50 and history[0]["id"] == "u2"
    assert ids(sm.get_history("conv-1", limit=20)) == ids(history[-20:])  # getHistory(id, 20)
    assert len(sm.get_history("conv-1", limit=None)) == 54  # nothing was deleted
    assert sm.get_message_count("conv-1") == 54
    assert [hit.content for hit in sm.search("Hello 0")][:1] == ["Hello 0"]


def test_an_append_larger_than_the_cap_overflows_its_own_oldest(store: threadline.Store) -> None:
    sm = SessionManager(store, max_messages=3)
    sm.append_all("s", _exchange(0))
    result = sm.append_all("s", [*_exchange(1), *_exchange(2)])
    assert ids(result) == ["u1", "a1", "u2", "a2"]
    assert ids(result.overflow) == ["u0", "a0", "u1"]
    assert ids(sm.get_history("s")) == ["a1", "u2", "a2"]


def test_overflow_follows_the_active_path_when_an_append_branches(store: threadline.Store) -> None:
    sm = SessionManager(store, max_messages=2)
    sm.append_all("s", [*_exchange(0), *_exchange(1)])
    # Regenerate a0's answer to u0: the new path is u0, a0b; nothing of it left the window.
    result = sm.append_all("s", [assistant("again", id="a0b")], parent_id="u0")
    assert result.overflow == []
    result = sm.append_all("s", _exchange(2))
    assert ids(result.overflow) == ["u0", "a0b"]


def test_overflow_leaves_summaries_and_the_window_alone(store: threadline.Store) -> None:
    sm = SessionManager(store, max_messages=4)
    sm.append_all("s", [*_exchange(0), *_exchange(1)])
    sm.add_compaction("s", "Greetings 0.", "u0", "a0")  # the window: summary, u1, a1
    result = sm.append_all("s", _exchange(2))
    assert [m["parts"][0]["text"] for m in result.overflow] == ["Greetings 0."]
    assert ids(sm.get_history("s")) == ["u1", "a1", "u2", "a2"]


def test_without_max_messages_nothing_changes(store: threadline.Store) -> None:
    sm = SessionManager(store)
    assert sm.max_messages is None
    for i in range(30):
        assert sm.append_all("s", _exchange(i)).overflow == []
    assert len(sm.get_history("s")) == 60
    assert sm.append_all("s", []) == [] and sm.append_all("s", []).overflow == []


def test_max_messages_must_be_a_positive_integer() -> None:
    for bad in (0, -1, 2.5, "50", True):
        with pytest.raises(InvalidArgumentError):
            SessionManager(":memory:", max_messages=bad)  # type: ignore[arg-type]
