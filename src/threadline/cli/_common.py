"""What every command shares: the options, opening the store, finding the app and the
session, one-line errors, JSON output."""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

import threadline
from threadline.errors import StoreError
from threadline.export import isoformat_utc, session_json, usage_json
from threadline.internal import owned_by
from threadline.store.base import Store
from threadline.types import SessionInfo

__all__ = [
    "AppOption",
    "CliError",
    "DbOption",
    "DefaultShow",
    "JsonOption",
    "UserOption",
    "console",
    "emit_json",
    "info_json",
    "open_store",
    "pick_app",
    "positionals",
    "register",
    "require_app",
    "require_session",
]

ENV_DB = "THREADLINE_DB"
ENV_APP = "THREADLINE_APP"

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar=ENV_DB,
        show_envvar=True,
        show_default=False,
        help="The store: a SQLite file, sqlite:///path, or postgresql://... "
        "(a DB argument before the others does the same).",
    ),
]
AppOption = Annotated[
    str | None,
    typer.Option(
        "--app",
        envvar=ENV_APP,
        show_envvar=True,
        show_default=False,
        help="The app to work in (default: the store's only app, else 'default').",
    ),
]
UserOption = Annotated[
    str | None,
    typer.Option("--user", show_default=False, help="Only this user's sessions."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]

_POSTGRES_URL = re.compile(r"^postgres(?:ql)?://", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


class CliError(Exception):
    """A problem the user can fix, reported as one line on stderr with exit code 1."""


class DefaultShow(TyperGroup):
    """A command group whose ``show`` is the default: ``threadline state trip`` is
    ``threadline state show trip`` (a first argument that names no subcommand is show's)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own click
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["show", *args]
        return super().parse_args(ctx, args)


def register(
    group: typer.Typer, name: str, fn: Callable[..., None], usage: str, panel: str | None = None
) -> None:
    """Add ``fn`` as command ``name`` of ``group``. Its positional arguments (``usage``, e.g.
    ``"[DB] SESSION_ID"``) are read by :func:`positionals` from ``ctx.args``, so the optional
    leading DB works and the usage line reads as written here."""
    doc = inspect.getdoc(fn) or ""
    group.command(
        name,
        options_metavar=f"[OPTIONS] {usage}".strip(),
        context_settings={"allow_extra_args": True},
        short_help=doc.split(". ")[0].split("\n\n")[0].replace("\n", " ").rstrip("."),
        rich_help_panel=panel,
    )(fn)


def positionals(
    values: Sequence[str] | None, names: Sequence[str], db: str | None
) -> tuple[str, list[str]]:
    """``(store, the named values)`` from a command's positional arguments: the database may
    come first (``threadline history agent.db chat-42``) or from ``--db`` / ``THREADLINE_DB``.

    >>> positionals(["agent.db", "chat-42"], ["SESSION_ID"], None)
    ('agent.db', ['chat-42'])
    >>> positionals(["chat-42"], ["SESSION_ID"], "agent.db")
    ('agent.db', ['chat-42'])
    """
    given = list(values or ())
    if len(given) == len(names) + 1:
        return given[0], given[1:]
    if len(given) != len(names):
        usage = " ".join(["[DB]", *names])
        raise CliError(f"expected {usage}, got {len(given)} argument(s)")
    if db is None:
        raise CliError(f"no store given: pass it first, or --db, or set {ENV_DB}")
    return db, given


def _sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL or path names (``None`` for memory, URIs and other schemes)."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :].split("?", 1)[0])
    if _SCHEME.match(url) or url.startswith("file:") or url in ("", ":memory:"):
        return None
    return Path(url)


def open_store(url: str, *, write: bool = False, create: bool = False) -> Store:
    """Open ``url``: for reading, SQLite read-only (never written, never created); for
    writing, an existing store unless ``create`` (``import``, ``keys create``)."""
    path = _sqlite_file(url)
    if path is not None and not create and not path.exists():
        raise CliError(f"no store at {url!r}: {path} does not exist (nothing was created)")
    if write or _POSTGRES_URL.match(url) or url == ":memory:":
        return threadline.connect(url)
    try:
        return threadline.connect(url, read_only=True)
    except StoreError as exc:
        raise CliError(f"cannot open {url!r} for reading: {exc.__cause__ or exc}") from None


@contextmanager
def removed_on_failure(url: str) -> Iterator[None]:
    """Delete the SQLite file at ``url`` (and its WAL side files) if the block raises and the
    file did not exist before it: a failed ``import`` into a new store leaves nothing behind."""
    path = _sqlite_file(url)
    existed = path is None or path.exists()
    try:
        yield
    except BaseException:
        if not existed and path is not None:
            for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                leftover.unlink(missing_ok=True)
        raise


def _apps_hint(store: Store) -> str:
    apps = store.list_apps()
    if not apps:
        return "this store has no sessions yet"
    return f"apps in this store: {_listed(apps)}; pick one with --app"


DEFAULT_APP = "default"


def choose_app(given: str | None, apps: dict[str, int]) -> str:
    """The app a command works in: ``given`` (``--app`` or ``THREADLINE_APP``) when there is
    one, else the store's only app, else ``"default"`` for an empty store; with several apps
    and none given, ``CliError`` listing them (a guess could read or write the wrong one).

    >>> choose_app(None, {"demo": 4})
    'demo'
    >>> choose_app("travel", {"demo": 4}), choose_app(None, {})
    ('travel', 'default')
    >>> try:
    ...     choose_app(None, {"demo": 4, "travel": 1})
    ... except CliError as exc:
    ...     print(exc)
    this store holds several apps: demo (4 sessions), travel (1 session); pick one with --app
    """
    if given is not None:
        return given
    if not apps:
        return DEFAULT_APP
    if len(apps) == 1:
        return next(iter(apps))
    raise CliError(f"this store holds several apps: {_listed(apps)}; pick one with --app")


def pick_app(store: Store, given: str | None) -> str:
    """:func:`choose_app` over the apps ``store`` holds (read only when ``given`` is None)."""
    return given if given is not None else choose_app(None, store.list_apps())


def _listed(apps: dict[str, int]) -> str:
    return ", ".join(
        f"{name} ({count} session{'s' * (count != 1)})" for name, count in apps.items()
    )


def require_app(store: Store, app: str) -> None:
    """``CliError`` naming the apps that exist when ``app`` has no sessions."""
    if store.count_sessions(app) == 0:
        raise CliError(f"app {app!r} has no sessions; {_apps_hint(store)}")


def require_session(store: Store, app: str, session_id: str, user: str | None) -> SessionInfo:
    """The session's registry row, or ``CliError`` saying what is missing."""
    info = store.get_session(app, session_id)
    if info is not None and owned_by(info.user_id, user):
        return info
    require_app(store, app)
    whose = f" for user {user!r}" if user is not None else ""
    raise CliError(
        f"session {session_id!r} not found{whose} in app {app!r} "
        f"(`threadline sessions --app {app}` lists them)"
    )


def console(width: int | None = None) -> Console:
    """A console on stdout (``width`` overrides the terminal's)."""
    return Console(width=width, highlight=False)


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return isoformat_utc(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"not JSON: {type(value).__name__}")


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (datetimes as ISO 8601 UTC ``Z``)."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2, default=_default) + "\n")


def info_json(info: SessionInfo) -> dict[str, Any]:
    """A registry row as JSON: the export format's ``session`` fields, the app, the message
    count and the usage."""
    return {
        "app": info.app_name,
        **session_json(info),
        "message_count": info.message_count,
        "usage": usage_json(info),
    }
