"""Commands that administer sessions: rename, rewind, purge, forget-user.

``purge`` and ``forget-user`` delete for good: on a terminal they ask first (``--yes`` skips
the question); elsewhere (a script, a pipe) they need ``--yes``, so nothing is deleted by a
command line that was never confirmed.
"""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Annotated

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
    require_app,
    require_session,
)
from threadline.export import isoformat_utc
from threadline.internal import owned_by
from threadline.manager import SessionManager
from threadline.store.base import Store

__all__ = ["forget_user", "parse_before", "parse_older_than", "purge", "rename", "rewind"]

YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Do not ask: the command line is the confirmation.")
]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w)\s*$")


def rename(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rename a session. NAME is its new name (the id stays)."""
    url, (session_id, name) = positionals(ctx.args, ["SESSION_ID", "NAME"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        info = SessionManager(store, app_name=app).rename(session_id, name, user_id=user)
    if as_json:
        emit_json(info_json(info))
    else:
        console().print(f"Renamed session {session_id} to {name!r}", markup=False)


def rewind(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rewind a session to before a message. The head moves to MESSAGE_ID's parent and the
    session-state changes of the messages after it are undone; nothing is deleted (the
    messages stay in the tree: checkout goes back to them)."""
    url, (session_id, message_id) = positionals(ctx.args, ["SESSION_ID", "MESSAGE_ID"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_session(store, app, session_id, user)
        if store.get_message(app, session_id, message_id) is None:
            raise CliError(f"message {message_id!r} not found in session {session_id!r}")
        SessionManager(store, app_name=app).rewind(
            session_id, before_message_id=message_id, user_id=user
        )
        tail = store.get_path_tail(app, session_id, 1, attachments="ref")
    head, length = (tail[-1][0], tail[-1][2]) if tail else (None, 0)
    if as_json:
        emit_json(
            {"session_id": session_id, "before": message_id, "head": head, "path_length": length}
        )
    else:
        where = f"head is now {head} ({length} messages on its path)" if head else "it is empty"
        console().print(f"Rewound {session_id} to before {message_id}: {where}", markup=False)


def parse_older_than(text: str) -> timedelta:
    """``--older-than``: a whole number and a unit, ``s``, ``m``, ``h``, ``d`` or ``w``.

    >>> parse_older_than("30d"), parse_older_than("12h")
    (datetime.timedelta(days=30), datetime.timedelta(seconds=43200))
    """
    match = _DURATION.match(text)
    if match is None:
        raise CliError(f"--older-than {text!r}: expected a number and a unit (s m h d w), e.g. 30d")
    return timedelta(seconds=int(match[1]) * _UNITS[match[2]])


def parse_before(text: str) -> datetime:
    """``--before``: a date (midnight UTC) or an ISO 8601 time (without a zone: UTC).

    >>> parse_before("2026-01-31").isoformat()
    '2026-01-31T00:00:00+00:00'
    >>> parse_before("2026-01-31T12:00:00+01:00").isoformat()
    '2026-01-31T11:00:00+00:00'
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CliError(
            f"--before {text!r}: expected a date or an ISO 8601 time, e.g. 2026-01-31"
        ) from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _confirm(question: str, yes: bool, refusal: str) -> None:
    """Go on if ``yes``, or if the user says yes on a terminal; else ``CliError``."""
    if yes:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError(f"{refusal}: pass --yes to confirm (not asked: no terminal)")
    if not typer.confirm(question, default=False):
        raise CliError("nothing was deleted (not confirmed)")


def _doomed(store: Store, app: str, before: datetime, user: str | None) -> tuple[int, int]:
    """(sessions, messages) that ``purge`` would delete now: the pages of the registry, newest
    first, the same test as the purge's own (``updated_at`` before the cutoff, owned by)."""
    sessions = messages = 0
    cursor: str | None = None
    while True:
        page = store.list_sessions(app, user_id=user, limit=500, cursor=cursor)
        for info in page.sessions:
            if info.updated_at < before and owned_by(info.user_id, user):
                sessions += 1
                messages += info.message_count
        if page.next_cursor is None:
            return sessions, messages
        cursor = page.next_cursor


def purge(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: Annotated[
        str | None, typer.Option("--user", show_default=False, help="Only this user's sessions.")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            show_default=False, metavar="DATE", help="Sessions not updated since this date/time."
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            metavar="AGE",
            help="Sessions not updated for this long: 90d, 12h, 2w (s m h d w).",
        ),
    ] = None,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete the sessions not updated for a while. Exactly one of --before DATE or
    --older-than AGE; --user only that user's. Each with everything of it."""
    url, _ = positionals(ctx.args, [], db)
    if (before is None) == (older_than is None):
        raise typer.BadParameter("give exactly one of --before DATE or --older-than AGE")
    cut: datetime | timedelta = (
        parse_before(before) if before is not None else parse_older_than(str(older_than))
    )
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        require_app(store, app)
        cutoff = cut if isinstance(cut, datetime) else store.now() - cut
        whose = f" of user {user!r}" if user is not None else ""
        when = f"{cutoff:%Y-%m-%d %H:%M:%S} UTC"
        sessions, messages = _doomed(store, app, cutoff, user)
        if sessions:
            _confirm(
                f"Delete {sessions} session(s){whose} of app {app!r} ({messages} messages), "
                f"not updated since {when}?",
                yes,
                f"purge would delete {sessions} session(s){whose} of app {app!r}",
            )
        count = SessionManager(store, app_name=app).purge(older_than=cutoff, user_id=user)
    if as_json:
        emit_json({"app": app, "user": user, "before": isoformat_utc(cutoff), "purged": count})
    else:
        console().print(
            f"Purged {count} session(s){whose} of app {app!r} not updated since {when}",
            markup=False,
        )


def forget_user(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    yes: YesOption = False,
    as_json: JsonOption = False,
) -> None:
    """Delete everything of a user in an app. Their sessions (messages, overlays, blocks,
    state), their user-scoped blocks and user: state, in one transaction."""
    url, (user_id,) = positionals(ctx.args, ["USER"], db)
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        sessions, messages = _doomed(store, app, datetime.max.replace(tzinfo=UTC), user_id)
        _confirm(
            f"Delete everything of user {user_id!r} in app {app!r}: {sessions} session(s), "
            f"{messages} messages, their blocks and state?",
            yes,
            f"forget-user would delete everything of user {user_id!r} in app {app!r}",
        )
        count = SessionManager(store, app_name=app).forget_user(user_id)
    if as_json:
        emit_json({"app": app, "user": user_id, "sessions": count, "messages": messages})
    else:
        console().print(
            f"Forgot user {user_id} in app {app!r}: {count} session(s), {messages} messages, "
            "their blocks and state",
            markup=False,
        )
