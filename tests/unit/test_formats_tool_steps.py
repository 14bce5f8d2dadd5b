"""Amendment 22: a call and its result stored as two messages (the agent-loop order) come out
of every ``to_*`` converter as one step — the call once, then its result with the result's
state — never as a call that was not answered or a second copy of the call."""

from __future__ import annotations

from typing import Any

import threadline
from threadline.formats import to_anthropic, to_genai, to_openai_chat, to_openai_responses
from threadline.messages import tool_call, user


def _stored(state: str = "output-available") -> list[dict[str, Any]]:
    session = threadline.Session.create(":memory:").for_session("loop")
    session.append_message(user("weather in Oslo?"))
    session.append_message(tool_call("weather", {"city": "Oslo"}, tool_call_id="c1"))
    result: dict[str, Any] = {"type": "dynamic-tool", "toolCallId": "c1", "state": state}
    result.update({"output": "rain"} if state == "output-available" else {"errorText": "down"})
    session.append_message({"role": "tool", "parts": [result]})
    return session.get_history()[1:]


def test_openai_chat() -> None:
    assert to_openai_chat(_stored()) == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    ]
    assert to_openai_chat(_stored("output-error"))[1]["content"] == "down"


def test_openai_responses() -> None:
    items = to_openai_responses(_stored())
    assert [item.get("type") for item in items] == ["function_call", "function_call_output"]
    assert items[0]["name"] == "weather" and items[1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "rain",
    }


def test_anthropic() -> None:
    system, messages = to_anthropic(_stored("output-error"))
    assert system is None
    assert messages == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "down", "is_error": True}
            ],
        },
    ]


def test_genai() -> None:
    assert to_genai(_stored()) == [
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "weather", "response": "rain", "id": "c1"}}],
        },
    ]
