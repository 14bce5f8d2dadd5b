"""Model functions for ``threadline.Runner`` written with the official OpenAI and Anthropic
clients and threadline's converters — each a few lines.

Offline by default: the clients talk to a fake HTTP transport that answers like the real APIs
(first a ``set_context`` tool call, then text), so the whole loop — request building, tool
call, tool result sent back, final answer, storage — runs without a network or a key. With
``--live`` and OPENAI_API_KEY / ANTHROPIC_API_KEY set, the same functions call the real APIs.

    python examples/runner_clients.py           # offline
    python examples/runner_clients.py --live    # real APIs (needs keys)
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anthropic
import httpx
import openai

try:  # recent anthropic SDKs ship their own fork of httpx for their client
    import httpx2 as anthropic_http  # type: ignore[import-not-found]
except ImportError:
    anthropic_http = httpx

from threadline import Runner, SessionManager
from threadline.formats import from_anthropic, to_anthropic, to_openai_chat
from threadline.messages import text_of


def openai_model(client: openai.OpenAI, name: str = "gpt-4o-mini") -> Any:
    """A Runner model function over OpenAI Chat Completions."""

    def model(system: str, messages: list[Any], tools: Any) -> Any:
        chat = [{"role": "system", "content": system}, *to_openai_chat(messages)]
        response = client.chat.completions.create(
            model=name, messages=chat, tools=tools.to_openai() or openai.NOT_GIVEN
        )
        return response.choices[0].message  # the SDK object is accepted as it is

    return model


def anthropic_model(client: anthropic.Anthropic, name: str = "claude-sonnet-5-5") -> Any:
    """A Runner model function over the Anthropic Messages API."""

    def model(system: str, messages: list[Any], tools: Any) -> Any:
        _, conversation = to_anthropic(messages)
        response = client.messages.create(
            model=name, system=system, messages=conversation, max_tokens=1024,
            tools=tools.to_anthropic() or anthropic.NOT_GIVEN,
        )  # fmt: skip
        return from_anthropic([{"role": "assistant", "content": response.content}])

    return model


# --- the fake transports: what the APIs answer, shaped as their documentation shows -----------

ARGS = {"label": "memory", "content": "The user's name is Bob."}


def _openai_reply(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    answered = body["messages"][-1]["role"] == "tool"
    message: dict[str, Any] = {"role": "assistant", "content": "Saved: your name is Bob."}
    if not answered:
        call = {"id": "call_1", "type": "function",
                "function": {"name": "set_context", "arguments": json.dumps(ARGS)}}  # fmt: skip
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return httpx.Response(200, json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "stop" if answered else "tool_calls"}],
    })  # fmt: skip


def _anthropic_reply(request: Any) -> Any:
    body = json.loads(request.content)
    last = body["messages"][-1]["content"]
    answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
    content: list[dict[str, Any]] = [{"type": "text", "text": "Saved: your name is Bob."}]
    if not answered:
        content = [{"type": "tool_use", "id": "toolu_1", "name": "set_context", "input": ARGS}]
    return anthropic_http.Response(200, json={
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": content, "stop_reason": "end_turn" if answered else "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    })  # fmt: skip


def main(live: bool) -> None:
    if live:
        models = {"openai": openai_model(openai.OpenAI()),
                  "anthropic": anthropic_model(anthropic.Anthropic())}  # fmt: skip
    else:
        fake_openai = httpx.Client(transport=httpx.MockTransport(_openai_reply))
        # The anthropic SDK ships its own fork of httpx (httpx2); openai uses httpx itself.
        http = anthropic_http
        fake_anthropic = http.Client(transport=http.MockTransport(_anthropic_reply))
        models = {
            "openai": openai_model(openai.OpenAI(api_key="offline", http_client=fake_openai)),
            "anthropic": anthropic_model(
                anthropic.Anthropic(api_key="offline", http_client=fake_anthropic)
            ),
        }
    for provider, model in models.items():
        manager = SessionManager(":memory:").with_context("memory", description="User facts")
        result = Runner(manager, model).run("Hi, my name is Bob.", session_id="bob")
        memory = manager.get_session("bob").get_context_block("memory")
        print(f"{provider}: {text_of(result.output)} | memory: {memory.content if memory else ''}")


if __name__ == "__main__":
    main("--live" in sys.argv)
