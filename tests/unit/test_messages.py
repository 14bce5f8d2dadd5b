"""Message normalisation, timestamps, encoding, builders and part inspection."""

from __future__ import annotations

import contextlib
import copy
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.errors import InvalidMessageError
from threadline.messages import (
    assistant,
    decode_message,
    encode_message,
    format_timestamp,
    is_overlay_id,
    is_tool_part,
    new_id,
    normalize_message,
    now_iso,
    parse_timestamp,
    skill_loads_of,
    text_of,
    tool_call,
    tool_name_of,
    user,
    validate_message_id,
)

CANONICAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
NOW = "2026-11-21T10:00:00.000Z"


# --------------------------------------------------------------------------- ids and time


def test_new_id_is_unique_string() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(isinstance(i, str) and i and not is_overlay_id(i) for i in ids)


def test_new_ids_are_hex_and_time_ordered() -> None:
    import re
    import time

    first = new_id()
    time.sleep(0.002)  # a later millisecond
    later = [new_id() for _ in range(100)]
    assert all(re.fullmatch("[0-9a-f]{32}", i) for i in [first, *later])
    assert all(first < i for i in later)  # a later id sorts after an earlier one
    assert abs(int(first[:12], 16) - time.time() * 1000) < 60_000  # its prefix is the time


def test_now_iso_is_canonical_and_current() -> None:
    value = now_iso()
    assert CANONICAL.fullmatch(value)
    assert abs(parse_timestamp(value) - datetime.now(UTC)) < timedelta(seconds=5)


def test_format_timestamp_naive_is_utc_and_truncates_to_ms() -> None:
    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, 678999)) == "2026-01-02T03:04:05.678Z"


def test_format_timestamp_converts_offsets_to_utc() -> None:
    dt = datetime(2026, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(dt) == "2025-12-31T23:00:00.000Z"


def test_format_timestamp_pads_small_years() -> None:
    assert format_timestamp(datetime(5, 1, 1)) == "0005-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21T10:00:00.000Z", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T10:00:00Z", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T11:30:00+01:30", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T05:00:00-0500", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21T10:00:00.123456789Z", "2026-11-21T10:00:00.123Z"),
        ("2026-11-21T10:00:00.5", "2026-11-21T10:00:00.500Z"),
        ("2026-11-21 10:00:00", "2026-11-21T10:00:00.000Z"),
        ("2026-11-21", "2026-11-21T00:00:00.000Z"),
    ],
)
def test_parse_timestamp_accepts_iso_variants(text: str, expected: str) -> None:
    parsed = parse_timestamp(text)
    assert parsed.tzinfo is not None and parsed.utcoffset() == timedelta(0)
    assert format_timestamp(parsed) == expected


def test_parse_timestamp_datetime_inputs() -> None:
    naive = datetime(2026, 1, 1, 12)
    assert parse_timestamp(naive) == datetime(2026, 1, 1, 12, tzinfo=UTC)
    aware = datetime(2026, 1, 1, 12, tzinfo=timezone(timedelta(hours=-3)))
    assert parse_timestamp(aware) == datetime(2026, 1, 1, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-11-21T25:00:00Z",
        "2026-11-21T10:00:00+25:00",
        "2026-11-21T10:00:00Zjunk",
        "0001-01-01T00:00:00+01:00",
    ],
)
def test_parse_timestamp_rejects_garbage(garbage: str) -> None:
    with pytest.raises(InvalidMessageError):
        parse_timestamp(garbage)


def test_parse_timestamp_rejects_non_strings() -> None:
    with pytest.raises(InvalidMessageError):
        parse_timestamp(12345)  # type: ignore[arg-type]


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9000, 1, 1)))
def test_timestamp_round_trip(dt: datetime) -> None:
    text = format_timestamp(dt)
    assert CANONICAL.fullmatch(text)
    assert format_timestamp(parse_timestamp(text)) == text


@given(st.text())
def test_parse_timestamp_only_raises_invalid_message_error(text: str) -> None:
    with contextlib.suppress(InvalidMessageError):
        parse_timestamp(text)


# --------------------------------------------------------------------------- normalisation


def test_content_becomes_text_part_and_is_dropped() -> None:
    out = normalize_message({"role": "user", "content": "hi"}, now=NOW)
    assert out["parts"] == [{"type": "text", "text": "hi"}]
    assert "content" not in out
    assert out["createdAt"] == NOW
    assert isinstance(out["id"], str) and out["id"]


def test_parts_win_over_content() -> None:
    msg = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "a"}], "content": "b"}
    out = normalize_message(msg, now=NOW)
    assert out["parts"] == [{"type": "text", "text": "a"}]
    assert "content" not in out


def test_none_id_gets_new_id() -> None:
    out = normalize_message({"id": None, "role": "user", "content": "x"})
    assert isinstance(out["id"], str) and out["id"]


def test_missing_created_at_defaults_to_now() -> None:
    out = normalize_message({"role": "user", "content": "x"})
    assert CANONICAL.fullmatch(out["createdAt"])


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-21T11:00:00+01:00", "2026-11-21T10:00:00.000Z"),
        (datetime(2026, 11, 21, 10, 0, 0, 250000), "2026-11-21T10:00:00.250Z"),
        (
            datetime(2026, 11, 21, 12, tzinfo=timezone(timedelta(hours=2))),
            "2026-11-21T10:00:00.000Z",
        ),
    ],
)
def test_created_at_is_canonicalised(value: object, expected: str) -> None:
    out = normalize_message({"role": "user", "content": "x", "createdAt": value}, now=NOW)
    assert out["createdAt"] == expected


def test_key_order_and_extras_kept() -> None:
    msg = {
        "zeta": 1,
        "metadata": {"k": [1, 2]},
        "createdAt": NOW,
        "parts": [{"type": "custom-thing", "weird": {"x": 1}}],
        "role": "assistant",
        "id": "m1",
        "alpha": "kept",
    }
    out = normalize_message(msg)
    assert list(out) == ["id", "role", "parts", "createdAt", "metadata", "zeta", "alpha"]
    assert out["parts"] == [{"type": "custom-thing", "weird": {"x": 1}}]
    assert out["zeta"] == 1 and out["alpha"] == "kept"


def test_none_metadata_is_treated_as_absent() -> None:
    out = normalize_message({"role": "user", "content": "x", "metadata": None})
    assert "metadata" not in out


def test_input_is_never_mutated_and_output_is_deep_copy() -> None:
    msg: dict[str, Any] = {
        "role": "user",
        "parts": [{"type": "text", "text": "hi", "extra": {"n": [1]}}],
        "metadata": {"tags": ["a"]},
        "other": {"nested": [1]},
    }
    before = copy.deepcopy(msg)
    out = normalize_message(msg)
    assert msg == before
    out["parts"][0]["extra"]["n"].append(2)
    out["metadata"]["tags"].append("b")
    out["other"]["nested"].append(2)
    assert msg == before


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ("not a dict", "dict"),
        (["role", "user"], "dict"),
        ({"content": "x"}, "role"),
        ({"role": "", "content": "x"}, "role"),
        ({"role": 3, "content": "x"}, "role"),
        ({"role": "user", "parts": "text"}, "parts"),
        ({"role": "user"}, "neither"),
        ({"role": "user", "content": 42}, "content"),
        ({"role": "user", "content": None}, "content"),
        ({"id": 5, "role": "user", "content": "x"}, "id"),
        ({"id": "", "role": "user", "content": "x"}, "id"),
        ({"id": "compaction_1", "role": "user", "content": "x"}, "compaction_"),
        ({"role": "user", "parts": ["text"]}, "part 0"),
        ({"role": "user", "parts": [{"text": "no type"}]}, "type"),
        ({"role": "user", "parts": [{"type": 1}]}, "type"),
        ({"role": "user", "content": "x", "metadata": "m"}, "metadata"),
        ({"role": "user", "content": "x", "metadata": []}, "metadata"),
        ({"role": "user", "content": "x", "createdAt": "not a date"}, "timestamp"),
        ({"role": "user", "content": "x", "createdAt": 1700000000}, "createdAt"),
        ({"role": "user", "content": "bad \ud800 surrogate"}, "UTF-8"),
        ({"role": "user", "content": "x", "metadata": {"k": "\udfff"}}, "UTF-8"),
        ({"role": "user", "content": "x", "extra": {1, 2}}, "JSON"),
        ({"role": "user", "content": "x", "metadata": {"f": float("nan")}}, "JSON"),
        ({"role": "user", "parts": [{"type": "data-x", "data": object()}]}, "JSON"),
        # Amendment 13: text parts hold strings, roles are the four stored ones.
        ({"role": "user", "parts": [{"type": "text", "text": object()}]}, "string 'text'"),
        ({"role": "user", "parts": [{"type": "text", "text": None}]}, "string 'text'"),
        ({"role": "user", "parts": [{"type": "reasoning", "text": None}]}, "string 'text'"),
        ({"role": "robot", "content": "x"}, "'robot'"),
        ({"role": "model", "parts": []}, "'model'"),
    ],
)
def test_invalid_messages_raise(message: object, fragment: str) -> None:
    with pytest.raises(InvalidMessageError, match=re.escape(fragment)):
        normalize_message(message)


def test_invalid_message_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        normalize_message({"role": "user"})


def test_normalize_is_idempotent() -> None:
    once = normalize_message({"role": "user", "content": "x", "metadata": {"a": 1}})
    assert normalize_message(once) == once


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    role=st.text(min_size=1),
    text=st.text(),
    metadata=st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
def test_normalize_round_trips_through_json(role: str, text: str, metadata: Any) -> None:
    msg = {"role": role, "content": text, "metadata": metadata}
    try:
        out = normalize_message(msg, now=NOW)
    except InvalidMessageError:
        return  # only lone surrogates may make hypothesis text invalid
    assert decode_message(encode_message(out)) == out
    assert text_of(out) == text


# --------------------------------------------------------------------------- encoding


def test_encode_is_compact_and_keeps_unicode() -> None:
    text = encode_message({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "é東"}]})
    assert text == '{"id":"m1","role":"user","parts":[{"type":"text","text":"é東"}]}'


def test_decode_rejects_non_objects() -> None:
    with pytest.raises(InvalidMessageError):
        decode_message("[1, 2]")


# --------------------------------------------------------------------------- ids


def test_validate_message_id() -> None:
    assert validate_message_id("m1") == "m1"
    for bad in (None, 3, "", "compaction_x"):
        with pytest.raises(InvalidMessageError):
            validate_message_id(bad)


def test_is_overlay_id() -> None:
    assert is_overlay_id("compaction_abc")
    assert not is_overlay_id("m1")
    assert not is_overlay_id(None)


# --------------------------------------------------------------------------- builders


def test_user_and_assistant_builders() -> None:
    assert user("hi", id="m1") == {
        "id": "m1",
        "role": "user",
        "parts": [{"type": "text", "text": "hi"}],
    }
    msg = assistant("hello")
    assert msg["role"] == "assistant" and msg["parts"] == [{"type": "text", "text": "hello"}]
    assert isinstance(msg["id"], str) and msg["id"] != assistant("hello")["id"]


def test_tool_call_with_output() -> None:
    msg = tool_call("weather", {"city": "Oslo"}, output={"temp": 3}, tool_call_id="c1")
    assert msg["role"] == "assistant"
    assert msg["parts"] == [
        {
            "type": "tool-weather",
            "toolCallId": "c1",
            "toolName": "weather",
            "state": "output-available",
            "input": {"city": "Oslo"},
            "output": {"temp": 3},
        }
    ]


def test_tool_call_without_output() -> None:
    part = tool_call("search", {"q": "x"})["parts"][0]
    assert part["state"] == "input-available"
    assert "output" not in part
    assert isinstance(part["toolCallId"], str) and part["toolCallId"]


def test_builders_normalise_cleanly() -> None:
    for msg in (user("a"), assistant("b"), tool_call("t", {"a": 1}, "out")):
        out = normalize_message(msg, now=NOW)
        assert out["id"] == msg["id"] and out["parts"] == msg["parts"]


# --------------------------------------------------------------------------- inspection


def test_text_of_joins_text_parts_only() -> None:
    msg = {
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "a"},
            {"type": "reasoning", "text": "hidden"},
            {"type": "tool-x", "input": {"q": 1}},
            {"type": "text", "text": "b"},
        ],
    }
    assert text_of(msg) == "a b"


@pytest.mark.parametrize(
    "odd",
    [
        {},
        {"parts": None},
        {"parts": "x"},
        {"parts": [None, 3, "s", {"type": "text"}, {"type": "text", "text": 5}]},
        {"parts": [{"no": "type"}]},
    ],
)
def test_text_of_tolerates_odd_shapes(odd: dict[str, Any]) -> None:
    assert text_of(odd) == ""


def test_text_of_non_dict_and_content_style() -> None:
    assert text_of(None) == ""
    assert text_of("text") == ""
    assert text_of({"role": "user", "content": "hi"}) == "hi"


def test_is_tool_part_and_tool_name_of() -> None:
    assert is_tool_part({"type": "tool-search"})
    assert is_tool_part({"type": "dynamic-tool", "toolName": "mcp_x"})
    assert not is_tool_part({"type": "text"})
    assert not is_tool_part({"type": 3})
    assert not is_tool_part("tool-x")
    assert tool_name_of({"type": "tool-search"}) == "search"
    assert tool_name_of({"type": "tool-search", "toolName": "other"}) == "other"
    assert tool_name_of({"type": "dynamic-tool", "toolName": "mcp_x"}) == "mcp_x"
    assert tool_name_of({"type": "dynamic-tool"}) is None
    assert tool_name_of({"type": "text"}) is None


def _load(label: Any, key: Any, output: Any = "doc", state: str = "output-available") -> Any:
    part = {
        "type": "tool-load_context",
        "toolCallId": "c1",
        "toolName": "load_context",
        "state": state,
        "input": {"label": label, "key": key},
        "output": output,
    }
    return {"id": "m", "role": "assistant", "parts": [part]}


def test_skill_loads_of_finds_completed_loads() -> None:
    assert skill_loads_of(_load("skills", "pirate")) == [("skills", "pirate", "c1")]
    dynamic = {
        "parts": [
            {
                "type": "dynamic-tool",
                "toolName": "load_context",
                "state": "output-available",
                "input": {"label": "s", "key": "k"},
                "output": "x",
            }
        ]
    }
    assert skill_loads_of(dynamic) == [("s", "k", None)]


@pytest.mark.parametrize(
    "message",
    [
        _load("skills", "pirate", output="[skill unloaded: pirate]"),
        _load("skills", "pirate", state="input-available"),
        _load(None, "pirate"),
        _load("skills", 3),
        {"parts": [{"type": "tool-load_context", "state": "output-available", "input": "x"}]},
        {
            "parts": [
                {
                    "type": "tool-other",
                    "state": "output-available",
                    "input": {"label": "a", "key": "b"},
                }
            ]
        },
        {"parts": "junk"},
        "not a message",
    ],
)
def test_skill_loads_of_ignores_others(message: Any) -> None:
    assert skill_loads_of(message) == []
