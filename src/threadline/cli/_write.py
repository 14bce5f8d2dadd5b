"""Commands that change a store: fork, checkout, delete, compact (import: _import)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

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
    require_session,
)
from threadline.compaction import create_compact_function
from threadline.manager import SessionManager
from threadline.session import Session
from threadline.summarizers import extractive

__all__ = ["checkout", "compact", "delete", "fork"]


def fork(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    name: Annotated[
        str | None, typer.Option(show_default=False, help="The new session's name.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Start a new session from the path to a message. Its history is the path to
    MESSAGE_ID, with summaries applied."""
    url, (session_id, message_id) = positionals(ctx.args, ["SESSION_ID", "MESSAGE_ID"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        _require_message(store, app, session_id, message_id)
        child = SessionManager(store, app_name=app).fork(session_id, message_id, name, user_id=user)
    if as_json:
        emit_json(info_json(child))
    else:
        console().print(
            f"Forked {session_id} at {message_id} into {child.id} ({child.message_count} messages)",
            markup=False,
        )


def _require_message(store: Any, app: str, session_id: str, message_id: str) -> None:
    if store.get_message(app, session_id, message_id) is None:
        raise CliError(f"message {message_id!r} not found in session {session_id!r}")


def checkout(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move a session's head to a message. Any message: the next append continues there."""
    url, (session_id, message_id) = positionals(ctx.args, ["SESSION_ID", "MESSAGE_ID"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        _require_message(store, app, session_id, message_id)
        Session(store, session_id=session_id, app_name=app).checkout(message_id)
        path = store.get_path_ids(app, session_id)
    if as_json:
        emit_json({"session_id": session_id, "head": message_id, "head_path": path})
    else:
        console().print(
            f"Head of {session_id} is now {message_id} ({len(path)} messages on its path)",
            markup=False,
        )


def delete(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a session and everything of it. Messages, overlays, blocks, prompt, state."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        SessionManager(store, app_name=app).delete(session_id, user_id=user)
    if as_json:
        emit_json({"deleted": session_id, "app": app, "messages": info.message_count})
    else:
        console().print(
            f"Deleted session {session_id} and its {info.message_count} message(s)", markup=False
        )


def compact(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    keep_tokens: Annotated[
        int, typer.Option(min=0, help="Tokens of recent history to keep verbatim.")
    ] = 2000,
    keep_first: Annotated[int, typer.Option(min=0, help="First messages to keep verbatim.")] = 3,
    as_json: JsonOption = False,
) -> None:
    """Summarise a session's older history into an overlay. Offline (extractive summary);
    nothing is deleted: the originals stay in the tree."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        fn = create_compact_function(
            extractive(), protect_head=keep_first, tail_token_budget=keep_tokens
        )
        session = Session(store, session_id=session_id, app_name=app).on_compaction(fn)
        result = session.compact()
        after = len(session.get_history())
    if as_json:
        emit_json({"session_id": session_id, "compaction": result, "history_length": after})
        return
    out = console()
    if result is None:
        out.print("Nothing to compact: the history already fits.", markup=False)
        return
    out.print(
        f"Summarised {result.from_message_id} … {result.to_message_id}; the history now "
        f"reads as {after} messages:",
        markup=False,
    )
    out.print(result.summary, markup=False)
