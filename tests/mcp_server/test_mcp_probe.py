"""The schema probe of an unbound MCP server cannot be taken over by a client: a session
created under the id the probe once had (a fixed, guessable one) broke ``tools/list`` and
every tool call for every other user of the app (the review of issue 26)."""

from __future__ import annotations

from pathlib import Path

from threadline import SessionManager
from threadline.server._mcp_tools import call_tool, list_tools
from threadline.server._tenancy import Tenant


def test_a_session_named_like_a_probe_breaks_nobody(tmp_path: Path) -> None:
    manager = SessionManager(str(tmp_path / "m.db"), "demo").with_context("memory")
    ana, ben = Tenant("demo", "ana", manager), Tenant("demo", "ben", manager)
    taken = call_tool(
        ana, None, "append_message",
        {"session_id": "__threadline_mcp_schema__", "role": "user", "content": "mine now"},
    )  # fmt: skip
    assert not taken.startswith("Error"), taken
    names = [tool["name"] for tool in list_tools(ben, None)]
    assert "set_context" in names and "get_history" in names
    sent = {"session_id": "b1", "role": "user", "content": "hi"}
    assert not call_tool(ben, None, "append_message", sent).startswith("Error")
    assert "hi" in call_tool(ben, None, "get_history", {"session_id": "b1"})
    manager.close()
