"""Commands that only read: sessions, show, history, search, export.

They open a SQLite store read-only: the file is never written, and a wrong path is an error
instead of a new empty database.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from threadline.cli._common import (
    AppOption,
    CliError,
    DbOption,
    JsonOption,
    UserOption,
    console,
    emit_json,
    info_json,
    open_store,
    pick_app,
    positionals,
    require_app,
    require_session,
)
from threadline.cli._files import is_stdout, write_output
from threadline.cli._pager import NoPagerOption, print_paged
from threadline.cli._render import body, clip
from threadline.cli._show import draw_history, draw_tail, draw_tree, head_path, tail_overlays
from threadline.compaction import superseded
from threadline.export import dump_jsonl, export_app, export_sessions, isoformat_utc
from threadline.messages import decode_message
from threadline.session import Session
from threadline.types import Compaction, SessionInfo

__all__ = ["export", "history", "search", "sessions", "show"]

WidthOption = Annotated[
    int | None,
    typer.Option(
        "--width", min=20, show_default=False, help="Columns to draw in (default: the terminal's)."
    ),
]
FullOption = Annotated[
    bool,
    typer.Option(
        "--full", help="Show whole messages (default: 3 lines each, and how much more there is)."
    ),
]


def sessions(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    limit: Annotated[int, typer.Option(min=1, help="Sessions per page.")] = 20,
    cursor: Annotated[
        str | None, typer.Option(show_default=False, help="Page to show (printed after a page).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the sessions of an app, newest first."""
    url, _ = positionals(ctx.args, [], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        require_app(store, app)
        page = store.list_sessions(app, user_id=user, limit=limit, cursor=cursor)
    if as_json:
        emit_json(
            {
                "app": app,
                "sessions": [info_json(i) for i in page.sessions],
                "next_cursor": page.next_cursor,
            }
        )
        return
    out = console()
    table = Table(title=f"app {app}")
    for column in ("session", "user", "name", "messages", "updated (UTC)"):
        table.add_column(column, overflow="fold")  # ids are never shortened
    for info in page.sessions:
        table.add_row(
            Text(info.id),
            Text(info.user_id or "—"),
            Text(info.name or ""),
            str(info.message_count),
            f"{info.updated_at:%Y-%m-%d %H:%M}",
        )
    out.print(table)
    if not page.sessions:
        out.print(f"No sessions of user {user!r} in app {app!r}.")
    if page.next_cursor:
        out.print(f"More: --cursor {page.next_cursor}", markup=False)


def show(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            min=1,
            show_default=False,
            metavar="N",
            help="Only the last N messages of the head's path (read without the rest).",
        ),
    ] = None,
    width: WidthOption = None,
    full: FullOption = False,
    no_pager: NoPagerOption = False,
    as_json: JsonOption = False,
) -> None:
    """Draw a session's whole message tree. Every root, every branch, summary overlays,
    tool calls and attachments, with the head's path marked (●) and the head itself; long
    messages are shortened to 3 lines with a note saying how much is left (--full: all).
    --last N draws only the newest N messages of the head's path. On a terminal, output
    longer than the screen goes through a pager (--no-pager: not)."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    if last is not None:
        _show_last(url, app, user, session_id, last, width, full, no_pager, as_json)
        return
    with open_store(url) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        dump = store.dump_session(app, session_id)
    if dump is None:  # deleted between the two reads
        raise CliError(f"session {session_id!r} not found in app {app!r}")
    if as_json:
        path = set(head_path(dump))
        parents = {node.message["id"]: node.parent_id for node in dump.messages}
        gone = superseded(dump.compactions, parents, dump.head_id)
        emit_json(
            {
                "session": info_json(dump.info),
                "head": dump.head_id,
                "head_path": head_path(dump),
                "messages": [
                    {
                        "seq": node.seq,
                        "parent_id": node.parent_id,
                        "on_head_path": node.message["id"] in path,
                        "message": node.message,
                    }
                    for node in dump.messages
                ],
                "compactions": [
                    _compaction_json(c) | {"superseded": c.id in gone} for c in dump.compactions
                ],
            }
        )
        return
    out = console(width)
    lines = itertools.chain(_title(info, app, out), draw_tree(dump, out, full=full))
    if not dump.messages:
        lines = itertools.chain(lines, [Text("(no messages)", style="dim")])
    print_paged(out, lines, enabled=not no_pager)


def _compaction_json(compaction: Compaction) -> dict[str, Any]:
    return compaction.to_dict() | {"created_at": isoformat_utc(compaction.created_at)}


def _title(info: SessionInfo, app: str, out: Console) -> list[Text]:
    title = Text(f"session {info.id}", style="bold")
    title.append(
        f"  app {app} · user {info.user_id or '—'} · {info.message_count} messages", style="dim"
    )
    if info.name:
        title.append(f" · {info.name}", style="dim")
    return clip(title, out, out.width, None)


def _show_last(
    url: str,
    app: str | None,
    user: str | None,
    session_id: str,
    last: int,
    width: int | None,
    full: bool,
    no_pager: bool,
    as_json: bool,
) -> None:
    """``show --last N``: the newest rows of the head's path by the store's tail read
    (reading further back only while an overlay ending in them starts before them)."""
    with open_store(url) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        compactions = store.get_compactions(app, session_id)
        count = last
        while True:
            rows = store.get_path_tail(app, session_id, count)
            if not tail_overlays(rows, compactions, last)[2]:
                break
            count *= 2
    tail = rows[max(len(rows) - last, 0) :]
    if as_json:
        starting, _, _ = tail_overlays(rows, compactions, last)
        touching = {c.id for entries in starting.values() for c, _, _ in entries}
        emit_json(
            {
                "session": info_json(info),
                "head": tail[-1][0] if tail else None,
                "path_length": tail[-1][2] if tail else 0,
                "head_path": [message_id for message_id, _, _ in tail],
                "messages": [
                    {"depth": depth, "on_head_path": True, "message": decode_message(data)}
                    for _, data, depth in tail
                ],
                "compactions": [_compaction_json(c) for c in compactions if c.id in touching],
            }
        )
        return
    out = console(width)
    lines = itertools.chain(
        _title(info, app, out), draw_tail(rows, compactions, last, out, full=full)
    )
    if not tail:
        lines = itertools.chain(lines, [Text("(no messages)", style="dim")])
    print_paged(out, lines, enabled=not no_pager)


def history(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    leaf: Annotated[
        str | None, typer.Option(show_default=False, help="End at this message, not the head.")
    ] = None,
    raw: Annotated[bool, typer.Option(help="Without summary overlays.")] = False,
    width: WidthOption = None,
    no_pager: NoPagerOption = False,
    as_json: JsonOption = False,
) -> None:
    """Print a session's history as the model sees it. The path from the root to the head
    (or --leaf), with summary overlays in place of what they cover (--raw: without)."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        if raw:
            messages = store.get_path(app, session_id, leaf)
        else:
            messages = Session(store, session_id=session_id, app_name=app).get_history(leaf)
    if as_json:
        emit_json({"session_id": session_id, "app": app, "messages": messages})
        return
    out = console(width)
    lines = draw_history(messages) if messages else iter([Text("(no messages)", style="dim")])
    print_paged(out, lines, enabled=not no_pager, wrap=True)


def search(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    session: Annotated[
        str | None, typer.Option(show_default=False, help="Search only this session.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most hits to show.")] = 20,
    width: WidthOption = None,
    full: FullOption = False,
    as_json: JsonOption = False,
) -> None:
    """Full-text search over an app's sessions. Best hits first; --session searches one."""
    url, (query,) = positionals(ctx.args, ["QUERY"], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        if session is not None:
            require_session(store, app, session, user)
        else:
            require_app(store, app)
        hits = store.search_messages(app, query, session_id=session, user_id=user, limit=limit)
    if as_json:
        found = [
            {**hit.to_dict(), "created_at": hit.created_at and isoformat_utc(hit.created_at)}
            for hit in hits
        ]
        emit_json({"app": app, "query": query, "hits": found})
        return
    out = console(width)
    for hit in hits:
        line = Text(f"{hit.session_id}", style="bold")
        line.append(f" {hit.id} {hit.role}", style="cyan")
        line.append(f" (score {hit.score:.2f})  ", style="dim")
        line.append_text(body({"parts": [{"type": "text", "text": hit.content}]}))
        for piece in clip(line, out, out.width, None if full else 3):
            out.print(piece, soft_wrap=True)
    if not hits:
        out.print(f"No messages match {query!r} in app {app!r}.", markup=False)


def export(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    session: Annotated[
        list[str] | None,
        typer.Option(
            show_default=False, metavar="SESSION_ID", help="Export only this session (repeatable)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", show_default=False, help="Write to this file (default: standard output)."
        ),
    ] = None,
    with_keys: Annotated[
        bool,
        typer.Option(
            "--with-keys",
            help="Include the app's API keys' hashes (whole-app exports only; default: never).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Export an app as JSON Lines (format threadline.export/2, see docs/cli.md): for a
    whole app, first its app record (profile, app and user blocks and state, keyed entries,
    API keys' hashes with --with-keys), then one record per session with everything it
    holds; with --session or --user, those sessions' records only. threadline import reads
    it back."""
    url, _ = positionals(ctx.args, [], db)
    whole = not session and user is None
    if with_keys and not whole:
        raise CliError("--with-keys exports a whole app: drop --session and --user")
    with open_store(url) as store:
        app = pick_app(store, app)
        if session:
            for session_id in session:
                require_session(store, app, session_id, user)
        elif app not in store.list_app_names():
            require_app(store, app)
        records = export_sessions(store, app, session_ids=session, user_id=user)
        if whole:
            records = itertools.chain([export_app(store, app, keys=with_keys)], records)
        if out is None:
            count = dump_jsonl(records, sys.stdout)
            ids: list[str] = []
        else:
            count, ids = _write_file(out, records)
    if out is None:
        return
    # Records written to stdout (-o /dev/stdout): the summary goes to stderr, not among them.
    with contextlib.redirect_stdout(sys.stderr) if is_stdout(out) else contextlib.nullcontext():
        if as_json:
            emit_json({"app": app, "path": str(out), "exported": len(ids), "sessions": ids})
        else:
            text = f"Exported {len(ids)} session(s) of app {app!r} to {out}"
            text += " with its app record" if count > len(ids) else ""
            console().print(text, markup=False)  # rich writes to sys.stdout as it is now


def _write_file(path: Path, records: Any) -> tuple[int, list[str]]:
    """Write records to ``path`` by the rules of :mod:`threadline.cli._files` (a regular file
    is replaced atomically: a failed export leaves it as it was)."""
    ids: list[str] = []

    def noted() -> Any:
        for record in records:
            if record.get("type") != "app":
                ids.append(record["session"]["id"])
            yield record

    count = write_output(path, lambda fp: dump_jsonl(noted(), fp))
    return count, ids
