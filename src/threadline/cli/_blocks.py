"""``threadline blocks``: a session's memory blocks (show) and writes to them (replace,
append), as the app's stored profile declares them.

The blocks come from ``SessionManager.from_profile``: the same definitions (kind, scope,
limit, token counter) every other process follows, so a write is checked as the library
checks it (a readonly block, a block provided by code in another process, a block over its
limit: the library's typed error, one line). An app without a profile declares no block:
``show`` then lists the contents stored for the session (and its owner and app), and writes
are refused until a profile exists (``threadline profile set FILE``).
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from rich.text import Text

from threadline.cli._common import (
    AppOption,
    CliError,
    DbOption,
    DefaultShow,
    JsonOption,
    UserOption,
    console,
    emit_json,
    open_store,
    pick_app,
    positionals,
    require_session,
)
from threadline.errors import InvalidArgumentError
from threadline.manager import SessionManager
from threadline.profile import Profile
from threadline.store.base import Store
from threadline.types import ContextBlock, SessionInfo

__all__ = ["append_block", "block_kind", "blocks", "replace_block", "show_blocks"]

blocks = typer.Typer(
    name="blocks",
    cls=DefaultShow,
    help="A session's memory blocks, as the app's profile declares them: show them, replace "
    "or append to a writable one. `threadline blocks SESSION_ID` is `blocks show`.",
    no_args_is_help=True,
    add_completion=False,
)


def block_kind(block: ContextBlock, declared: dict[str, Any] | None) -> str:
    """A block's kind: the profile's (``writable``, ``readonly``, ``skill``, ``search``,
    ``history``, ``code``) when it declares the label, else what the loaded block is.

    >>> b = ContextBlock("soul", None, "Be brief.", 3, None, False, False, False)
    >>> block_kind(b, None), block_kind(b, {"label": "soul", "kind": "code"})
    ('readonly', 'code')
    """
    if declared is not None and isinstance(declared.get("kind"), str):
        return str(declared["kind"])
    if block.is_skill:
        return "skill"
    if block.is_searchable:
        return "search"
    return "writable" if block.writable else "readonly"


def _block_json(block: ContextBlock, kind: str) -> dict[str, Any]:
    return {
        "label": block.label,
        "kind": kind,
        "scope": block.scope,
        "writable": block.writable,
        "description": block.description,
        "tokens": block.tokens,
        "max_tokens": block.max_tokens,
        "content": block.content,
    }


def _stored(store: Store, app: str, session_id: str) -> list[dict[str, Any]]:
    """Without a profile: the block contents stored for the session, its owner and app."""
    dump = store.dump_session(app, session_id)
    if dump is None:
        return []
    found = []
    for scope, contents in (
        ("session", dump.blocks),
        ("user", dump.user_blocks),
        ("app", dump.app_blocks),
    ):
        for label, content in contents.items():
            found.append(
                {
                    "label": label, "kind": "stored", "scope": scope, "writable": False,
                    "description": None, "tokens": None, "max_tokens": None, "content": content,
                }
            )  # fmt: skip
    return found


def _read_blocks(
    store: Store, app: str, session_id: str, user: str | None
) -> tuple[Profile | None, list[dict[str, Any]]]:
    manager = SessionManager.from_profile(store, app)
    profile = manager.profile
    if profile is None:
        return None, _stored(store, app, session_id)
    session = manager.get_session(session_id, user_id=user)
    found = []
    for spec in profile.blocks:
        try:
            block = session.get_context_block(spec["label"])
        except InvalidArgumentError as exc:  # a user-scoped block of a session without user
            user_less = spec.get("scope") == "user"
            found.append(_unavailable(spec, "the session has no user" if user_less else str(exc)))
            continue
        if block is not None:
            found.append(_block_json(block, block_kind(block, spec)))
    return profile, found


def _unavailable(spec: dict[str, Any], reason: str) -> dict[str, Any]:
    """A declared block this session cannot load, and why (``content`` is ``None``)."""
    return {
        "label": spec["label"], "kind": spec.get("kind", "writable"),
        "scope": spec.get("scope", "session"), "writable": False,
        "description": spec.get("description"), "tokens": None,
        "max_tokens": spec.get("max_tokens"), "content": None, "unavailable": reason,
    }  # fmt: skip


def _header(info: SessionInfo, app: str, profile: Profile | None) -> Text:
    title = Text(f"blocks of session {info.id}", style="bold")
    where = f"profile version {profile.version}" if profile else "no profile"
    title.append(f"  app {app} · user {info.user_id or '—'} · {where}", style="dim")
    return title


def _block_lines(found: dict[str, Any]) -> list[Text]:
    line = Text("■ ", style="blue")
    line.append(found["label"], style="bold")
    tokens = found["tokens"]
    size = "" if tokens is None else f" · {tokens}"
    if tokens is not None and found["max_tokens"] is not None:
        size += f"/{found['max_tokens']}"
    line.append(
        f"  {found['kind']} · {found['scope']}{size}{' tokens' if size else ''}", style="dim"
    )
    lines = [line]
    if found["description"]:
        lines.append(Text(f"  {found['description']}", style="italic dim"))
    body = found["content"]
    if body is None:
        lines.append(Text(f"  (not available here: {found.get('unavailable')})", style="dim"))
    elif body:
        lines.extend(Text(f"  {row}") for row in body.splitlines())
    else:
        lines.append(Text("  (empty)", style="dim"))
    return lines


def show_blocks(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show every memory block of a session. Label, kind (writable, readonly, skill...),
    scope, tokens against its limit, and content; as the app's stored profile declares
    them (without one: the contents stored for the session)."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        profile, found = _read_blocks(store, app, session_id, user)
    if as_json:
        emit_json(
            {
                "app": app,
                "session_id": session_id,
                "user_id": info.user_id,
                "profile_version": profile.version if profile else None,
                "blocks": found,
            }
        )
        return
    out = console()
    out.print(_header(info, app, profile))
    for block in found:
        for line in _block_lines(block):
            out.print(line)
    if not found:
        hint = "" if profile else " (the app has no profile: threadline profile set FILE)"
        out.print(f"(no memory blocks){hint}", style="dim", markup=False)


def _text_argument(text: str) -> str:
    """TEXT as given, or standard input for ``-`` (one final newline dropped, as a shell's
    ``$(...)`` does)."""
    if text != "-":
        return text
    read = sys.stdin.read()
    return read[:-1] if read.endswith("\n") else read


def _write(ctx: typer.Context, db: str | None, app: str | None, user: str | None,
           as_json: bool, append: bool) -> None:  # fmt: skip
    url, (session_id, label, text) = positionals(ctx.args, ["SESSION_ID", "LABEL", "TEXT"], db)
    content = _text_argument(text)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        manager = SessionManager.from_profile(store, app)
        profile = manager.profile
        if profile is None:
            raise CliError(
                f"app {app!r} has no profile, so block {label!r} has no definition (kind, "
                "scope, limit) to write by: store one with `threadline profile set FILE`"
            )
        session = manager.get_session(session_id, user_id=user)
        write = session.append_context_block if append else session.replace_context_block
        block = write(label, content)
    declared = {spec["label"]: spec for spec in profile.blocks}
    result = _block_json(block, block_kind(block, declared.get(label)))
    if as_json:
        emit_json({"app": app, "session_id": session_id, "block": result})
        return
    out = console()
    verb = "Appended to" if append else "Replaced"
    size = f"{block.tokens}" + (f"/{block.max_tokens}" if block.max_tokens else "")
    out.print(f"{verb} block {label!r} of session {session_id} ({size} tokens):", markup=False)
    for line in _block_lines(result)[1:]:
        out.print(line)


def replace_block(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a writable block's content with TEXT. TEXT - reads standard input; its limit
    is checked; a readonly block refuses."""
    _write(ctx, db, app, user, as_json, append=False)


def append_block(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append TEXT to a writable block (on a new line). TEXT - reads standard input; its
    limit is checked; a readonly block refuses."""
    _write(ctx, db, app, user, as_json, append=True)
