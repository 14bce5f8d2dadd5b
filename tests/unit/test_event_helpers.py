"""ADK-TS event helpers in ``threadline.messages``: ``function_calls``, ``function_responses``
and ``is_final_response`` (the seed: ``event.getFunctionCalls()``,
``event.getFunctionResponses()``, ``event.isFinalResponse()`` — "true if no pending function
calls"; ``partial`` marks a streaming chunk)."""

from __future__ import annotations

from typing import Any

from threadline.formats import from_anthropic, from_genai, from_openai_chat
from threadline.messages import (
    assistant,
    function_calls,
    function_responses,
    is_final_response,
    tool_call,
    user,
)


def test_a_pending_call_is_a_call_and_not_final() -> None:
    call = tool_call("weather", {"city": "Oslo"}, tool_call_id="c1")
    assert function_calls(call) == [{"id": "c1", "name": "weather", "args": {"city": "Oslo"}}]
    assert function_responses(call) == []
    assert not is_final_response(call)


def test_a_completed_call_is_both_and_final() -> None:
    done = tool_call("weather", {"city": "Oslo"}, output="rain", tool_call_id="c1")
    assert [c["name"] for c in function_calls(done)] == ["weather"]
    assert function_responses(done) == [{"id": "c1", "name": "weather", "response": "rain"}]
    assert is_final_response(done)


def test_results_carried_in_their_own_messages_are_responses_only() -> None:
    anthropic = from_anthropic([
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "w", "input": {"q": 1}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "rain"}]},
    ])
    assert function_calls(anthropic[0]) == [{"id": "t1", "name": "w", "args": {"q": 1}}]
    assert function_calls(anthropic[1]) == []
    assert function_responses(anthropic[1]) == [{"id": "t1", "name": "w", "response": "rain"}]
    assert not is_final_response(anthropic[0]) and not is_final_response(anthropic[1])
    chat = from_openai_chat([
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ])
    assert [r["response"] for r in function_responses(chat[1])] == ["x"]
    genai = from_genai([{"role": "model", "parts": [{"functionCall": {"name": "w", "args": {}}}]}])
    assert function_calls(genai[0]) == [{"id": None, "name": "w", "args": {}}]


def test_a_failed_call_responds_with_its_error() -> None:
    failed: dict[str, Any] = {"role": "assistant", "parts": [{
        "type": "tool-w", "toolCallId": "c9", "state": "output-error", "input": {},
        "errorText": "timeout"}]}
    assert function_responses(failed) == [
        {"id": "c9", "name": "w", "response": {"error": "timeout"}}]
    assert is_final_response(failed)


def test_final_means_an_assistant_message_that_is_not_partial() -> None:
    assert is_final_response(assistant("Hello!"))
    assert not is_final_response(user("Hello!"))
    assert not is_final_response({**assistant("Hel"), "metadata": {"partial": True}})
    assert is_final_response({**assistant("Hello!"), "metadata": {"partial": False}})
    mixed = {"role": "assistant", "parts": [
        {"type": "text", "text": "Checking"},
        {"type": "tool-w", "toolCallId": "a", "state": "output-available", "input": {},
         "output": 1},
        {"type": "tool-w", "toolCallId": "b", "state": "input-available", "input": {}}]}
    assert not is_final_response(mixed)
    assert [c["id"] for c in function_calls(mixed)] == ["a", "b"]


def test_they_never_raise_on_junk() -> None:
    for junk in (None, 3, "text", {"parts": "nope"}, {"role": "assistant", "parts": [1, None]},
                 {"role": "assistant", "metadata": "x", "parts": []}):
        assert function_calls(junk) == [] and function_responses(junk) == []
        assert isinstance(is_final_response(junk), bool)
