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
    # A tool result appended alone is named after its call on the path (clarification 32).
    assert history[3]["parts"][0]["type"] == "tool-get_weather"
    assert to_openai_chat(history) == CONVERSATION


def test_every_format_round_trips_through_the_store(store: Any) -> None:
    from threadline.formats import (
        from_anthropic,
        from_genai,
        from_openai_responses,
        to_anthropic,
        to_genai,
        to_openai_responses,
    )

    claude = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "sig=="},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3°C"}]},
    ]  # fmt: skip
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "3°C"},
    ]
    contents = [
        {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"temp": 3}}}]},
    ]
    cases = [
        ("anthropic", from_anthropic(claude, system="Be brief."), lambda h: to_anthropic(h) == ("Be brief.", claude)),
        ("responses", from_openai_responses(items), lambda h: to_openai_responses(h) == items),
        ("genai", from_genai(contents), lambda h: to_genai(h) == contents),
    ]
    for session_id, messages, same in cases:
        session = Session.create(store).for_session(session_id)
        session.append_messages(messages)
        history = session.get_history()
        assert same(history), session_id
        assert session.search("Oslo"), session_id


def test_a_compacted_chat_conversation_stays_valid_for_the_api(store: Any) -> None:
    from threadline.compaction import create_compact_function

    turns: list[dict[str, Any]] = []
    for i in range(6):
        turns.append({"role": "user", "content": f"question {i} " + "words " * 40})
        turns.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}a", "type": "function", "function": {"name": "search", "arguments": "{}"}},
            {"id": f"c{i}b", "type": "function", "function": {"name": "fetch", "arguments": "{}"}},
        ]})  # fmt: skip
        turns.append({"role": "tool", "tool_call_id": f"c{i}a", "content": "result " * 60})
        turns.append({"role": "tool", "tool_call_id": f"c{i}b", "content": "page " * 60})
        turns.append({"role": "assistant", "content": f"answer {i}"})
    fn = create_compact_function(lambda prompt: "Earlier: six questions answered.", protect_head=1,
                                 tail_token_budget=150, min_tail_messages=2)  # fmt: skip
    session = Session.create(store).for_session("compact-chat").on_compaction(fn)
    session.append_messages(turns)
    assert session.compact() is not None
    chat = to_openai_chat(session.get_history())
    assert len(chat) < len(turns)
    called: set[str] = set()
    for message in chat:  # every tool result follows the call it answers
        called |= {c["id"] for c in message.get("tool_calls", [])}
        if message["role"] == "tool":
            assert message["tool_call_id"] in called, message
