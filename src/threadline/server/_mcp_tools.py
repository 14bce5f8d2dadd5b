"""What ``threadline mcp`` offers, without the protocol: the tools (the session's own memory
tools, ``session_search`` and the conversation tools) and the resources, for one tenant.

Everything here is synchronous store work; :mod:`threadline.server.mcp` runs it in a worker
thread and wraps it in the ``mcp`` SDK's types. Every tool answers a string; a string that
starts with ``"Error: "`` is a tool error (the MCP result's ``isError``). A tool never raises.

>>> import threadline
>>> manager = threadline.SessionManager(":memory:", "demo").with_context("memory")
>>> tenant = Tenant("demo", None, manager)
>>> [t["name"] for t in list_tools(tenant, "chat")]  # doctest: +NORMALIZE_WHITESPACE
['set_context', 'session_search', 'append_message', 'get_history', 'search_messages',
 'list_sessions']
>>> said = {"role": "user", "content": "I like tea"}
>>> call_tool(tenant, "chat", "append_message", said)  # doctest: +ELLIPSIS
'Appended message ... to session chat.'
>>> call_tool(tenant, None, "get_history", {})
'Error: missing required argument "session_id" for tool "get_history"'
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from typing import Any
from urllib.parse import quote, unquote

from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.internal import text_in
from threadline.server._tenancy import Forbidden, NotFound, Tenant
from threadline.session import Session
from threadline.tools import Tool, Toolset, format_search_hits
from threadline.tools import build_context_tools as _memory_tools

ERROR = "Error: "
# A session id never written, for the schemas of an unbound server: drawn per process, so no
# client can create a session under it beforehand (one owned by another user would make the
# probe's ownership check fail for everyone).
PROBE = f"__threadline_mcp_schema_{uuid.uuid4().hex}__"
SESSION_ID: dict[str, Any] = {"type": "string", "description": "The conversation's session id."}
ROLES = ["user", "assistant", "system"]
HISTORY_LIMIT = 50  # get_history's default window: a long session must not flood the model
# tools that act on no single session (never take session_id)
APP_TOOLS = frozenset({"session_search", "list_sessions"})

RESOURCES = (
    ("history", "threadline://sessions/{session_id}/history", "application/json",
     "The session's messages, root to head (overlays applied), as JSON."),
    ("block", "threadline://sessions/{session_id}/blocks/{label}", "text/plain",
     "The current text of one memory block of the session."),
    ("prompt", "threadline://sessions/{session_id}/prompt", "text/plain",
     "The session's system prompt (its memory blocks rendered)."),
)  # fmt: skip
_URI = re.compile(r"^threadline://sessions/([^/]+)/(history|prompt|blocks/([^/]+))$")


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_LIMIT = {"type": "integer", "minimum": 1, "description": "At most this many (newest)."}
CONVERSATION_TOOLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "append_message",
        "Store one message of the conversation (it becomes the new head).",
        _schema(
            {
                "role": {"type": "string", "enum": ROLES, "description": "Who speaks."},
                "content": {"type": "string", "description": "The message text."},
            },
            ["role", "content"],
        ),
    ),
    (
        "get_history",
        "The conversation so far, root to head (compacted parts as their summaries): the "
        f"newest {HISTORY_LIMIT} messages unless limit is given.",
        _schema({"limit": _LIMIT}, []),
    ),
    (
        "search_messages",
        "Full-text search in this conversation's messages; the best matches with their role.",
        _schema(
            {
                "query": {"type": "string", "description": "Words or a quoted phrase to find."},
                "limit": _LIMIT,
            },
            ["query"],
        ),
    ),
    (
        "list_sessions",
        "The conversations you can reach, newest first: id, name and message count.",
        _schema({"limit": _LIMIT}, []),
    ),
)


def _fail(message: str) -> str:
    return ERROR + message


def _session(tenant: Tenant, session_id: str) -> Session:
    """The session to act on: created on its first write, owned by the tenant's user;
    another user's session is missing (``SessionNotFoundError``)."""
    return tenant.writable(session_id)


def _history_text(session: Session, limit: int) -> str:
    lines = []
    for message in session.get_history(limit=limit):
        text = "\n".join(
            text_in(p) for p in message.get("parts", ()) if p.get("type") in ("text", "reasoning")
        )
        lines.append(f"[{message.get('role')}] {text}".rstrip())
    return "\n\n".join(lines) or "No messages yet."


def _run_conversation(tenant: Tenant, session_id: str, name: str, args: dict[str, Any]) -> str:
    session = _session(tenant, session_id)
    if name == "append_message":
        stored = session.append_message({"role": args["role"], "content": args["content"]})
        return f"Appended message {stored['id']} to session {session_id}."
    if name == "get_history":
        return _history_text(session, args.get("limit") or HISTORY_LIMIT)
    hits = session.search(args["query"], limit=args.get("limit") or 10)
    return format_search_hits(hits) or "No results found."


def _list_sessions(tenant: Tenant, args: dict[str, Any]) -> str:
    page = tenant.manager.list(user_id=tenant.user, limit=args.get("limit") or 50)
    rows = [
        f"{s.id}: {s.name or '(no name)'} ({s.message_count} messages)"
        for s in page.sessions
        if s.id != PROBE
    ]
    return "\n".join(rows) or "No sessions yet."


def _own_tools(tenant: Tenant, session_id: str) -> list[Tool]:
    """``session_search`` and the conversation tools (no memory block involved)."""
    tools = list(tenant.manager.tools(user_id=tenant.user).values())
    for name, description, schema in CONVERSATION_TOOLS:
        if name == "list_sessions":
            tools.append(Tool(name, description, schema, lambda a: _list_sessions(tenant, a)))
        else:
            run = functools.partial(_run_conversation, tenant, session_id, name)
            tools.append(Tool(name, description, schema, run))
    return tools


OWN_TOOLS = frozenset({"session_search", *(name for name, _, _ in CONVERSATION_TOOLS)})


def _toolset(tenant: Tenant, session_id: str | None, *, memory: bool = True) -> Toolset:
    """Every tool, acting on ``session_id``: its memory tools (a tenant bound to a user may
    not write app-scoped blocks, clarification 28), ``session_search`` and the conversation
    tools. ``None``: a probe session that is never written, owned by some user so that
    ``scope="user"`` blocks list too (the schemas are the profile's, whatever the session)."""
    if session_id is None:
        session = tenant.manager.get_session(PROBE, user_id=tenant.user or PROBE)
        session_id = PROBE
    else:
        session = _session(tenant, session_id)
    tools: list[Tool] = []
    if memory:
        scopes = ("app",) if tenant.user is not None else ()
        tools.extend(_memory_tools(session, read_only_scopes=scopes).values())
    return Toolset([*tools, *_own_tools(tenant, session_id)])


def list_tools(tenant: Tenant, bound: str | None) -> list[dict[str, Any]]:
    """``tools/list`` entries (``name``, ``description``, ``inputSchema``): the toolset's own
    schemas, each session tool with a required ``session_id`` when no session is bound.

    >>> import threadline
    >>> m = threadline.SessionManager(":memory:", "demo").with_context("memory")
    >>> tool = list_tools(Tenant("demo", None, m), None)[0]
    >>> tool["inputSchema"]["properties"]["label"]["enum"], tool["inputSchema"]["required"]
    (['memory'], ['label', 'content', 'session_id'])
    """
    entries = _toolset(tenant, None).to_mcp()
    if bound is None:
        for entry in entries:
            if entry["name"] not in APP_TOOLS:
                schema = entry["inputSchema"]
                schema.setdefault("properties", {})["session_id"] = copy.deepcopy(SESSION_ID)
                schema["required"] = [*schema.get("required", []), "session_id"]
    return entries


def call_tool(tenant: Tenant, bound: str | None, name: str, arguments: Any) -> str:
    """Run one tool for the tenant; every failure is an ``"Error: ..."`` string (bad
    arguments, a missing or foreign session, an app-wide block written by a user's tenant).

    >>> import threadline
    >>> tenant = Tenant("demo", None, threadline.SessionManager(":memory:", "demo"))
    >>> call_tool(tenant, None, "get_history", {"session_id": 7})
    'Error: argument "session_id" for tool "get_history" must be of type string'
    >>> call_tool(tenant, "s1", "nope", {})
    'Error: unknown tool "nope". Available tools: session_search, append_message, \
get_history, search_messages, list_sessions'
    """
    try:
        return _call_tool(tenant, bound, name, arguments)
    except (ThreadlineError, NotFound, Forbidden) as exc:
        return _fail(str(exc) or type(exc).__name__)


def _call_tool(tenant: Tenant, bound: str | None, name: str, arguments: Any) -> str:
    args = dict(arguments) if isinstance(arguments, dict) else arguments
    session_id = bound
    if bound is None and name not in APP_TOOLS and isinstance(args, dict):
        if name not in _toolset(tenant, None, memory=name not in OWN_TOOLS):
            return _toolset(tenant, None).execute(name, args)  # unknown tool: names the known
        given = args.pop("session_id", None)
        if given is None:
            return _fail(f'missing required argument "session_id" for tool "{name}"')
        if not isinstance(given, str):
            return _fail(f'argument "session_id" for tool "{name}" must be of type string')
        session_id = given
    if session_id is None:  # an app-wide tool of an unbound server
        return _toolset(tenant, None, memory=False).execute(name, args)
    toolset = _toolset(tenant, session_id, memory=name not in OWN_TOOLS)
    if name == "set_context" and isinstance(args, dict) and name in toolset:
        tenant.check_block(_session(tenant, session_id), args.get("label"))
    return toolset.execute(name, args)


def is_error(result: str) -> bool:
    """Whether a tool's answer is a tool error.

    >>> is_error("Error: block 'x' not found"), is_error("Written to memory.")
    (True, False)
    """
    return result.startswith(ERROR)


def list_resources(tenant: Tenant, bound: str | None) -> list[tuple[str, str, str]]:
    """``(uri, name, mime type)`` of concrete resources: the bound session's history, prompt
    and blocks, or the history and prompt of the newest 50 sessions the tenant reaches.

    >>> import threadline
    >>> m = threadline.SessionManager(":memory:", "demo").with_context("memory")
    >>> _ = m.append("s1", {"role": "user", "content": "hi"})
    >>> for uri, _, _ in list_resources(Tenant("demo", None, m), "s1"):
    ...     print(uri)
    threadline://sessions/s1/history
    threadline://sessions/s1/prompt
    threadline://sessions/s1/blocks/memory
    """
    if bound is None:
        ids = [s.id for s in tenant.manager.list(user_id=tenant.user, limit=50).sessions]
    else:
        ids = [bound]
    found = []
    for session_id in ids:
        base = f"threadline://sessions/{quote(session_id, safe='')}"
        found.append((f"{base}/history", f"{session_id} history", "application/json"))
        found.append((f"{base}/prompt", f"{session_id} prompt", "text/plain"))
    if bound is not None:
        try:
            blocks = _session(tenant, bound).get_context_blocks()
        except ThreadlineError:
            blocks = []  # e.g. a user-scoped block of a session without a user
        for block in blocks:
            uri = f"{base}/blocks/{quote(block.label, safe='')}"
            found.append((uri, f"{bound} block {block.label}", "text/plain"))
    return found


def read_resource(tenant: Tenant, uri: str) -> tuple[str, str]:
    """``(mime type, text)`` of a ``threadline://sessions/{id}/...`` resource; a missing or
    another user's session, an unknown block or a malformed URI raise
    ``SessionNotFoundError`` / ``BlockNotFoundError`` / ``InvalidArgumentError``.

    >>> import threadline
    >>> m = threadline.SessionManager(":memory:", "demo").with_context("memory")
    >>> _ = m.append("s1", {"role": "user", "content": "hi"})
    >>> read_resource(Tenant("demo", None, m), "threadline://sessions/s1/blocks/memory")
    ('text/plain', '')
    """
    found = _URI.match(uri) if isinstance(uri, str) else None
    if found is None:
        raise InvalidArgumentError(
            f"unknown resource {uri!r}: expected threadline://sessions/{{id}}/history, "
            "/prompt or /blocks/{label}"
        )
    session = tenant.session(unquote(found.group(1)))
    if found.group(2) == "history":
        return "application/json", json.dumps(session.get_history(), default=str)
    if found.group(2) == "prompt":
        return "text/plain", session.freeze_system_prompt()
    label = unquote(found.group(3))
    block = session.get_context_block(label)
    if block is None:
        from threadline.errors import BlockNotFoundError

        raise BlockNotFoundError(f"block {label!r} not found in session {session.session_id!r}")
    return "text/plain", block.content
