"""Conformance: compaction overlays at read time.

An overlay replaces the range from..to of the path being read by one synthetic assistant
message ``compaction_<id>``; originals are never deleted.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import Session
from threadline.errors import InvalidMessageError, MessageNotFoundError, ThreadlineError
from threadline.types import Compaction


def msg(mid: str, text: str | None = None, *, at: str | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"id": mid, "role": "user",
                         "parts": [{"type": "text", "text": text or f"text {mid}"}]}
    if at is not None:
        m["createdAt"] = at
    return m


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def ov(c: Compaction) -> str:
    return f"compaction_{c.id}"


@pytest.fixture
def session(store: Any) -> Session:
    s = Session.create(store).for_session("s1")
    for i in range(1, 6):
        s.append_message(msg(f"m{i}", at=f"2026-01-01T0{i}:00:00.000Z"))
    return s


# --------------------------------------------------------------------------- add_compaction


def test_add_compaction_returns_a_compaction(session: Session) -> None:
    before = datetime.now(UTC)
    c = session.add_compaction("the summary", "m1", "m3")
    assert isinstance(c, Compaction)
    assert isinstance(c.id, str) and c.id
    assert c.summary == "the summary"
    assert c.from_message_id == "m1"
    assert c.to_message_id == "m3"
    assert isinstance(c.created_at, datetime)
    assert c.created_at.utcoffset() == UTC.utcoffset(None)
    assert abs((c.created_at - before).total_seconds()) < 60
    assert c.to_dict()["summary"] == "the summary"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.summary = "changed"  # type: ignore[misc]
    assert session.get_compactions() == [c]


def test_overlay_message_shape(session: Session) -> None:
    c = session.add_compaction("Summary ✓ of one and two", "m1", "m2")
    history = session.get_history()
    assert ids(history) == [ov(c), "m3", "m4", "m5"]
    overlay = history[0]
    expected = {
        "id": f"compaction_{c.id}",
        "role": "assistant",
        "parts": [{"type": "text", "text": "Summary ✓ of one and two"}],
        "createdAt": "2026-01-01T02:00:00.000Z",  # that of the last covered message
    }
    assert {k: overlay.get(k) for k in expected} == expected
    assert set(overlay) <= {"id", "role", "parts", "createdAt", "metadata"}


def test_originals_are_never_deleted(session: Session) -> None:
    session.add_compaction("S", "m2", "m4")
    for mid in ("m2", "m3", "m4"):
        assert session.get_message(mid) is not None
    assert session.get_path_length() == 5
    assert [m["id"] for m in session.get_branches("m2")] == ["m3"]


def test_single_message_overlay(session: Session) -> None:
    c = session.add_compaction("just three", "m3", "m3")
    history = session.get_history()
    assert ids(history) == ["m1", "m2", ov(c), "m4", "m5"]
    assert history[2]["parts"] == [{"type": "text", "text": "just three"}]
    assert history[2]["createdAt"] == "2026-01-01T03:00:00.000Z"


def test_overlay_at_the_leaf(session: Session) -> None:
    c = session.add_compaction("tail", "m4", "m5")
    assert ids(session.get_history()) == ["m1", "m2", "m3", ov(c)]


def test_overlay_not_applied_when_reading_inside_the_range(session: Session) -> None:
    session.add_compaction("S", "m2", "m4")
    assert ids(session.get_history("m3")) == ["m1", "m2", "m3"]
    c = session.get_compactions()[0]
    assert ids(session.get_history("m4")) == ["m1", ov(c)]


@pytest.mark.parametrize(
    ("frm", "to"),
    [
        ("nope", "m3"),
        ("m1", "nope"),
        ("m3", "m1"),  # from is a descendant of to
        ("m3", "b3"),  # different branches
        ("b3", "m4"),
        ("compaction_x", "m2"),
    ],
)
def test_add_compaction_validates_its_range(session: Session, frm: str, to: str) -> None:
    session.append_message(msg("b3"), "m2")
    session.checkout("m5")
    with pytest.raises(ValueError) as info:
        session.add_compaction("S", frm, to)
    assert isinstance(info.value, ThreadlineError)
    assert session.get_compactions() == []
    assert ids(session.get_history()) == ["m1", "m2", "m3", "m4", "m5"]


def test_add_compaction_rejects_ids_of_another_session(store: Any, session: Session) -> None:
    other = Session.create(store).for_session("s2")
    other.append_message(msg("x1"))
    other.append_message(msg("x2"))
    with pytest.raises(ValueError):
        session.add_compaction("S", "x1", "x2")
    with pytest.raises(ValueError):
        session.add_compaction("S", "m1", "x2")
    assert session.get_compactions() == []
    assert other.get_compactions() == []


# --------------------------------------------------------------------------- branch-local


def test_overlay_is_branch_local(session: Session) -> None:
    # m1 - m2 - m3 - m4 - m5 and a sibling branch m2 - b3 - b4
    session.append_message(msg("b3"), "m2")
    session.append_message(msg("b4"))
    c = session.add_compaction("main only", "m2", "m4")
    assert ids(session.get_history("m5")) == ["m1", ov(c), "m5"]
    assert ids(session.get_history("b4")) == ["m1", "m2", "b3", "b4"]
    assert ids(session.get_history()) == ["m1", "m2", "b3", "b4"]  # head is b4
    shared = session.add_compaction("shared prefix", "m1", "m2")
    assert ids(session.get_history("b4")) == [ov(shared), "b3", "b4"]
    # on the main path, the newest overlay starting at m1 is `shared`
    assert ids(session.get_history("m5")) == [ov(shared), "m3", "m4", "m5"]


def test_newest_overlay_whose_end_is_on_the_path_wins(session: Session) -> None:
    session.append_message(msg("b3"), "m2")
    older = session.add_compaction("main", "m1", "m3")
    newer = session.add_compaction("branch", "m1", "b3")
    # main path: `newer` ends off the path, so `older` applies
    assert ids(session.get_history("m5")) == [ov(older), "m4", "m5"]
    assert ids(session.get_history("b3")) == [ov(newer)]


# --------------------------------------------------------------------------- precedence


def test_newest_wins_among_same_start_longer_newer(session: Session) -> None:
    session.add_compaction("short old", "m1", "m2")
    newer = session.add_compaction("long new", "m1", "m3")
    history = session.get_history()
    assert ids(history) == [ov(newer), "m4", "m5"]
    assert history[0]["parts"][0]["text"] == "long new"


def test_newest_wins_among_same_start_shorter_newer(session: Session) -> None:
    session.add_compaction("long old", "m1", "m4")
    newer = session.add_compaction("short new", "m1", "m2")
    assert ids(session.get_history()) == [ov(newer), "m3", "m4", "m5"]


def test_overlay_starting_inside_a_replaced_range_is_ignored(session: Session) -> None:
    first = session.add_compaction("A", "m1", "m3")
    session.add_compaction("B newer but nested start", "m2", "m4")
    assert ids(session.get_history()) == [ov(first), "m4", "m5"]


def test_overlay_fully_inside_another_is_ignored(session: Session) -> None:
    outer = session.add_compaction("outer", "m1", "m4")
    session.add_compaction("inner", "m2", "m3")
    assert ids(session.get_history()) == [ov(outer), "m5"]


def test_later_overlay_applies_when_outer_ends_elsewhere(session: Session) -> None:
    # the nested one applies when the enclosing overlay does not (reading a shorter path)
    session.add_compaction("outer", "m1", "m4")
    inner = session.add_compaction("inner", "m2", "m3")
    assert ids(session.get_history("m3")) == ["m1", ov(inner)]


def test_adjacent_overlays_both_apply(session: Session) -> None:
    a = session.add_compaction("A", "m1", "m2")
    b = session.add_compaction("B", "m3", "m4")
    history = session.get_history()
    assert ids(history) == [ov(a), ov(b), "m5"]
    assert [m["createdAt"] for m in history] == [
        "2026-01-01T02:00:00.000Z", "2026-01-01T04:00:00.000Z", "2026-01-01T05:00:00.000Z"]


def test_get_compactions_oldest_first_including_superseded(session: Session) -> None:
    a = session.add_compaction("A", "m1", "m2")
    b = session.add_compaction("B", "m1", "m3")
    c = session.add_compaction("C", "m2", "m2")
    got = session.get_compactions()
    assert [x.id for x in got] == [a.id, b.id, c.id]
    assert [x.summary for x in got] == ["A", "B", "C"]
    assert len({a.id, b.id, c.id}) == 3
    assert got[0].created_at <= got[1].created_at <= got[2].created_at


def test_overlays_are_per_session(store: Any, session: Session) -> None:
    other = Session.create(store).for_session("s2")
    for i in range(1, 4):
        other.append_message(msg(f"m{i}"))
    session.add_compaction("only s1", "m1", "m2")
    assert other.get_compactions() == []
    assert ids(other.get_history()) == ["m1", "m2", "m3"]


def test_overlays_persist_across_session_objects(store: Any, session: Session) -> None:
    c = session.add_compaction("persisted", "m1", "m3")
    again = Session.create(store).for_session("s1")
    assert ids(again.get_history()) == [ov(c), "m4", "m5"]
    assert [x.id for x in again.get_compactions()] == [c.id]


def test_deleted_endpoint_disables_overlay(session: Session) -> None:
    session.add_compaction("S", "m4", "m5")
    session.delete_messages(["m5"])
    assert ids(session.get_history()) == ["m1", "m2", "m3", "m4"]


# ------------------------------------------------------------------ overlay ids are not writable


def test_overlay_message_cannot_be_written_back(session: Session) -> None:
    session.add_compaction("S", "m1", "m2")
    overlay = session.get_history()[0]
    assert overlay["id"].startswith("compaction_")
    with pytest.raises(InvalidMessageError):
        session.append_message(overlay)
    with pytest.raises(InvalidMessageError):
        session.append_messages(session.get_history())
    assert session.get_path_length() == 5
    assert session.get_message(overlay["id"]) is None


def test_overlay_id_cannot_be_updated_or_checked_out(session: Session) -> None:
    c = session.add_compaction("S", "m1", "m2")
    with pytest.raises((InvalidMessageError, MessageNotFoundError)):
        session.update_message({"id": ov(c), "role": "user", "content": "x"})
    with pytest.raises(MessageNotFoundError):
        session.checkout(ov(c))
    with pytest.raises(MessageNotFoundError):
        session.get_history(ov(c))
    assert session.get_latest_leaf()["id"] == "m5"
    assert session.get_history()[0]["parts"][0]["text"] == "S"
