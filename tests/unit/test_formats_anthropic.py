# ruff: noqa: E501  (message shapes read best on one line)
"""Anthropic Messages ⇄ threadline messages: lossless round trips (hypothesis, realistic
conversations) and goldens written from the shapes in Anthropic's API reference."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.formats import from_anthropic, to_anthropic
from threadline.messages import normalize_messages

TEXT = st.text(max_size=40)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FUTURE = st.dictionaries(st.sampled_from(["cache_control", "citations", "x_future"]), JSON_VALUE, max_size=1)
TOOL_ID = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=4, max_size=10).map(lambda s: f"toolu_{s}")
TOOL_NAME = st.sampled_from(["get_weather", "search_docs", "calculator"])
B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())

TEXT_BLOCK = st.builds(lambda t, f: {"type": "text", "text": t, **f}, TEXT, FUTURE)
IMAGE_BLOCK = st.one_of(
    st.builds(lambda d, m: {"type": "image", "source": {"type": "base64", "media_type": m, "data": d}}, B64, st.sampled_from(["image/png", "image/jpeg"])),
    st.builds(lambda u: {"type": "image", "source": {"type": "url", "url": u}}, st.sampled_from(["https://example.com/a.png"])),
)
DOCUMENT_BLOCK = st.one_of(
    st.builds(lambda d, t: {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": d}, **t}, B64, st.sampled_from([{}, {"title": "Report"}])),
    st.builds(lambda t: {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": t}}, TEXT),
)
THINKING = st.one_of(
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, TEXT, B64),
    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, B64),
)


@st.composite
def _tool_use(draw: Any) -> dict[str, Any]:
    args = draw(st.dictionaries(st.sampled_from(["city", "q", "expr"]), JSON_VALUE, max_size=3))
    return {"type": "tool_use", "id": draw(TOOL_ID), "name": draw(TOOL_NAME), "input": args}


@st.composite
def _conversation(draw: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        user_content: Any = draw(st.one_of(TEXT, st.lists(st.one_of(TEXT_BLOCK, IMAGE_BLOCK, DOCUMENT_BLOCK), min_size=1, max_size=3)))
        out.append({"role": "user", "content": user_content})
        uses = draw(st.lists(_tool_use(), max_size=2))
        blocks = draw(st.lists(st.one_of(THINKING, TEXT_BLOCK), max_size=2)) + uses
        out.append({"role": "assistant", "content": blocks or draw(TEXT)})
        if uses:
            results = []
            for use in uses:
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use["id"]}
                result["content"] = draw(st.one_of(TEXT, st.lists(TEXT_BLOCK, max_size=2)))
                if draw(st.booleans()):
                    result["is_error"] = draw(st.booleans())
                results.append(result)
            out.append({"role": "user", "content": results})
    return out


SYSTEM = st.one_of(st.none(), TEXT, st.lists(TEXT_BLOCK, min_size=1, max_size=2))


@settings(max_examples=500, deadline=None)
@given(_conversation(), SYSTEM)
def test_round_trip_is_lossless(messages: list[dict[str, Any]], system: Any) -> None:
    converted = from_anthropic(messages, system=system)
    assert to_anthropic(converted) == (system, messages)
    for message in converted:
        assert "id" not in message and "createdAt" not in message


@settings(max_examples=100, deadline=None)
@given(_conversation(), SYSTEM)
def test_round_trip_through_normalisation(messages: list[dict[str, Any]], system: Any) -> None:
    stored = normalize_messages(from_anthropic(messages, system=system))
    assert to_anthropic(stored) == (system, messages)


def test_golden_tool_use_and_result() -> None:
    messages = [
        {"role": "user", "content": "What's the weather like in San Francisco?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll check the current weather."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"location": "San Francisco, CA"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees"}]},
    ]
    converted = from_anthropic(messages)
    use, result = converted[1]["parts"][1], converted[2]["parts"][0]
    assert (use["type"], use["state"], use["input"]) == ("tool-get_weather", "input-available", {"location": "San Francisco, CA"})
    assert (result["type"], result["state"], result["output"]) == ("tool-get_weather", "output-available", "15 degrees")
    assert to_anthropic(converted) == (None, messages)


def test_golden_thinking_with_signature_and_an_error_result() -> None:
    messages = [
        {"role": "user", "content": "Divide 1 by 0."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Division by zero is undefined.", "signature": "EqQBCgIYAhIM"},
                {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expr": "1/0"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ZeroDivisionError", "is_error": True}]},
    ]
    converted = from_anthropic(messages, system="You are a careful calculator.")
    assert converted[0] == {"role": "system", "parts": [{"type": "text", "text": "You are a careful calculator."}]}
    reasoning = converted[2]["parts"][0]
    assert reasoning["type"] == "reasoning" and reasoning["providerMetadata"]["anthropic"]["signature"] == "EqQBCgIYAhIM"
    assert converted[3]["parts"][0]["state"] == "output-error"
    assert to_anthropic(converted) == ("You are a careful calculator.", messages)
