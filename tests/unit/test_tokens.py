"""Token estimation heuristic and exact counters."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.errors import ThreadlineError
from threadline.messages import tool_call, user
from threadline.tokens import (
    default_token_counter,
    estimate_message_tokens,
    estimate_tokens,
    exact_message_counter,
    tiktoken_counter,
)


class CharEncoder:
    """A tiktoken-compatible stand-in: one token per character."""

    def encode(self, text: str) -> list[str]:
        return list(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("Hello world", 3), ("word " * 50, 65), ("x" * 400, 100), ("a", 2), ("   ", 1)],
)
def test_estimate_tokens_goldens(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@given(st.text())
def test_estimate_tokens_matches_exact_formula(text: str) -> None:
    expected = (
        0
        if not text
        else math.ceil(max(Fraction(len(text), 4), Fraction(13, 10) * len(text.split())))
    )
    assert estimate_tokens(text) == expected


def test_estimate_message_tokens_text_and_reasoning() -> None:
    msg = {
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "Hello world"},
            {"type": "reasoning", "text": "x" * 400},
        ],
    }
    assert estimate_message_tokens([msg]) == 4 + 3 + 100


def test_estimate_message_tokens_tool_parts_use_compact_json() -> None:
    args = {"city": "Oslo", "note": "é"}
    msg = tool_call("weather", args, output="sunny and warm")
    compact = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    assert estimate_message_tokens([msg]) == 4 + estimate_tokens(compact) + estimate_tokens(
        "sunny and warm"
    )


def test_estimate_message_tokens_tool_without_output_and_dynamic_tool() -> None:
    pending = tool_call("t", "plain input")
    assert estimate_message_tokens([pending]) == 4 + estimate_tokens("plain input")
    dynamic = {
        "role": "assistant",
        "parts": [{"type": "dynamic-tool", "toolName": "x", "input": None, "output": [1, 2]}],
    }
    assert estimate_message_tokens([dynamic]) == 4 + estimate_tokens("[1,2]")


def test_estimate_message_tokens_empty_and_several() -> None:
    assert estimate_message_tokens([]) == 0
    assert estimate_message_tokens([user("Hello world"), user("")]) == 4 + 3 + 4
    assert estimate_message_tokens(iter([user("a")])) == 4 + 2  # 1 word * 1.3 → 2


@pytest.mark.parametrize(
    "odd",
    [
        {},
        {"parts": None},
        {"parts": "text"},
        {"parts": [None, 1, "x", {"type": "image", "url": "u"}, {"type": "text", "text": 3}]},
        {"parts": [{"type": "tool-x", "input": {1, 2}}]},
        "not a message",
        None,
    ],
)
def test_estimate_message_tokens_never_raises(odd: Any) -> None:
    assert estimate_message_tokens([odd]) >= 4


def test_default_token_counter() -> None:
    msgs = [user("Hello world")]
    assert default_token_counter(messages=msgs) == 7
    assert default_token_counter(messages=msgs, system_prompt="x" * 400, blocks=[]) == 107


def test_exact_message_counter_with_compatible_encoder() -> None:
    count = exact_message_counter(CharEncoder())
    msgs = [user("abc"), tool_call("t", {"a": 1}, output="ok")]
    assert count(msgs) == (4 + 3) + (4 + len('{"a":1}') + 2)


def test_tiktoken_counter_with_compatible_encoder() -> None:
    counter = tiktoken_counter(CharEncoder())
    assert counter(messages=[user("abcd")], system_prompt="xyz", blocks=[]) == 4 + 4 + 3
    assert counter(messages=[], system_prompt="", blocks=[]) == 0


def test_tiktoken_counter_rejects_non_encoders() -> None:
    with pytest.raises(TypeError):
        tiktoken_counter(object())  # type: ignore[arg-type]


def test_tiktoken_counter_without_tiktoken_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tiktoken", None)  # makes `import tiktoken` fail
    with pytest.raises(ThreadlineError, match=r"threadline\[tiktoken\]"):
        tiktoken_counter("cl100k_base")
