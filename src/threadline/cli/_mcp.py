"""``threadline mcp``: an app's memory as an MCP server (the ``mcp`` extra).

``threadline.server.mcp`` is imported only when the command runs. Over stdio nothing but the
protocol may reach stdout: the command prints nothing there.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from threadline.cli._common import AppOption, CliError, DbOption, open_store, pick_app, positionals

__all__ = ["mcp"]


def _module() -> Any:
    try:
        import threadline.server.mcp as module
    except ImportError as exc:
        raise CliError(
            f"threadline mcp needs the mcp extra: pip install 'threadline[mcp]' ({exc})"
        ) from None
    return module


def mcp(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Act as this user: its sessions only; app-wide blocks are read-only.",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Bind the tools to this session (else each session tool takes session_id).",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option(help="stdio (a desktop client launches it) or http (at /mcp).")
    ] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (http).")] = 8000,
) -> None:
    """Serve an app's memory to any MCP client: memory and conversation tools, session
    resources. Over http, API keys from `threadline keys create` are required."""
    url, _ = positionals(ctx.args, [], db)
    if transport not in ("stdio", "http"):
        raise CliError(f"--transport must be stdio or http, got {transport!r}")
    module = _module()
    with open_store(url, write=True, create=True) as store:
        app = pick_app(store, app)
        if transport == "http":
            print(f"threadline mcp: http://{host}:{port}/mcp  (app {app!r})", file=sys.stderr)
        module.serve_mcp(
            store, app, user=user, session=session, transport=transport, host=host, port=port
        )
