"""Conformance: history reads.

Order of get_history filters: overlays, ``after``, ``limit``, ``max_tokens``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

import threadline
from threadline import Session
from threadline.errors import MessageNotFoundError
from threadline.types import RecentHistory


def msg(mid: str, text: str | None = None, *, at: str | None = None,
        role: str = "user") -> dict[str, Any]:
    m: dict[str, Any] = {"id": mid, "role": role,
                         "parts": [{"type": "text", "text": text or f"text {mid}"}]}
    if at is not None:
        m["createdAt"] = at
    return m


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def size(message: dict[str, Any]) -> int:
    """Stored byte size: compact JSON, UTF-8 (PLAN conventions)."""
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def estimate(text: str) -> int:
    """The default token heuristic for one text."""
    if not text:
        return 0
    return math.ceil(max(len(text) / 4, len(text.split()) * 1.3))


def message_tokens(message: dict[str, Any]) -> int:
    return 4 + sum(estimate(p["text"]) for p in message["parts"] if p["type"] == "text")


@pytest.fixture
def session(store: Any) -> Session:
    return Session.create(store).for_session("s1")


def chain(session: Session, *mids: str) -> None:
    for mid in mids:
        session.append_message(msg(mid))


# --------------------------------------------------------------------------- get_history


def test_empty_session_history_is_empty(session: Session) -> None:
    assert session.get_history() == []
    assert session.get_history(limit=5, max_tokens=10) == []
    assert session.get_history(after=datetime(2000, 1, 1, tzinfo=UTC)) == []


def test_history_is_root_to_head_path(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    session.append_message(msg("b3"), "m2")
    session.append_message(msg("b4"))
    assert ids(session.get_history()) == ["m1", "m2", "b3", "b4"]
    assert ids(session.get_history("m3")) == ["m1", "m2", "m3"]
    assert ids(session.get_history(leaf_id="m2")) == ["m1", "m2"]
    assert session.get_history()[-1] == session.get_message("b4")


def test_history_unknown_leaf_raises(session: Session) -> None:
    with pytest.raises(MessageNotFoundError):
        session.get_history("nope")
    chain(session, "m1")
    with pytest.raises(MessageNotFoundError) as info:
        session.get_history("nope")
    assert isinstance(info.value, KeyError)


def test_limit_keeps_the_last_n(session: Session) -> None:
    chain(session, "m1", "m2", "m3", "m4", "m5")
    assert ids(session.get_history(limit=2)) == ["m4", "m5"]
    assert ids(session.get_history(limit=1)) == ["m5"]
    assert ids(session.get_history(limit=5)) == ["m1", "m2", "m3", "m4", "m5"]
    assert ids(session.get_history(limit=50)) == ["m1", "m2", "m3", "m4", "m5"]
    assert ids(session.get_history("m3", limit=2)) == ["m2", "m3"]


def test_limit_counts_after_overlays(session: Session) -> None:
    chain(session, "m1", "m2", "m3", "m4", "m5")
    c = session.add_compaction("summary", "m1", "m3")
    assert ids(session.get_history(limit=3)) == [f"compaction_{c.id}", "m4", "m5"]
    assert ids(session.get_history(limit=2)) == ["m4", "m5"]


def test_max_tokens_drops_oldest_until_it_fits(session: Session) -> None:
    for i in range(1, 6):
        session.append_message(msg(f"m{i}", " ".join(["word"] * (8 + i))))
    history = session.get_history()
    costs = [message_tokens(m) for m in history]
    last3 = sum(costs[-3:])
    assert ids(session.get_history(max_tokens=last3)) == ["m3", "m4", "m5"]
    assert ids(session.get_history(max_tokens=last3 - 1)) == ["m4", "m5"]
    assert ids(session.get_history(max_tokens=sum(costs))) == ["m1", "m2", "m3", "m4", "m5"]
    assert ids(session.get_history(max_tokens=10**9)) == ["m1", "m2", "m3", "m4", "m5"]


@pytest.mark.parametrize("budget", [0, 1, 5])
def test_max_tokens_always_keeps_the_leaf(session: Session, budget: int) -> None:
    session.append_message(msg("m1"))
    session.append_message(msg("m2", "a fairly long leaf message " * 20))
    assert ids(session.get_history(max_tokens=budget)) == ["m2"]
    assert ids(session.get_history("m1", max_tokens=budget)) == ["m1"]


def test_max_tokens_counts_overlay_messages(session: Session) -> None:
    for i in range(1, 5):
        session.append_message(msg(f"m{i}", " ".join(["long"] * 40)))
    c = session.add_compaction("short", "m1", "m2")
    history = session.get_history()
    assert ids(history) == [f"compaction_{c.id}", "m3", "m4"]
    total = sum(message_tokens(m) for m in history)
    assert ids(session.get_history(max_tokens=total)) == ids(history)
    assert ids(session.get_history(max_tokens=total - 1)) == ["m3", "m4"]


def test_max_tokens_counts_reasoning_and_tool_parts(session: Session) -> None:
    tool = {"type": "tool-search", "toolCallId": "c1", "toolName": "search",
            "state": "output-available", "input": {"query": "weather in oslo today"},
            "output": {"results": ["rain " * 30, "cold"], "n": 2}}
    session.append_message(msg("m1", "question about the weather"))
    session.append_message({"id": "m2", "role": "assistant", "parts": [
        {"type": "reasoning", "text": "I should look it up " * 5}, tool]})
    session.append_message(msg("m3", "thanks"))
    compact = lambda v: v if isinstance(v, str) else json.dumps(  # noqa: E731
        v, separators=(",", ":"), ensure_ascii=False)
    m2 = session.get_message("m2")
    cost2 = 4 + estimate(m2["parts"][0]["text"]) + estimate(compact(tool["input"])) + estimate(
        compact(tool["output"]))
    cost3 = message_tokens(session.get_message("m3"))
    assert ids(session.get_history(max_tokens=cost2 + cost3)) == ["m2", "m3"]
    assert ids(session.get_history(max_tokens=cost2 + cost3 - 1)) == ["m3"]


def test_max_tokens_ignores_system_prompt_and_session_counter(store: Any) -> None:
    plain = Session.create(store).for_session("s1")
    for i in range(1, 5):
        plain.append_message(msg(f"m{i}", " ".join(["word"] * 12)))
    budget = 2 * message_tokens(plain.get_message("m4"))
    rich = (
        Session.create(store).for_session("s1")
        .with_context("soul", provider="You are a very helpful assistant. " * 100)
        .compact_after(10**9, token_counter=lambda **kwargs: 10**6)
    )
    rich.freeze_system_prompt()
    assert ids(plain.get_history(max_tokens=budget)) == ["m3", "m4"]
    assert ids(rich.get_history(max_tokens=budget)) == ["m3", "m4"]


def test_limit_then_max_tokens(session: Session) -> None:
    for i in range(1, 6):
        session.append_message(msg(f"m{i}", " ".join(["token"] * 10)))
    cost = message_tokens(session.get_message("m5"))
    assert ids(session.get_history(limit=3, max_tokens=10**6)) == ["m3", "m4", "m5"]
    assert ids(session.get_history(limit=3, max_tokens=2 * cost)) == ["m4", "m5"]
    assert ids(session.get_history(limit=1, max_tokens=10 * cost)) == ["m5"]


def test_after_keeps_messages_created_at_or_after(session: Session) -> None:
    session.append_message(msg("m1", at="2026-01-01T09:00:00.000Z"))
    session.append_message(msg("m2", at="2026-01-01T10:00:00.000Z"))
    session.append_message(msg("m3", at="2026-01-01T11:00:00.000Z"))
    utc10 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert ids(session.get_history(after=utc10)) == ["m2", "m3"]
    assert ids(session.get_history(after=utc10 + timedelta(milliseconds=1))) == ["m3"]
    assert ids(session.get_history(after=utc10 - timedelta(hours=5))) == ["m1", "m2", "m3"]
    # naive datetimes are UTC
    assert ids(session.get_history(after=datetime(2026, 1, 1, 10, 0))) == ["m2", "m3"]
    # other offsets are converted
    plus2 = timezone(timedelta(hours=2))
    assert ids(session.get_history(after=datetime(2026, 1, 1, 12, 0, tzinfo=plus2))) == ["m2", "m3"]
    assert ids(session.get_history(after=datetime(2026, 1, 1, 11, 0, 0, 1))) == []
    # sub-millisecond precision of `after` is honoured
    assert ids(session.get_history(after=utc10 + timedelta(microseconds=500))) == ["m3"]


def test_after_compares_each_message_not_a_suffix(session: Session) -> None:
    # createdAt given by callers need not grow along the path
    session.append_message(msg("m1", at="2026-01-01T12:00:00.000Z"))
    session.append_message(msg("m2", at="2026-01-01T09:00:00.000Z"))
    session.append_message(msg("m3", at="2026-01-01T10:00:00.000Z"))
    after = datetime(2026, 1, 1, 9, 30, tzinfo=UTC)
    assert ids(session.get_history(after=after)) == ["m1", "m3"]


def test_after_is_applied_before_limit(session: Session) -> None:
    session.append_message(msg("m1", at="2026-01-01T12:00:00.000Z"))
    session.append_message(msg("m2", at="2026-01-01T09:00:00.000Z"))
    session.append_message(msg("m3", at="2026-01-01T10:00:00.000Z"))
    after = datetime(2026, 1, 1, 11, 0, tzinfo=UTC)
    # after first: [m1], then limit 1 -> [m1]; limit first would give [m3] -> []
    assert ids(session.get_history(after=after, limit=1)) == ["m1"]


def test_overlays_are_applied_before_after(session: Session) -> None:
    session.append_message(msg("m1", at="2026-01-01T09:00:00.000Z"))
    session.append_message(msg("m2", at="2026-01-01T10:00:00.000Z"))
    session.append_message(msg("m3", at="2026-01-01T11:00:00.000Z"))
    session.append_message(msg("m4", at="2026-01-01T12:00:00.000Z"))
    c = session.add_compaction("early part", "m1", "m2")
    overlay = f"compaction_{c.id}"
    # the overlay carries m2's createdAt (10:00)
    t = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
    assert ids(session.get_history(after=t)) == [overlay, "m3", "m4"]
    assert ids(session.get_history(after=t - timedelta(minutes=30))) == [overlay, "m3", "m4"]
    assert ids(session.get_history(after=t + timedelta(minutes=30))) == ["m3", "m4"]


def test_after_then_limit_then_max_tokens(session: Session) -> None:
    for i in range(1, 7):
        session.append_message(msg(f"m{i}", " ".join(["same"] * 10),
                                   at=f"2026-01-01T0{i}:00:00.000Z"))
    cost = message_tokens(session.get_message("m6"))
    after = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)
    assert ids(session.get_history(after=after, limit=4, max_tokens=3 * cost)) == ["m4", "m5", "m6"]
    assert ids(session.get_history(after=after, limit=2, max_tokens=3 * cost)) == ["m5", "m6"]


# --------------------------------------------------------------------------- get_recent_history


def test_recent_history_empty_session(session: Session) -> None:
    recent = session.get_recent_history(1000)
    assert isinstance(recent, RecentHistory)
    assert recent.messages == []
    assert recent.truncated is False
    assert recent.total_content_bytes == 0
    assert set(recent.to_dict()) >= {"messages", "truncated", "total_content_bytes"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        recent.truncated = True  # type: ignore[misc]


def _fill(session: Session, n: int = 6) -> list[dict[str, Any]]:
    texts = ["héllo wörld", "東京は晴れです", "emoji 🚀🚀", "plain ascii text", "ñandú", "last"]
    for i in range(n):
        session.append_message(msg(f"m{i + 1}", texts[i % len(texts)] * (i + 1)))
    return session.get_history()


def test_recent_history_window_fits_max_bytes(session: Session) -> None:
    path = _fill(session)
    sizes = [size(m) for m in path]
    total = sum(sizes)
    last3 = sum(sizes[-3:])
    recent = session.get_recent_history(last3)
    assert ids(recent.messages) == ["m4", "m5", "m6"]
    assert recent.messages == path[-3:]
    assert recent.truncated is True
    assert recent.total_content_bytes == total
    assert ids(session.get_recent_history(last3 - 1).messages) == ["m5", "m6"]
    everything = session.get_recent_history(total)
    assert ids(everything.messages) == ids(path)
    assert everything.truncated is False
    assert everything.total_content_bytes == total
    assert session.get_recent_history(10**9).truncated is False


@pytest.mark.parametrize("budget", [0, 1])
def test_recent_history_always_keeps_the_leaf(session: Session, budget: int) -> None:
    path = _fill(session, 3)
    recent = session.get_recent_history(budget)
    assert ids(recent.messages) == ["m3"]
    assert ids(session.get_recent_history(budget, min_recent_messages=0).messages) == ["m3"]
    assert recent.truncated is True
    assert recent.total_content_bytes == sum(size(m) for m in path)


def test_recent_history_min_recent_messages(session: Session) -> None:
    path = _fill(session)
    recent = session.get_recent_history(1, min_recent_messages=4)
    assert ids(recent.messages) == ["m3", "m4", "m5", "m6"]
    assert recent.truncated is True
    # budget larger than the minimum still wins
    sizes = [size(m) for m in path]
    assert ids(session.get_recent_history(sum(sizes[-5:]), min_recent_messages=2).messages) == [
        "m2", "m3", "m4", "m5", "m6"]
    more = session.get_recent_history(1, min_recent_messages=100)
    assert ids(more.messages) == ids(path)
    assert more.truncated is False


def test_recent_history_counts_only_the_head_path(session: Session) -> None:
    session.append_message(msg("m1", "short"))
    session.append_message(msg("big", "x" * 5000))
    session.append_message(msg("m2", "ünïcode ✓"), "m1")
    path = session.get_history()
    assert ids(path) == ["m1", "m2"]
    recent = session.get_recent_history(10**6)
    assert ids(recent.messages) == ["m1", "m2"]
    assert recent.total_content_bytes == size(path[0]) + size(path[1])
    session.checkout("big")
    assert session.get_recent_history(10**6).total_content_bytes == size(path[0]) + size(
        session.get_message("big"))


def test_recent_history_total_follows_updates_and_deletes(session: Session) -> None:
    _fill(session, 4)
    session.update_message(msg("m2", "much longer replacement text ✓" * 10, role="assistant"))
    path = session.get_history()
    assert session.get_recent_history(10).total_content_bytes == sum(size(m) for m in path)
    session.delete_messages(["m2"])  # m3's path now starts at m3
    path = session.get_history()
    assert ids(path) == ["m3", "m4"]
    recent = session.get_recent_history(10**6)
    assert recent.total_content_bytes == sum(size(m) for m in path)
    assert recent.truncated is False


def test_recent_history_applies_overlays_inside_the_window(session: Session) -> None:
    for i in range(1, 6):
        session.append_message(msg(f"m{i}", f"message number {i} " * 3))
    path = session.get_history()
    c = session.add_compaction("S", "m2", "m3")
    sizes = [size(m) for m in path]
    # window m2..m5: both ends inside -> overlay applied
    inside = session.get_recent_history(sum(sizes[1:]))
    assert ids(inside.messages) == [f"compaction_{c.id}", "m4", "m5"]
    assert inside.truncated is True
    assert inside.total_content_bytes == sum(sizes)
    # window m3..m5: m2 is outside -> not applied
    partial = session.get_recent_history(sum(sizes[2:]))
    assert ids(partial.messages) == ["m3", "m4", "m5"]
    assert partial.truncated is True
    # whole path
    whole = session.get_recent_history(sum(sizes))
    assert ids(whole.messages) == ["m1", f"compaction_{c.id}", "m4", "m5"]
    assert whole.truncated is False


def test_after_accepts_iso_strings_and_rejects_other_types(store: threadline.Store) -> None:
    # Regression: a string used to raise a bare AttributeError instead of a typed error.
    session = threadline.Session(store, session_id="after-types")
    session.append_message({"id": "old", "role": "user", "content": "a",
                            "createdAt": "2020-01-01T00:00:00.000Z"})
    session.append_message({"id": "new", "role": "user", "content": "b",
                            "createdAt": "2026-01-01T00:00:00.000Z"})
    assert [m["id"] for m in session.get_history(after="2025-06-01")] == ["new"]
    with pytest.raises(threadline.InvalidArgumentError):
        session.get_history(after="not a date")
    with pytest.raises(threadline.InvalidArgumentError):
        session.get_history(after=True)  # epoch seconds are accepted, a bool is not
    with pytest.raises(threadline.InvalidArgumentError):
        session.get_history(after=[2025])  # type: ignore[arg-type]
