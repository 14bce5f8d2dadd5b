"""Summarisers: the real OpenAI/Anthropic SDKs against a local HTTP server, and extractive."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from threadline import summarizers
from threadline.compaction.function import build_summary_prompt, create_compact_function
from threadline.types import Message

openai_sdk = pytest.importorskip("openai")
anthropic_sdk = pytest.importorskip("anthropic")

OPENAI_REPLY = {
    "id": "chatcmpl-123",
    "object": "chat.completion",
    "created": 1_763_719_200,
    "model": "gpt-test",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "## Topic\nFrom OpenAI", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
}

ANTHROPIC_REPLY = {
    "id": "msg_123",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [
        {"type": "text", "text": "## Topic\n"},
        {"type": "text", "text": "From Anthropic"},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 4},
}


class FakeAPI(BaseHTTPRequestHandler):
    """Answers the documented response JSON and records each request body."""

    requests: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append((self.path, body))
        if self.path.endswith("/chat/completions"):
            reply: dict[str, Any] | None = OPENAI_REPLY
        elif self.path.endswith("/v1/messages"):
            reply = ANTHROPIC_REPLY
        else:
            reply = None
        data = json.dumps(reply or {"error": {"message": "not found"}}).encode()
        self.send_response(200 if reply else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeAPI)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    FakeAPI.requests.clear()


# --------------------------------------------------------------------------- OpenAI


def test_openai_sync(server: str) -> None:
    client = openai_sdk.OpenAI(api_key="test", base_url=f"{server}/v1", max_retries=0)
    summarize = summarizers.openai(client, "gpt-test", max_tokens=300, system="Be brief.")
    assert not inspect.iscoroutinefunction(summarize)
    assert summarize("the prompt") == "## Topic\nFrom OpenAI"
    path, body = FakeAPI.requests[-1]
    assert path == "/v1/chat/completions"
    assert body["model"] == "gpt-test" and body["max_tokens"] == 300
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "the prompt"},
    ]


def test_openai_defaults_send_only_the_user_message(server: str) -> None:
    client = openai_sdk.OpenAI(api_key="test", base_url=f"{server}/v1", max_retries=0)
    summarizers.openai(client, "gpt-test")("p")
    _, body = FakeAPI.requests[-1]
    assert body["messages"] == [{"role": "user", "content": "p"}]
    assert "max_tokens" not in body


def test_openai_async(server: str) -> None:
    async def run() -> str:
        client = openai_sdk.AsyncOpenAI(api_key="test", base_url=f"{server}/v1", max_retries=0)
        try:
            summarize = summarizers.openai(client, "gpt-test")
            assert inspect.iscoroutinefunction(summarize)
            result = summarize("async prompt")
            assert inspect.isawaitable(result)
            return await result  # type: ignore[no-any-return]
        finally:
            await client.close()

    assert asyncio.run(run()) == "## Topic\nFrom OpenAI"
    assert FakeAPI.requests[-1][1]["messages"][-1]["content"] == "async prompt"


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_sync(server: str) -> None:
    client = anthropic_sdk.Anthropic(api_key="test", base_url=server, max_retries=0)
    summarize = summarizers.anthropic(client, "claude-test", max_tokens=512)
    assert not inspect.iscoroutinefunction(summarize)
    assert summarize("the prompt") == "## Topic\nFrom Anthropic"
    path, body = FakeAPI.requests[-1]
    assert path == "/v1/messages"
    assert body == {
        "model": "claude-test",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": "the prompt"}],
    }


def test_anthropic_async(server: str) -> None:
    async def run() -> str:
        client = anthropic_sdk.AsyncAnthropic(api_key="test", base_url=server, max_retries=0)
        try:
            summarize = summarizers.anthropic(client, "claude-test")
            assert inspect.iscoroutinefunction(summarize)
            return await summarize("async prompt")  # type: ignore[no-any-return,misc]
        finally:
            await client.close()

    assert asyncio.run(run()) == "## Topic\nFrom Anthropic"
    assert FakeAPI.requests[-1][1]["max_tokens"] == 1024


def test_sdk_summarizer_drives_compaction(server: str) -> None:
    client = openai_sdk.OpenAI(api_key="test", base_url=f"{server}/v1", max_retries=0)
    fn = create_compact_function(summarizers.openai(client, "gpt-test"), tail_token_budget=0)
    msgs = [msg(f"m{i}", "user", f"message number {i}") for i in range(8)]
    result = fn(msgs)
    assert result is not None and result.summary == "## Topic\nFrom OpenAI"
    assert "message number 3" in FakeAPI.requests[-1][1]["messages"][-1]["content"]


def test_async_sdk_summarizer_with_acompact(server: str) -> None:
    async def run() -> Any:
        client = anthropic_sdk.AsyncAnthropic(api_key="test", base_url=server, max_retries=0)
        try:
            fn = create_compact_function(
                summarizers.anthropic(client, "claude-test"), tail_token_budget=0
            )
            return await fn.acompact([msg(f"m{i}", "user", "hello there") for i in range(8)])
        finally:
            await client.close()

    result = asyncio.run(run())
    assert result is not None and result.summary == "## Topic\nFrom Anthropic"


def test_an_async_sdk_summarizer_compacts_an_async_session_and_the_sync_one_refuses_it(
    server: str,
) -> None:
    from threadline import CompactionError, Session
    from threadline.aio import AsyncSession
    from threadline.messages import text_of

    async def run() -> list[str]:
        client = openai_sdk.AsyncOpenAI(api_key="test", base_url=f"{server}/v1", max_retries=0)
        try:
            fn = create_compact_function(
                summarizers.openai(client, "gpt-test"), protect_head=0, tail_token_budget=20
            )
            with pytest.raises(CompactionError, match="AsyncSession"):
                Session.create(":memory:").on_compaction(fn)  # refused when registered
            errors: list[BaseException] = []
            session = (
                AsyncSession.create(":memory:").on_compaction(fn).compact_after(80)
                .on_compaction_error(errors.append)
            )  # fmt: skip
            for i in range(8):
                await session.append_message({"role": "user", "content": f"message {i} " * 5})
            assert errors == []
            return [text_of(m) for m in await session.get_history()]
        finally:
            await client.close()

    history = asyncio.run(run())
    assert history[0] == "## Topic\nFrom OpenAI" and history[-1].startswith("message 7")


# --------------------------------------------------------------------------- extractive


def msg(mid: str, role: str, text: str) -> Message:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text}]}


TRIP = [
    msg("u0", "user", "I want to plan a trip to Oslo in March."),
    msg("a0", "assistant", "Oslo in March is cold, usually around 2 degrees Celsius."),
    msg("u1", "user", "My budget is 1500 euros and I prefer trains over flights."),
    {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {
                "type": "tool-search_trains",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"from": "Stockholm", "to": "Oslo"},
                "output": {"trains": [{"dep": "07:10", "price": 59}]},
            },
            {"type": "text", "text": "The morning train from Stockholm costs 59 euros."},
        ],
    },
    msg("u2", "user", "TODO: remind me to book the hotel. Which area is quiet?"),
]

SECTIONS = ["## Topic", "## Key Points", "## Current State", "## Open Items"]


def headings(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line.startswith("## ")]


def section(summary: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\n(.*?)(?=^## |\Z)", summary, re.S | re.M)
    assert match is not None
    return match.group(1)


def test_extractive_sections_and_content() -> None:
    summary = summarizers.extractive()(build_summary_prompt(TRIP, None, 200))
    assert headings(summary) == SECTIONS
    assert section(summary, "## Topic").strip().splitlines() == [
        "Covers 5 messages (3 user, 2 assistant).",
        "User requests, in order:",
        "1. I want to plan a trip to Oslo in March.",
        "2. My budget is 1500 euros and I prefer trains over flights.",
        "3. TODO: remind me to book the hotel. Which area is quiet?",
    ]
    points = section(summary, "## Key Points")
    assert "Used tool search_trains." in points and "Stockholm" in points
    assert "1500 euros" not in points  # said once, in Topic
    state = section(summary, "## Current State")
    assert "Last user message in this range: TODO: remind me to book the hotel." in state
    assert "Last assistant message in this range: The morning train" in state
    items = section(summary, "## Open Items")
    assert "- Which area is quiet?" in items and "remind me to book the hotel" in items
    assert '"price"' not in summary  # tool inputs/outputs are not copied as points


def test_extractive_is_deterministic_and_offline() -> None:
    prompt = build_summary_prompt(TRIP, None, 200)
    assert summarizers.extractive()(prompt) == summarizers.extractive()(prompt)


def test_extractive_updates_a_previous_summary() -> None:
    previous = (
        "## Topic\nPlanning a Nordic trip\n\n## Key Points\n- Traveller is vegetarian.\n\n"
        "## Current State\n- Choosing dates.\n\n## Open Items\n- Confirm passport validity."
    )
    later = [msg("u5", "user", "We decided on the 12th of March for departure.")]
    summary = summarizers.extractive()(build_summary_prompt(later, previous, 150))
    assert headings(summary) == SECTIONS
    assert section(summary, "## Topic").strip().splitlines() == [
        "Covers an earlier summary, then 1 message (1 user, 0 assistant).",
        "Earlier summary's topic: Planning a Nordic trip",
        "User request after it:",
        "1. We decided on the 12th of March for departure.",
    ]
    points = section(summary, "## Key Points")
    assert "Traveller is vegetarian." in points  # the request itself is listed in Topic
    assert "Confirm passport validity." in section(summary, "## Open Items")


def test_extractive_limits_points() -> None:
    many = [msg(f"m{i}", "user", f"Fact number {i} is about the Project Alpha.") for i in range(30)]
    summary = summarizers.extractive(max_points=3)(build_summary_prompt(many, None, 5000))
    assert section(summary, "## Key Points").count("\n- ") + 1 <= 3
    with pytest.raises(ValueError):
        summarizers.extractive(max_points=0)


def test_extractive_without_markers_and_empty() -> None:
    summary = summarizers.extractive()("[user]\nWhat is the capital of Norway?")
    assert headings(summary) == SECTIONS
    assert "- What is the capital of Norway?" in section(summary, "## Open Items")
    empty = summarizers.extractive()("")
    assert headings(empty) == SECTIONS and "- None." in empty
