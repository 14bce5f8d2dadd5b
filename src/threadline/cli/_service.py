"""``threadline serve`` and ``threadline keys``: the HTTP service (the ``server`` extra).

``threadline.server`` is imported only when one of these commands runs.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from threadline.cli._common import (
    ENV_APP,
    AppOption,
    CliError,
    DbOption,
    JsonOption,
    UserOption,
    console,
    emit_json,
    open_store,
    pick_app,
    positionals,
)

__all__ = ["create_key", "keys", "list_keys", "revoke_key", "serve"]

keys = typer.Typer(
    name="keys",
    help="API keys of the HTTP service: create, list, revoke.",
    no_args_is_help=True,
    add_completion=False,
)


def _server() -> Any:
    try:
        import threadline.server as server
    except ImportError as exc:
        raise CliError(
            f"the HTTP service needs the server extra: pip install 'threadline[server]' ({exc})"
        ) from None
    return server


def serve(
    ctx: typer.Context,
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    config: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            metavar="MODULE:FUNCTION",
            help="Configure each app's SessionManager on top of its stored profile.",
        ),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            help="No API keys: the X-Threadline-App header picks the app (local use only).",
        ),
    ] = False,
    app: Annotated[
        str | None,
        typer.Option(
            "--app",
            envvar=ENV_APP,
            show_envvar=True,
            show_default=False,
            help="Serve this app only (other apps' keys get 401; with --no-auth, the app).",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            show_default=False,
            help="Serve this user only (every request acts as a key bound to this user).",
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin",
            show_default=False,
            metavar="ORIGIN",
            help="Allow browser calls from this origin, e.g. https://app.example (repeatable).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int,
        typer.Option(min=1, help="Largest request body; a bigger one gets 413."),
    ] = 64 * 2**20,
    keep_alive_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="Seconds a kept-alive connection may stay silent."),
    ] = 5.0,
    head_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="Seconds a client has to send a whole request head."),
    ] = 10.0,
    body_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="Seconds a request body may pause between two reads."),
    ] = 30.0,
    replica: Annotated[
        list[str] | None,
        typer.Option(
            "--replica",
            show_default=False,
            metavar="URL",
            help="A PostgreSQL read replica of the database (repeatable).",
        ),
    ] = None,
    allow_model: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-model",
            show_default=False,
            metavar="NAME=BASE_URL,ENV",
            help="A model endpoint (and the env var of its key) that profiles written over "
            "HTTP may name (repeatable).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run the HTTP service and the web viewer (/ui). With uvicorn; API docs at /docs.
    Each app is configured from its stored profile (threadline profile)."""
    url, _ = positionals(ctx.args, [], db)
    server = _server()
    base = f"http://{host}:{port}"
    if as_json:
        emit_json(
            {
                "db": url,
                "url": base,
                "viewer": f"{base}/ui",
                "docs": f"{base}/docs",
                "app": app,
                "user": user,
            }
        )
    else:
        only = "".join(f", {k} {v!r} only" for k, v in (("app", app), ("user", user)) if v)
        console().print(
            f"threadline serve: {base}  (viewer {base}/ui, API docs {base}/docs{only})",
            markup=False,
        )
    server.serve(
        url,
        host=host,
        port=port,
        workers=workers,
        config=config,
        auth=not no_auth,
        app=app,
        user=user,
        cors_origins=tuple(cors_origin or ()),
        max_body_bytes=max_body_bytes,
        keep_alive_timeout=keep_alive_timeout,
        head_timeout=head_timeout,
        body_timeout=body_timeout,
        replicas=tuple(replica or ()),
        allow_models=tuple(allow_model or ()),
    )


def create_key(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: Annotated[
        str | None, typer.Option(show_default=False, help="Bind the key to this user.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key for an app. Optionally bound to one user; it is shown once."""
    url, _ = positionals(ctx.args, [], db)
    server = _server()
    with open_store(url, write=True, create=True) as store:
        app = pick_app(store, app)
        key = server.create_key(store, app, user=user)
    key_id = server.key_id_of(key)
    if as_json:
        emit_json({"id": key_id, "key": key, "app": app, "user": user})
        return
    out = console()
    out.print(key, markup=False)
    out.print(
        f"(id {key_id}, app {app!r}{f', user {user!r}' if user else ''}; "
        "only its hash is stored: keep it now)",
        markup=False,
        style="dim",
    )


def list_keys(
    ctx: typer.Context,
    db: DbOption = None,
    app: Annotated[
        str | None, typer.Option("--app", show_default=False, help="Only this app's keys.")
    ] = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the API keys. Never the keys themselves: id, app, user, created, revoked."""
    url, _ = positionals(ctx.args, [], db)
    server = _server()
    with open_store(url) as store:
        found = [
            k
            for k in server.list_keys(store)
            if (app is None or k["app"] == app) and (user is None or k["user"] == user)
        ]
    if as_json:
        emit_json({"keys": found})
        return
    table = Table()
    for column in ("id", "app", "user", "created (UTC)", "revoked"):
        table.add_column(column, overflow="fold")
    for k in found:
        table.add_row(k["id"], k["app"], k["user"] or "—", k["created_at"], "yes" * k["revoked"])
    console().print(table)


def revoke_key(
    ctx: typer.Context,
    db: DbOption = None,
    app: Annotated[
        str | None,
        typer.Option("--app", show_default=False, help="Only if the key is this app's."),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", show_default=False, help="Only if the key is bound to this user."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key by id. Requests with it get 401 within a second (a worker caches
    a valid key for up to 1 s; THREADLINE_KEY_CACHE_TTL=0 turns that off)."""
    url, (key_id,) = positionals(ctx.args, ["KEY_ID"], db)
    server = _server()
    with open_store(url, write=True) as store:
        if app is not None or user is not None:
            found = next((k for k in server.list_keys(store) if k["id"] == key_id), None)
            mine = (
                found is not None and app in (None, found["app"]) and user in (None, found["user"])
            )
            if not mine:
                wanted = " and ".join(f"{k} {v!r}" for k, v in (("app", app), ("user", user)) if v)
                raise CliError(f"no key {key_id!r} of {wanted} (nothing was revoked)")
        revoked = server.revoke_key(store, key_id)
    if not revoked:
        raise CliError(f"no active key {key_id!r} (`threadline keys list` shows them)")
    if as_json:
        emit_json({"revoked": key_id})
    else:
        console().print(f"Revoked key {key_id}", markup=False)
