"""Conformance: message shape and normalisation on write.

What a store returns must be exactly the normalised message, on every backend.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from threadline import Session, messages

CANONICAL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


@pytest.fixture
def session(store: Any) -> Session:
    return Session.create(store).for_session("s1")


def parse_z(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize("message", [
    {"role": "user", "parts": [{"type": "text", "text": "no id"}]},
    {"id": None, "role": "user", "parts": [{"type": "text", "text": "id None"}]},
], ids=["missing", "none"])
def test_missing_id_gets_a_new_unique_id(session: Session, message: dict[str, Any]) -> None:
    a = session.append_message(message)
    b = session.append_message(message)
    assert isinstance(a["id"], str) and a["id"]
    assert isinstance(b["id"], str) and b["id"]
    assert a["id"] != b["id"]
    assert not a["id"].startswith("compaction_")
    assert session.get_message(a["id"]) == a
    assert [m["id"] for m in session.get_history()] == [a["id"], b["id"]]


def test_append_messages_generates_distinct_ids(session: Session) -> None:
    out = session.append_messages([{"role": "user", "content": str(i)} for i in range(5)])
    assert len({m["id"] for m in out}) == 5
    assert [m["id"] for m in session.get_history()] == [m["id"] for m in out]


# --------------------------------------------------------------------------- content and parts


def test_content_string_becomes_one_text_part(session: Session) -> None:
    out = session.append_message({"id": "m1", "role": "user", "content": "hello there"})
    assert out["parts"] == [{"type": "text", "text": "hello there"}]
    assert "content" not in out
    stored = session.get_message("m1")
    assert stored == out
    assert "content" not in stored


def test_content_is_dropped_when_parts_are_given(session: Session) -> None:
    out = session.append_message(
        {"id": "m1", "role": "user", "content": "ignored?",
         "parts": [{"type": "text", "text": "p"}]}
    )
    assert out["parts"][0] == {"type": "text", "text": "p"}
    assert "content" not in out
    assert "content" not in session.get_message("m1")


def test_empty_parts_list_is_valid(session: Session) -> None:
    out = session.append_message({"id": "m1", "role": "assistant", "parts": []})
    assert out["parts"] == []
    assert session.get_message("m1") == out


def test_part_kinds_unknown_types_and_extra_keys_round_trip(session: Session) -> None:
    message = {
        "id": "m1",
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "thinking…", "providerMetadata": {"x": 1}},
            {"type": "text", "text": "Result: ✓ 東京 🚀", "state": "done"},
            {"type": "tool-weather", "toolCallId": "c1", "toolName": "weather",
             "state": "output-available", "input": {"city": "Oslo"},
             "output": {"temp": -3.5, "tags": ["rain", None, True]}},
            {"type": "dynamic-tool", "toolCallId": "c2", "toolName": "dyn",
             "state": "input-available", "input": [1, 2, 3]},
            {"type": "data-custom", "data": {"nested": {"deep": [{"a": "b"}]}}},
            {"type": "step-start"},
        ],
        "metadata": {"model": "x", "usage": {"in": 1, "out": 2}, "unicode": "é"},
        "customTopLevel": {"kept": True},
        "createdAt": "2026-11-21T10:00:00.000Z",
    }
    before = copy.deepcopy(message)
    out = session.append_message(message)
    assert message == before
    assert out == message
    assert session.get_message("m1") == message
    assert session.get_history() == [message]


def test_stored_message_is_plain_json(session: Session) -> None:
    out = session.append_message({"role": "user", "content": "x", "metadata": {"a": [1, {"b": 2}]}})
    stored = session.get_message(out["id"])
    assert json.loads(json.dumps(stored)) == stored
    assert stored == out


# --------------------------------------------------------------------------- createdAt


def test_missing_created_at_is_the_write_time(session: Session) -> None:
    before = datetime.now(UTC)
    out = session.append_message({"id": "m1", "role": "user", "content": "x"})
    after = datetime.now(UTC)
    assert CANONICAL.match(out["createdAt"]), out["createdAt"]
    written = parse_z(out["createdAt"])
    assert before - timedelta(milliseconds=1) <= written <= after + timedelta(milliseconds=1)
    assert session.get_message("m1")["createdAt"] == out["createdAt"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2026-11-21T10:00:00.000Z", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T10:00:00Z", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T11:30:00+01:30", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T05:00:00.250-05:00", "2026-11-21T10:00:00.250Z"),
        ("2026-11-21T10:00:00.123456+00:00", "2026-11-21T10:00:00.123Z"),
        (datetime(2026, 11, 21, 10, 0, 0, 123000, tzinfo=UTC), "2026-11-21T10:00:00.123Z"),
        (datetime(2026, 11, 21, 12, 0, tzinfo=timezone(timedelta(hours=2))),
         "2026-11-21T10:00:00.000Z"),
        (datetime(2026, 11, 21, 10, 0, 0), "2026-11-21T10:00:00.000Z"),  # naive means UTC
    ],
    ids=["canonical", "no-millis", "offset", "neg-offset-millis", "micros", "aware-dt",
         "offset-dt", "naive-dt"],
)
def test_caller_created_at_is_kept_in_canonical_form(
    session: Session, given: Any, expected: str
) -> None:
    out = session.append_message({"id": "m1", "role": "user", "content": "x", "createdAt": given})
    assert out["createdAt"] == expected
    assert session.get_message("m1")["createdAt"] == expected
    assert session.get_history()[0]["createdAt"] == expected


# --------------------------------------------------------------------------- caller's dict


def test_callers_dict_is_never_mutated(session: Session) -> None:
    originals = [
        {"role": "user", "content": "convert me"},
        {"id": None, "role": "user", "parts": [{"type": "text", "text": "t"}]},
        {"id": "d1", "role": "user", "content": "dt", "createdAt": datetime(2026, 1, 1, 10, 0)},
        {"id": "d2", "role": "assistant", "parts": [{"type": "text", "text": "y"}],
         "metadata": {"a": {"b": [1]}}},
    ]
    for message in originals:
        snapshot = copy.deepcopy(message)
        session.append_message(message)
        assert message == snapshot
    batch = [{"role": "user", "content": "b1"}, {"role": "user", "content": "b2"}]
    snapshot = copy.deepcopy(batch)
    session.append_messages(batch)
    assert batch == snapshot


def test_returned_message_is_not_the_callers_object(session: Session) -> None:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "x"}]}
    out = session.append_message(message)
    out["parts"].append({"type": "text", "text": "mutated"})
    message["parts"].append({"type": "text", "text": "mutated too"})
    assert session.get_message("m1")["parts"] == [{"type": "text", "text": "x"}]


# --------------------------------------------------------------------------- helpers


def test_user_and_assistant_helpers(session: Session) -> None:
    u = messages.user("hello", id="u1")
    a = messages.assistant("hi back", id="a1")
    assert u["id"] == "u1" and u["role"] == "user"
    assert u["parts"] == [{"type": "text", "text": "hello"}]
    assert a["id"] == "a1" and a["role"] == "assistant"
    assert a["parts"] == [{"type": "text", "text": "hi back"}]
    session.append_messages([u, a])
    assert [m["id"] for m in session.get_history()] == ["u1", "a1"]
    anon = session.append_message(messages.user("anon"))
    assert isinstance(anon["id"], str) and anon["id"]


def test_tool_call_helper(session: Session) -> None:
    pending = messages.tool_call("weather", {"city": "Oslo"}, tool_call_id="call-1")
    done = messages.tool_call("weather", {"city": "Oslo"}, output={"temp": 3})
    for m, state in ((pending, "input-available"), (done, "output-available")):
        assert m["role"] == "assistant"
        [part] = m["parts"]
        assert part["type"].startswith("tool-") or part["type"] == "dynamic-tool"
        assert part["toolName"] == "weather"
        assert part["input"] == {"city": "Oslo"}
        assert part["state"] == state
        assert isinstance(part["toolCallId"], str) and part["toolCallId"]
    assert pending["parts"][0]["toolCallId"] == "call-1"
    assert done["parts"][0]["output"] == {"temp": 3}
    stored = session.append_message(done)
    assert session.get_message(stored["id"])["parts"] == done["parts"]


def test_text_of_joins_text_parts_with_one_space() -> None:
    message = {
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "first"},
            {"type": "reasoning", "text": "hidden"},
            {"type": "tool-x", "toolCallId": "c", "toolName": "x", "state": "input-available",
             "input": {"q": "no"}},
            {"type": "text", "text": "second"},
        ],
    }
    assert messages.text_of(message) == "first second"
    assert messages.text_of({"role": "user", "parts": []}) == ""
    assert messages.text_of(messages.user("solo")) == "solo"


@pytest.mark.parametrize(
    "text",
    ["nul \x00 inside", "control \x01\x1f\x7f chars", "line\nbreaks\r\n\ttabs",
     "quotes ' \" and \\ backslash", "astral 𝄞 🚀 👨\u200d👩\u200d👧", "rtl שלום", "\ufeff bom"],
    ids=["nul", "control", "whitespace", "quotes", "astral", "rtl", "bom"],
)
def test_any_valid_unicode_text_round_trips(session: Session, text: str) -> None:
    message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": text}],
               "metadata": {"copy": text, text: "as a key"}}
    out = session.append_message(message)
    assert out["parts"][0]["text"] == text
    stored = session.get_message("m1")
    assert stored["parts"][0]["text"] == text
    assert stored["metadata"] == {"copy": text, text: "as a key"}
    assert session.get_history()[0] == stored
