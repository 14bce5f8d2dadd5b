"""``threadline mcp --transport http`` in a real uvicorn process, driven by the ``mcp`` SDK's
streamable-HTTP client with the service's API keys: an app-wide key reaches the app, a
user-bound key acts as its user, a key of another app (or none) is refused."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_served import APP

from threadline.server import create_key

pytestmark = pytest.mark.timeout(180)


def _client(url: str, key: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    return Client(streamable_http_client(url, http_client=http))


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content)


def test_app_key_lists_calls_and_reads(db: str, http_mcp: str) -> None:
    key = create_key(db, APP)

    async def run() -> None:
        async with _client(http_mcp, key) as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert "session_id" in tools["get_history"]["required"]
            assert "team_rules" in tools["set_context"]["properties"]["label"]["enum"]
            said = await client.call_tool(
                "append_message", {"session_id": "h-1", "role": "user", "content": "over http"}
            )
            assert not said.is_error
            history = await client.call_tool("get_history", {"session_id": "h-1"})
            assert _text(history) == "[user] over http"
            found = await client.call_tool(
                "search_messages", {"session_id": "h-1", "query": "http"}
            )
            assert "over http" in _text(found)
            assert "bob-1:" in _text(await client.call_tool("list_sessions", {}))
            bad = await client.call_tool("get_history", {"session_id": ["not", "a", "string"]})
            assert bad.is_error
            read = await client.read_resource("threadline://sessions/h-1/history")
            assert [m["role"] for m in json.loads(read.contents[0].text)] == ["user"]
            prompt = await client.read_resource("threadline://sessions/bob-1/prompt")
            assert "concise assistant" in prompt.contents[0].text
            block = await client.read_resource("threadline://sessions/bob-1/blocks/team_rules")
            assert block.contents[0].text == ""

    anyio.run(run)


def test_user_key_acts_as_its_user(db: str, http_mcp: str) -> None:
    key = create_key(db, APP, user="dana")

    async def run() -> None:
        async with _client(http_mcp, key) as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert "team_rules" not in tools["set_context"]["properties"]["label"]["enum"]
            said = await client.call_tool(
                "append_message", {"session_id": "d-1", "role": "user", "content": "dana here"}
            )
            assert not said.is_error
            wrote = await client.call_tool(
                "set_context", {"session_id": "d-1", "label": "memory", "content": "likes jazz"}
            )
            assert not wrote.is_error
            team = await client.call_tool(
                "set_context", {"session_id": "d-1", "label": "team_rules", "content": "x"}
            )
            assert team.is_error
            bob = await client.call_tool("get_history", {"session_id": "bob-1"})
            assert bob.is_error and "not found" in _text(bob)
            listed = _text(await client.call_tool("list_sessions", {}))
            assert "d-1:" in listed and "bob-1" not in listed
            assert "secret" not in _text(
                await client.call_tool("session_search", {"query": "secret"})
            )
            with pytest.raises(MCPError):
                await client.read_resource("threadline://sessions/bob-1/history")
            memory = await client.read_resource("threadline://sessions/d-1/blocks/memory")
            assert memory.contents[0].text == "likes jazz"

    anyio.run(run)
    import threadline

    with threadline.connect(db) as store:
        info = threadline.SessionManager(store, APP).get("d-1")
        assert info is not None and info.user_id == "dana"


def test_other_app_key_and_no_key_are_refused(db: str, http_mcp: str) -> None:
    other = create_key(db, "some-other-app")
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for headers in ({"Authorization": f"Bearer {other}"}, {}, {"Authorization": "Bearer nope"}):
        answer = httpx.post(http_mcp, json=hello, headers=headers, timeout=30)
        assert answer.status_code == 401, answer.text

    async def run() -> None:
        async with _client(http_mcp, other) as client:
            await client.list_tools()

    with pytest.raises(BaseException):  # noqa: B017 - the SDK wraps the 401 in task groups
        anyio.run(run)
