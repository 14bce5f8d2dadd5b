"""``threadline mcp``: an app's memory as an MCP server (the official ``mcp`` SDK), over stdio
or streamable HTTP at ``/mcp``.

Tools are the session's own memory tools (``set_context``, ``search_context``, ...),
``session_search`` and the conversation tools ``append_message``, ``get_history``,
``search_messages``, ``list_sessions``; resources are ``threadline://sessions/{id}/history``,
``.../blocks/{label}`` and ``.../prompt``. The app's manager comes from its stored profile.
A failing tool call is a result with ``isError: true``, never a protocol error. Over HTTP the
service's API keys apply (``Authorization: Bearer``), with its tenancy: a key of another app
gets 401, a key bound to a user acts as that user. Needs the ``mcp`` extra. See docs/mcp.md.

>>> import threadline
>>> server = create_mcp_server(threadline.connect(":memory:"), "demo")
>>> server.name
'threadline'
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

import threadline
from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.server import _auth, _errors
from threadline.server._limits import ASGIApp, Receive, Scope, Send
from threadline.server._mcp_tools import (
    RESOURCES,
    call_tool,
    is_error,
    list_resources,
    list_tools,
    read_resource,
)
from threadline.server._tenancy import Tenant, Tenants, Unauthorized
from threadline.store import Store

__all__ = ["create_mcp_server", "mcp_http_app", "serve_mcp"]

_log = logging.getLogger("threadline.mcp")
_TENANT = "threadline.tenant"  # where the HTTP middleware leaves the request's tenant
_RESOURCE_NOT_FOUND = -32002
_INVALID_PARAMS = -32602


def _open(store: Store | str) -> Store:
    return threadline.connect(store) if isinstance(store, str) else store


def create_mcp_server(
    store: Store | str, app: str, *, user: str | None = None, session: str | None = None
) -> Server[Any]:
    """The MCP server of ``app``'s memory (its stored profile), acting as ``user`` when given
    (its sessions only; app-scoped blocks read-only) and bound to ``session`` when given (else
    every session tool takes a required ``session_id``). Over HTTP (:func:`mcp_http_app`) the
    request's key picks the tenant instead.

    >>> import threadline
    >>> server = create_mcp_server(threadline.connect(":memory:"), "demo", session="chat")
    >>> sorted(server.get_capabilities().model_dump(exclude_none=True))
    ['resources', 'tools']
    """
    tenants = Tenants(_open(store), None, auth=False, app=app, user=user)
    local = tenants.from_header(app)

    def tenant_of(ctx: ServerRequestContext[Any, Any]) -> Tenant:
        found = getattr(ctx.request, "scope", {}).get(_TENANT) if ctx.request else None
        return found if isinstance(found, Tenant) else local

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        entries = await anyio.to_thread.run_sync(list_tools, tenant_of(ctx), session)
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=e["name"], description=e["description"], input_schema=e["inputSchema"]
                )
                for e in entries
            ]
        )

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tenant = tenant_of(ctx)
        result = await anyio.to_thread.run_sync(
            call_tool, tenant, session, params.name, params.arguments or {}
        )
        return types.CallToolResult(
            content=[types.TextContent(text=result)], is_error=is_error(result)
        )

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        found = await anyio.to_thread.run_sync(list_resources, tenant_of(ctx), session)
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=uri, name=name, mime_type=mime) for uri, name, mime in found
            ]
        )

    async def on_list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name=name, uri_template=template, mime_type=mime, description=text
                )
                for name, template, mime, text in RESOURCES
            ]
        )

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            mime, text = await anyio.to_thread.run_sync(read_resource, tenant_of(ctx), params.uri)
        except InvalidArgumentError as exc:
            raise MCPError(_INVALID_PARAMS, str(exc)) from None
        except ThreadlineError as exc:
            raise MCPError(_RESOURCE_NOT_FOUND, str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)]
        )

    return Server(
        "threadline",
        version=threadline.__version__,
        instructions=(
            "Durable conversation memory (threadline): memory blocks you can edit, "
            "searchable past conversations, and the conversation history."
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
    )


class _KeyAuth:
    """ASGI middleware: every HTTP request needs a live key of the served app (401 otherwise);
    the tenant it names (a user-bound key: that user) is left in the request's scope."""

    def __init__(self, app: ASGIApp, tenants: Tenants) -> None:
        self.app = app
        self.tenants = tenants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            key = _auth.bearer_key(scope)
            tenant = await anyio.to_thread.run_sync(self.tenants.from_key, key)
        except Unauthorized as exc:
            await _auth._answer(send, 401, "Unauthorized", str(exc), has_body=True)
            return
        except ThreadlineError as exc:
            status = _errors.status_of(exc)
            kind, message = type(exc).__name__, _errors.message_of(exc)
            await _auth._answer(send, status, kind, message, has_body=True)
            return
        scope[_TENANT] = tenant
        await self.app(scope, receive, send)


def mcp_http_app(
    store: Store | str,
    app: str,
    *,
    user: str | None = None,
    session: str | None = None,
    host: str = "127.0.0.1",
) -> ASGIApp:
    """The streamable-HTTP ASGI app (endpoint ``/mcp``), guarded by the service's API keys
    (``threadline keys create --app APP``): a key of another app gets 401; a key bound to a
    user acts as that user. ``host`` is where it listens (local hosts get the SDK's DNS
    rebinding protection).

    >>> import threadline
    >>> callable(mcp_http_app(threadline.connect(":memory:"), "demo"))
    True
    """
    opened = _open(store)
    server = create_mcp_server(opened, app, user=user, session=session)
    starlette: Starlette = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    return _KeyAuth(starlette, Tenants(opened, None, auth=True, app=app, user=user))


def serve_mcp(
    store: Store | str,
    app: str,
    *,
    user: str | None = None,
    session: str | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Run the MCP server until stopped: over stdin/stdout (``transport="stdio"``, what a
    desktop MCP client launches) or streamable HTTP with uvicorn (``"http"``, at ``/mcp``).

    >>> serve_mcp(":memory:", "demo", transport="smoke")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: transport must be stdio or http, got 'smoke'
    """
    if transport not in ("stdio", "http"):
        raise InvalidArgumentError(f"transport must be stdio or http, got {transport!r}")
    if transport == "http":
        import uvicorn

        asgi = mcp_http_app(store, app, user=user, session=session, host=host)
        uvicorn.run(asgi, host=host, port=port, log_level="warning")
        return
    server = create_mcp_server(store, app, user=user, session=session)

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
