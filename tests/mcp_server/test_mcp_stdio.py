"""``threadline mcp`` over stdio, driven by the ``mcp`` SDK's own client (a spawned
``python -m threadline mcp`` process): tools with the toolset's schemas, every tool called,
every resource read, bad calls as tool errors on a session that keeps working, and
``--user`` / ``--session`` narrowing what the server reaches."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_served import APP, env

import threadline

pytestmark = pytest.mark.timeout(180)


def _client(db: str, *extra: str) -> Client:
    args = ["-m", "threadline", "mcp", "--db", db, "--app", APP, *extra]
    return Client(StdioServerParameters(command=sys.executable, args=args, env=env()))


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content)


def test_unbound_server_lists_calls_and_reads(db: str) -> None:
    async def run() -> None:
        async with _client(db, "--user", "carol") as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert set(tools) == {
                "set_context", "load_context", "unload_context", "search_context",
                "session_search", "append_message", "get_history", "search_messages",
                "list_sessions",
            }  # fmt: skip
            label = tools["set_context"]["properties"]["label"]
            assert {"memory", "notes"} <= set(label["enum"])
            assert "persona" not in label["enum"]  # read-only
            assert "team_rules" not in label["enum"]  # app-wide: not for one user's tools
            for name in ("set_context", "append_message", "get_history", "search_context"):
                assert "session_id" in tools[name]["required"], name
            for name in ("session_search", "list_sessions"):
                assert "session_id" not in tools[name]["properties"], name

            def call(name: str, **args: Any) -> Any:
                return client.call_tool(name, args)

            said = await call("append_message", session_id="s-1", role="user", content="I love tea")
            assert not said.is_error and "to session s-1" in _text(said)
            await call("append_message", session_id="s-1", role="assistant", content="Noted")
            history = await call("get_history", session_id="s-1")
            assert _text(history) == "[user] I love tea\n\n[assistant] Noted"
            found = await call("search_messages", session_id="s-1", query="tea")
            assert "[user] I love tea" in _text(found)
            wrote = await call("set_context", session_id="s-1", label="notes", content="tea fan")
            assert not wrote.is_error and _text(wrote).startswith("Written to notes")
            found = await call("search_context", session_id="s-1", label="faq", query="check-in")
            assert "3 pm" in _text(found)
            loaded = await call("load_context", session_id="s-1", label="skills", key="french")
            assert "French" in _text(loaded)
            unloaded = await call("unload_context", session_id="s-1", label="skills", key="french")
            assert not unloaded.is_error
            assert "[user] I love tea" in _text(await call("session_search", query="tea"))
            listed = _text(await call("list_sessions"))
            assert "s-1:" in listed and "bob-1" not in listed  # carol's sessions only

            # bad calls: tool errors (isError), never protocol errors
            bad = [
                await call("set_context", session_id="s-1", label="nope", content="x"),
                await call("set_context", session_id="s-1", label="persona", content="x"),
                await call("get_history", session_id=7),
                await call("get_history"),
                await call("append_message", session_id="s-1", role="user"),
                await call("append_message", session_id="s-1", role="user", content="x", extra=1),
                await call("no_such_tool", session_id="s-1"),
                await call("set_context", session_id="s-1", label="team_rules", content="x"),
                await call("get_history", session_id="bob-1"),  # bob's: not found
            ]
            assert all(r.is_error and _text(r).startswith("Error: ") for r in bad), bad
            # the session keeps working after them
            again = await call("get_history", session_id="s-1", limit=1)
            assert not again.is_error and _text(again) == "[assistant] Noted"

            templates = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} == {
                "threadline://sessions/{session_id}/history",
                "threadline://sessions/{session_id}/blocks/{label}",
                "threadline://sessions/{session_id}/prompt",
            }
            uris = {r.uri for r in (await client.list_resources()).resources}
            assert "threadline://sessions/s-1/history" in uris
            assert not any("bob-1" in uri for uri in uris)
            read = await client.read_resource("threadline://sessions/s-1/history")
            messages = json.loads(read.contents[0].text)
            assert [m["role"] for m in messages] == ["user", "assistant"]
            block = await client.read_resource("threadline://sessions/s-1/blocks/notes")
            assert block.contents[0].text == "tea fan"
            prompt = (await client.read_resource("threadline://sessions/s-1/prompt")).contents
            assert "You are a concise assistant." in prompt[0].text
            for uri in (
                "threadline://sessions/missing/history",
                "threadline://sessions/s-1/blocks/nope",
                "threadline://elsewhere",
            ):
                with pytest.raises(MCPError):
                    await client.read_resource(uri)
            assert not (await call("get_history", session_id="s-1")).is_error

    anyio.run(run)
    with threadline.connect(db) as store:
        manager = threadline.SessionManager.from_profile(store, APP)
        session = manager.get_session("s-1", user_id="carol")
        assert [m["role"] for m in session.get_history()] == ["user", "assistant"]
        assert session.get_context_block("notes").content == "tea fan"
        assert manager.get("s-1").user_id == "carol"


def test_app_wide_server_reaches_every_session(db: str) -> None:
    async def run() -> None:
        async with _client(db) as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            assert "team_rules" in tools["set_context"]["properties"]["label"]["enum"]
            listed = _text(await client.call_tool("list_sessions", {}))
            assert "bob-1:" in listed
            bob = await client.call_tool("get_history", {"session_id": "bob-1"})
            assert _text(bob) == "[user] bob's secret plan"
            said = await client.call_tool(
                "append_message", {"session_id": "shared", "role": "user", "content": "hi"}
            )
            assert not said.is_error
            # a user-scoped block needs a user: a session without one cannot use memory tools
            wrote = await client.call_tool(
                "set_context", {"session_id": "shared", "label": "notes", "content": "x"}
            )
            assert wrote.is_error and "user id" in _text(wrote)
            hits = _text(await client.call_tool("session_search", {"query": "secret"}))
            assert "bob's secret plan" in hits

    anyio.run(run)


def test_user_and_session_bound_server(db: str) -> None:
    async def run() -> None:
        async with _client(db, "--user", "ana", "--session", "ana-chat") as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            for schema in tools.values():
                assert "session_id" not in schema.get("properties", {})
            # clarification 28: acting as a user, the app-wide block is not offered ...
            labels = tools["set_context"]["properties"]["label"]["enum"]
            assert {"memory", "notes"} <= set(labels) and "team_rules" not in labels
            said = await client.call_tool("append_message", {"role": "user", "content": "hola"})
            assert not said.is_error
            wrote = await client.call_tool("set_context", {"label": "memory", "content": "ana"})
            assert not wrote.is_error
            # ... nor writable
            team = await client.call_tool("set_context", {"label": "team_rules", "content": "x"})
            assert team.is_error
            listed = _text(await client.call_tool("list_sessions", {}))
            assert "ana-chat:" in listed and "bob-1" not in listed
            hits = _text(await client.call_tool("session_search", {"query": "secret"}))
            assert "bob" not in hits
            with pytest.raises(MCPError):  # another user's session is not found
                await client.read_resource("threadline://sessions/bob-1/history")
            block = await client.read_resource("threadline://sessions/ana-chat/blocks/memory")
            assert block.contents[0].text == "ana"
            listed_uris = {r.uri for r in (await client.list_resources()).resources}
            assert {
                "threadline://sessions/ana-chat/history",
                "threadline://sessions/ana-chat/prompt",
                "threadline://sessions/ana-chat/blocks/memory",
            } <= listed_uris

    anyio.run(run)
    with threadline.connect(db) as store:
        manager = threadline.SessionManager.from_profile(store, APP)
        info = manager.get("ana-chat")
        assert info is not None and info.user_id == "ana"
        team = manager.get_session("bob-1", user_id="bob").get_context_block("team_rules")
        assert team is not None and team.content == ""
