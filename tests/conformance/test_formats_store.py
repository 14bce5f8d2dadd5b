# ruff: noqa: E501  (message shapes read best on one line)
"""OpenAI Chat Completions messages appended as they are come back the same through
``to_openai_chat``, on every backend; their text is searchable."""

from __future__ import annotations

from typing import Any

from threadline import Session
from threadline.formats import to_openai_chat

CONVERSATION: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer in one sentence."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is the weather where this photo was taken?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/oslo.jpg", "detail": "low"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ],
        "refusal": None,
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "3°C and drizzle"},
    {"role": "tool", "tool_call_id": "call_b", "content": "14:05"},
    {"role": "assistant", "content": "It is 3°C and drizzling in Oslo at 14:05."},
]


def test_chat_messages_round_trip_through_the_store(store: Any) -> None:
    session = Session.create(store).for_session("chat")
    session.append_messages(CONVERSATION)
    history = session.get_history()
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "tool", "assistant"]
    assert history[3]["parts"][0]["type"] == "tool-get_weather"  # named after its call
    assert to_openai_chat(history) == CONVERSATION
    assert [h.id for h in session.search("drizzling")] == [history[5]["id"]]


def test_chat_messages_appended_one_by_one_round_trip_too(store: Any) -> None:
    session = Session.create(store).for_session("one-by-one")
    for message in CONVERSATION:
        session.append_message(message)
    history = session.get_history()
    # A tool result appended alone does not see its call: it is kept as a dynamic-tool part.
    assert history[3]["parts"][0]["type"] == "dynamic-tool"
    assert to_openai_chat(history) == CONVERSATION
