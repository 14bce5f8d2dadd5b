"""Rewind and which session operations count as writes (§11 "More precise rules").

Black-box: only the public API of ``threadline``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from threadline import (
    CompactResult,
    MessageNotFoundError,
    Session,
    SessionManager,
    ThreadlineError,
)
from threadline.messages import assistant, user


def ids_of(history: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in history]


def _three_turns(manager: SessionManager, sid: str = "s") -> Session:
    manager.create(session_id=sid, user_id="u1")
    session = manager.get_session(sid).for_user("u1")
    session.update_state({"step": 0, "gone": "present", "pre": True})
    session.append_message(user("one", id="m1"), state_delta={"step": 1})
    session.append_message(
        assistant("two", id="m2"),
        state_delta={"step": 2, "app:n": 1, "user:p": "x", "gone": None, "temp:t": 1},
    )
    session.append_message(user("three", id="m3"), state_delta={"step": 3, "extra": "y"})
    return session


def test_rewind_moves_head_to_parent_and_restores_session_state(store: Any) -> None:
    manager = SessionManager(store, app_name="rw")
    session = _three_turns(manager)
    assert manager.get_state("s")["step"] == 3
    manager.rewind("s", "m2")
    assert session.get_latest_leaf()["id"] == "m1"  # type: ignore[index]
    assert ids_of(manager.get_history("s")) == ["m1"]
    # nothing deleted: the abandoned turn stays as a branch
    assert session.get_message("m2") is not None and session.get_message("m3") is not None
    assert ids_of(manager.get_branches("s", "m1")) == ["m2"]
    assert ids_of(session.get_history("m3")) == ["m1", "m2", "m3"]
    assert manager.get("s").message_count == 3  # type: ignore[union-attr]
    state = dict(manager.get_state("s"))
    assert state["step"] == 1
    assert "extra" not in state
    assert state["gone"] == "present"  # a deletion is undone too
    assert state["pre"] is True
    # app: and user: keys are not rolled back
    assert state["app:n"] == 1
    assert state["user:p"] == "x"
    # every view agrees
    assert new_view(store, "rw", "s").get_state("step") == 1
    assert session.get_state("step") == 1


def new_view(store: Any, app: str, sid: str) -> Session:
    return SessionManager(store, app_name=app).get_session(sid).for_user("u1")


def test_appending_after_rewind_starts_a_new_branch(store: Any) -> None:
    manager = SessionManager(store, app_name="rw2")
    session = _three_turns(manager)
    manager.rewind("s", "m2")
    session.append_message(assistant("two again", id="m2b"), state_delta={"step": 22})
    assert ids_of(session.get_history()) == ["m1", "m2b"]
    assert ids_of(session.get_branches("m1")) == ["m2", "m2b"]
    assert manager.get_state("s")["step"] == 22


def test_rewind_to_before_the_root(store: Any) -> None:
    manager = SessionManager(store, app_name="rw3")
    _three_turns(manager)
    manager.rewind("s", "m1")
    assert manager.get_history("s") == []
    assert manager.get_message_count("s") == 0
    state = dict(manager.get_state("s"))
    assert state["step"] == 0
    assert state["gone"] == "present"
    assert "extra" not in state
    assert manager.get("s").message_count == 3  # type: ignore[union-attr]


def test_rewind_twice_and_from_a_middle_message(store: Any) -> None:
    manager = SessionManager(store, app_name="rw4")
    session = _three_turns(manager)
    manager.rewind("s", "m3")
    assert ids_of(session.get_history()) == ["m1", "m2"]
    assert manager.get_state("s")["step"] == 2
    assert "extra" not in manager.get_state("s")
    manager.rewind("s", "m2")
    assert ids_of(session.get_history()) == ["m1"]
    assert manager.get_state("s")["step"] == 1


def test_rewind_unknown_message_raises(store: Any) -> None:
    manager = SessionManager(store, app_name="rw5")
    _three_turns(manager)
    with pytest.raises(MessageNotFoundError) as caught:
        manager.rewind("s", "nope")
    assert isinstance(caught.value, KeyError)
    assert isinstance(caught.value, ThreadlineError)
    assert ids_of(manager.get_history("s")) == ["m1", "m2", "m3"]
    assert manager.get_state("s")["step"] == 3


def test_rewind_does_not_touch_other_sessions(store: Any) -> None:
    manager = SessionManager(store, app_name="rw6")
    _three_turns(manager, "s")
    _three_turns(manager, "t")
    manager.rewind("s", "m1")
    assert ids_of(manager.get_history("t")) == ["m1", "m2", "m3"]
    assert manager.get_state("t")["step"] == 3


# ------------------------------------------------------------------------- writes move updated_at


def _stamp(manager: SessionManager, sid: str) -> datetime:
    row = manager.get(sid)
    assert row is not None, sid
    return row.updated_at


class Clock:
    def __init__(self, manager: SessionManager, sid: str) -> None:
        self.manager, self.sid = manager, sid
        self.last = _stamp(manager, sid)

    def moved(self) -> None:
        now = _stamp(self.manager, self.sid)
        assert now > self.last
        self.last = now

    def still(self) -> None:
        assert _stamp(self.manager, self.sid) == self.last


def _session(store: Any, sid: str) -> Session:
    return (
        Session.create(store)
        .for_session(sid)
        .for_user("u1")
        .with_context("memory")
        .with_context("profile", scope="user")
        .on_compaction(lambda messages: CompactResult(messages[-1]["id"], messages[-1]["id"], "S"))
    )


def test_session_block_write_creates_row_and_moves_updated_at(store: Any) -> None:
    manager = SessionManager(store)  # a bare Session belongs to app "default"
    session = _session(store, "blocks")
    session.get_context_blocks()
    session.freeze_system_prompt()
    assert manager.get("blocks") is None  # reads create no row
    session.replace_context_block("memory", "first")
    row = manager.get("blocks")
    assert row is not None and row.user_id == "u1"
    clock = Clock(manager, "blocks")
    session.append_context_block("memory", "second")
    clock.moved()
    session.tools().execute("set_context", {"label": "memory", "content": "third"})
    clock.moved()
    session.get_context_blocks()
    session.refresh_system_prompt()
    session.tools()
    clock.still()


def test_checkout_rewind_and_overlays_move_updated_at(store: Any) -> None:
    manager = SessionManager(store)
    session = _session(store, "moves")
    session.append_messages([user("a", id="m1"), assistant("b", id="m2"), user("c", id="m3")])
    clock = Clock(manager, "moves")
    session.get_history()
    session.get_branches("m1")
    session.get_compactions()
    session.get_path_length()
    clock.still()
    session.checkout("m2")
    clock.moved()
    session.checkout("m3")
    clock.moved()
    session.add_compaction("sum", "m1", "m2")
    clock.moved()
    session.compact()
    clock.moved()
    manager.rewind("moves", "m3")
    clock.moved()
    session.update_message({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "A"}]})
    clock.moved()
    session.delete_messages(["m3"])
    clock.moved()
    session.update_state({"k": 1})
    clock.moved()
    session.clear_messages()
    clock.moved()


def test_checkout_unknown_id_raises(store: Any) -> None:
    session = _session(store, "co")
    session.append_message(user("a", id="m1"))
    with pytest.raises(MessageNotFoundError):
        session.checkout("nope")


# ------------------------------------------------------------------------ rewind by invocation


def _invocation(n: int, text: str) -> list[dict[str, Any]]:
    tag = {"invocationId": f"inv-{n}"}
    return [
        {**user(f"{text}?", id=f"u{n}"), "metadata": tag},
        {**assistant(f"{text}!", id=f"a{n}"), "metadata": tag},
    ]


def test_rewind_before_an_invocation_excludes_it_and_what_followed(store: Any) -> None:
    # ADK-TS: runner.rewind({rewindBeforeInvocationId: "inv-456"}) — "Session now excludes
    # events from invocation inv-456 onwards".
    manager = SessionManager(store, app_name="adk")
    manager.append_all("s", _invocation(123, "hello"))
    manager.append("s", _invocation(456, "book")[0], state_delta={"booked": True})
    manager.append("s", _invocation(456, "book")[1])
    manager.append_all("s", _invocation(789, "thanks"))
    manager.rewind("s", before_invocation_id="inv-456")
    assert ids_of(manager.get_history("s")) == ["u123", "a123"]
    assert manager.get_state("s") == {}  # its state changes undone, as with a message id
    assert manager.get_message_count("s") == 2
    assert manager.get_session("s").get_message("a789") is not None  # nothing deleted


def test_rewind_by_invocation_looks_at_the_active_path_only(store: Any) -> None:
    manager = SessionManager(store, app_name="adk")
    manager.append_all("s", _invocation(1, "hi"))
    manager.append_all("s", _invocation(2, "left"))
    manager.append_all("s", _invocation(3, "right"), parent_id="a1")  # a branch: head moves
    with pytest.raises(MessageNotFoundError):
        manager.rewind("s", before_invocation_id="inv-2")  # only on the other branch
    manager.rewind("s", before_invocation_id="inv-3")
    assert ids_of(manager.get_history("s")) == ["u1", "a1"]
    with pytest.raises(MessageNotFoundError):
        manager.rewind("s", before_invocation_id="inv-none")


def test_rewind_needs_exactly_one_target(store: Any) -> None:
    manager = SessionManager(store)
    manager.append_all("s", _invocation(1, "hi"))
    with pytest.raises(ThreadlineError):
        manager.rewind("s")
    with pytest.raises(ThreadlineError):
        manager.rewind("s", "u1", before_invocation_id="inv-1")
    with pytest.raises(ThreadlineError):
        manager.rewind("s", before_invocation_id="")
    assert ids_of(manager.get_history("s")) == ["u1", "a1"]
