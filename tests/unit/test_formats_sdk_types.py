"""The converters (and ``append_message``) take the SDKs' own objects, as the SDKs return them:
OpenAI's ``ChatCompletionMessage`` and Responses items, Anthropic's content blocks and Google
GenAI's ``Content``. They become the same messages as their plain-dict form."""

from __future__ import annotations

import pytest

import threadline
from threadline.formats import from_anthropic, from_genai, from_openai_chat, from_openai_responses


def test_an_openai_chat_completion_message_is_appended_as_it_comes() -> None:
    chat = pytest.importorskip("openai.types.chat")
    from openai.types.chat.chat_completion_message_tool_call import (
        ChatCompletionMessageToolCall,
        Function,
    )

    call = ChatCompletionMessageToolCall(
        id="c1", type="function", function=Function(name="weather", arguments='{"city":"Oslo"}')
    )
    reply = chat.ChatCompletionMessage(role="assistant", content=None, tool_calls=[call])
    session = threadline.Session.create(":memory:")
    stored = session.append_message(reply)  # response.choices[0].message, untouched
    part = stored["parts"][0]
    assert (part["type"], part["toolCallId"], part["input"]) == (
        "tool-weather", "c1", {"city": "Oslo"},
    )  # fmt: skip
    as_dict = reply.model_dump(mode="json", exclude_none=True)
    assert from_openai_chat([reply])[0]["parts"] == from_openai_chat([as_dict])[0]["parts"]


def test_openai_responses_items_from_the_sdk() -> None:
    responses = pytest.importorskip("openai.types.responses")
    item = responses.ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="weather", arguments="{}", id="fc_1",
        status="completed",
    )  # fmt: skip
    converted = from_openai_responses([item])[0]
    assert converted["parts"][0]["type"] == "tool-weather"
    assert "id" not in converted or converted["id"] != "fc_1"  # never the provider's item id


def test_anthropic_content_blocks_from_the_sdk() -> None:
    types = pytest.importorskip("anthropic.types")
    blocks = [
        types.TextBlock(type="text", text="Let me check."),
        types.ToolUseBlock(type="tool_use", id="tu1", name="weather", input={"city": "Oslo"}),
    ]
    converted = from_anthropic([{"role": "assistant", "content": blocks}])[0]
    assert [p["type"] for p in converted["parts"]] == ["text", "tool-weather"]
    plain = [b.model_dump(mode="json", exclude_none=True) for b in blocks]
    assert (
        from_anthropic([{"role": "assistant", "content": plain}])[0]["parts"] == converted["parts"]
    )


def test_google_genai_content_from_the_sdk() -> None:
    genai = pytest.importorskip("google.genai.types")
    content = genai.Content(
        role="model",
        parts=[
            genai.Part(text="Checking."),
            genai.Part(function_call=genai.FunctionCall(name="weather", args={"city": "Oslo"})),
        ],
    )
    converted = from_genai([content])[0]
    assert [p["type"] for p in converted["parts"]] == ["text", "tool-weather"]
    assert converted["parts"][1]["input"] == {"city": "Oslo"}
