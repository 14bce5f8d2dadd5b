# ruff: noqa: E501  (message shapes read best on one line)
"""OpenAI Chat Completions ⇄ threadline messages: lossless round trips (hypothesis, realistic
messages of every kind) and goldens written from the shapes in OpenAI's API reference."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.formats import from_openai_chat, is_openai_chat_message, to_openai_chat
from threadline.messages import normalize_message, normalize_messages

TEXT = st.text(max_size=40)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FUTURE = st.dictionaries(st.sampled_from(["x_future", "cache_control", "annotations"]), JSON_VALUE, max_size=1)
CALL_ID = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=4, max_size=12).map(lambda s: f"call_{s}")
TOOL_NAME = st.sampled_from(["get_weather", "search_docs", "send_email", "lookup_order"])


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@st.composite
def _arguments(draw: Any) -> str:
    args = draw(st.dictionaries(st.sampled_from(["city", "q", "n", "to"]), JSON_VALUE, max_size=3))
    style = draw(st.sampled_from(["compact", "spaced", "broken"]))
    if style == "broken":
        return '{"city": "Os'  # models do emit truncated JSON
    return json.dumps(args) if style == "spaced" else json.dumps(args, separators=(",", ":"))


@st.composite
def _tool_call(draw: Any) -> dict[str, Any]:
    call = {
        "id": draw(CALL_ID),
        "type": "function",
        "function": {"name": draw(TOOL_NAME), "arguments": draw(_arguments())},
    }
    return {**call, **draw(FUTURE)}


USER_PART = st.one_of(
    st.builds(lambda t, f: {"type": "text", "text": t, **f}, TEXT, FUTURE),
    st.builds(
        lambda url, detail: {"type": "image_url", "image_url": {"url": url, **detail}},
        st.sampled_from(["https://example.com/cat.png", "data:image/png;base64," + _b64(b"\x89PNG")]),
        st.sampled_from([{}, {"detail": "low"}, {"detail": "high"}]),
    ),
    st.builds(
        lambda data, fmt: {"type": "input_audio", "input_audio": {"data": _b64(data), "format": fmt}},
        st.binary(max_size=12),
        st.sampled_from(["wav", "mp3"]),
    ),
    st.builds(
        lambda data, name: {"type": "file", "file": {"file_data": "data:application/pdf;base64," + _b64(data), **name}},
        st.binary(max_size=12),
        st.sampled_from([{}, {"filename": "report.pdf"}]),
    ),
    st.builds(lambda fid: {"type": "file", "file": {"file_id": fid}}, st.sampled_from(["file-abc123", "file-XYZ"])),
)

ASSISTANT_PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, TEXT),
)


@st.composite
def _message(draw: Any) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    extra = draw(FUTURE)
    if role in ("system", "developer"):
        content: Any = draw(st.one_of(TEXT, st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), max_size=2)))
        msg = {"role": role, "content": content}
        if draw(st.booleans()):
            msg["name"] = "ops"
        return {**msg, **extra}
    if role == "user":
        content = draw(st.one_of(TEXT, st.lists(USER_PART, min_size=1, max_size=3)))
        return {"role": "user", "content": content, **extra}
    if role == "tool":
        content = draw(st.one_of(TEXT, st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), max_size=2)))
        return {"role": "tool", "tool_call_id": draw(CALL_ID), "content": content, **extra}
    calls = draw(st.lists(_tool_call(), max_size=3))
    content = draw(st.one_of(st.none(), TEXT, st.lists(ASSISTANT_PART, max_size=2)))
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = calls
    if draw(st.booleans()):
        msg["refusal"] = draw(st.one_of(st.none(), TEXT))
    if draw(st.booleans()):
        msg["audio"] = {"id": "audio_abc"}
    return {**msg, **extra}


@st.composite
def _conversation(draw: Any) -> list[dict[str, Any]]:
    messages = draw(st.lists(_message(), max_size=6))
    # Tool results that answer calls of the conversation, as real transcripts have them.
    calls = [c for m in messages for c in m.get("tool_calls", [])]
    for call in calls[: draw(st.integers(0, len(calls)))]:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": draw(TEXT)})
    return messages


@settings(max_examples=500, deadline=None)
@given(_conversation())
def test_round_trip_is_lossless(messages: list[dict[str, Any]]) -> None:
    converted = from_openai_chat(messages)
    assert to_openai_chat(converted) == messages
    for message in converted:  # never invented
        assert "id" not in message and "createdAt" not in message


@settings(max_examples=200, deadline=None)
@given(_conversation())
def test_converted_messages_are_valid_threadline_messages(messages: list[dict[str, Any]]) -> None:
    stored = normalize_messages(messages)
    assert to_openai_chat(stored) == messages


# --------------------------------------------------------------------------- goldens
# Shapes transcribed from the Chat Completions API reference (function calling, vision, audio
# input, file input, refusals).

WEATHER_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_12345xyz",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"location":"Paris, France"}'},
        }
    ],
}
WEATHER_RESULT = {"role": "tool", "tool_call_id": "call_12345xyz", "content": "14°C, cloudy"}


def test_golden_function_calling() -> None:
    converted = from_openai_chat([WEATHER_CALL, WEATHER_RESULT])
    assert converted == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-get_weather",
                    "toolCallId": "call_12345xyz",
                    "toolName": "get_weather",
                    "state": "input-available",
                    "input": {"location": "Paris, France"},
                }
            ],
            "providerMetadata": {"openai": {"content": None}},
        },
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool-get_weather",
                    "toolCallId": "call_12345xyz",
                    "toolName": "get_weather",
                    "state": "output-available",
                    "output": "14°C, cloudy",
                }
            ],
        },
    ]
    assert to_openai_chat(converted) == [WEATHER_CALL, WEATHER_RESULT]


def test_golden_a_result_without_its_call_is_a_dynamic_tool() -> None:
    [result] = from_openai_chat([WEATHER_RESULT])
    assert result["parts"][0]["type"] == "dynamic-tool"
    assert to_openai_chat([result]) == [WEATHER_RESULT]


def test_golden_vision_audio_and_file_input() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/boardwalk.jpg", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
            {"type": "file", "file": {"filename": "draconomicon.pdf", "file_data": "data:application/pdf;base64,JVBERi0="}},
        ],
    }
    [converted] = from_openai_chat([message])
    files = [p for p in converted["parts"] if p["type"] == "file"]
    assert [(f["mediaType"], f["url"][:22]) for f in files] == [
        ("image/*", "https://example.com/bo"),
        ("audio/wav", "data:audio/wav;base64,"),
        ("application/pdf", "data:application/pdf;b"),
    ]
    assert files[2]["filename"] == "draconomicon.pdf"
    assert to_openai_chat([converted]) == [message]


def test_golden_refusal() -> None:
    message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    assert to_openai_chat(from_openai_chat([message])) == [message]


def test_appending_a_chat_message_as_is_stores_what_its_conversion_stores() -> None:
    for message in (WEATHER_CALL, {"role": "developer", "content": "Be brief."}):
        assert is_openai_chat_message(message)
        direct = normalize_message(message, now="2026-01-01T00:00:00.000Z")
        converted = normalize_message(from_openai_chat([message])[0], now="2026-01-01T00:00:00.000Z")
        assert {k: v for k, v in direct.items() if k != "id"} == {
            k: v for k, v in converted.items() if k != "id"
        }


def test_native_messages_convert_to_valid_chat_messages() -> None:
    native = [
        {"role": "user", "parts": [{"type": "text", "text": "weather?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool-get_weather",
                    "toolCallId": "c1",
                    "toolName": "get_weather",
                    "state": "output-available",
                    "input": {"city": "Oslo"},
                    "output": {"temp": 3},
                },
            ],
        },
    ]
    assert to_openai_chat(native) == [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 3}'},
    ]
