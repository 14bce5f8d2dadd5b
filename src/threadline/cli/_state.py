"""``threadline state``: a session's state by scope (show) and changes to it (set)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from threadline.cli._common import (
    ENV_DB,
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
from threadline.internal import scope_of
from threadline.manager import SessionManager

__all__ = ["parse_assignments", "set_state", "show_state", "split_session_args", "state"]

state = typer.Typer(
    name="state",
    cls=DefaultShow,
    help="A session's state: show it by scope (session, user:, app:) or set keys. "
    "`threadline state SESSION_ID` is `state show`.",
    no_args_is_help=True,
    add_completion=False,
)

_SCOPES = ("session", "user", "app")


def _not_json(constant: str) -> Any:
    raise ValueError(constant)  # NaN and Infinity are not JSON: such a value stays text


def parse_assignments(pairs: Sequence[str], deletes: Sequence[str] = ()) -> dict[str, Any]:
    """A state delta from ``KEY=VALUE`` arguments: VALUE as JSON when it parses as JSON,
    else as the text it is (``null`` deletes, as in the library); ``deletes`` are keys to
    remove.

    >>> parse_assignments(["step=2", "city=Porto", "tags=[\\"a\\"]", "old=null"], ["draft"])
    {'step': 2, 'city': 'Porto', 'tags': ['a'], 'old': None, 'draft': None}
    >>> parse_assignments(["note="])
    {'note': ''}
    """
    delta: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise CliError(f"expected KEY=VALUE, got {pair!r}")
        try:
            delta[key] = json.loads(text, parse_constant=_not_json)
        except ValueError:
            delta[key] = text
    for key in deletes:
        delta[key] = None
    for key in delta:
        if scope_of(key) == "temp":
            raise CliError(f"{key!r}: temp: keys live in one process and are never stored")
    return delta


def split_session_args(values: Sequence[str], db: str | None) -> tuple[str, str, list[str]]:
    """``(store, session id, KEY=VALUE...)`` from ``[DB] SESSION_ID KEY=VALUE...``: the
    database comes first unless ``--db`` / ``THREADLINE_DB`` gave it and the second argument
    is already an assignment.

    >>> split_session_args(["agent.db", "trip", "step=2"], None)
    ('agent.db', 'trip', ['step=2'])
    >>> split_session_args(["trip", "step=2"], "agent.db")
    ('agent.db', 'trip', ['step=2'])
    """
    given = list(values)
    leading_db = len(given) >= 2 and "=" not in given[1]
    if leading_db:
        return given[0], given[1], given[2:]
    if not given:
        raise CliError("expected [DB] SESSION_ID KEY=VALUE..., got no argument")
    if db is None:
        raise CliError(f"no store given: pass it first, or --db, or set {ENV_DB}")
    return db, given[0], given[1:]


def _by_scope(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    scoped: dict[str, dict[str, Any]] = {scope: {} for scope in _SCOPES}
    for key, value in values.items():
        scoped.setdefault(scope_of(key), {})[key] = value
    return scoped


def _print_state(
    app: str, session_id: str, owner: str | None, values: dict[str, Any], as_json: bool
) -> None:
    scoped = _by_scope(values)
    if as_json:
        emit_json(
            {
                "app": app,
                "session_id": session_id,
                "user_id": owner,
                "state": values,
                "scopes": scoped,
            }
        )
        return
    out = console()
    title = Text(f"state of session {session_id}", style="bold")
    title.append(f"  app {app} · user {owner or '—'}", style="dim")
    out.print(title)
    if not values:
        out.print("(no state)", style="dim")
        return
    table = Table(show_edge=False)
    for column in ("scope", "key", "value"):
        table.add_column(column, overflow="fold")
    for scope, keys in scoped.items():
        for key, value in keys.items():
            shown = json.dumps(value, ensure_ascii=False)
            table.add_row(scope, Text(key), Text(shown))
    out.print(table)


def show_state(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a session's state by scope. Its own keys, its owner's user: keys and the app's
    app: keys, as stored (values as JSON)."""
    url, (session_id,) = positionals(ctx.args, ["SESSION_ID"], db)
    with open_store(url) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        values = SessionManager(store, app_name=app).get_state(session_id, user_id=user)
    _print_state(app, session_id, info.user_id, values, as_json)


def set_state(
    ctx: typer.Context,
    db: DbOption = None,
    app: AppOption = None,
    user: UserOption = None,
    delete: Annotated[
        list[str] | None,
        typer.Option(
            "--delete", show_default=False, metavar="KEY", help="Remove this key (repeatable)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Set state keys of a session. KEY=VALUE, VALUE as JSON when it parses (2, true,
    ["a"], {"k": 1}), else as text; KEY=null or --delete KEY removes a key. user: keys are
    the session owner's, app: keys the app's. One atomic change."""
    url, session_id, pairs = split_session_args(ctx.args, db)
    delta = parse_assignments(pairs, delete or ())
    if not delta:
        raise CliError("nothing to set: give KEY=VALUE or --delete KEY")
    with open_store(url, write=True) as store:
        app = pick_app(store, app)
        info = require_session(store, app, session_id, user)
        manager = SessionManager(store, app_name=app)
        manager.update_state(session_id, delta, user_id=user)
        values = manager.get_state(session_id, user_id=user)
    _print_state(app, session_id, info.user_id, values, as_json)
