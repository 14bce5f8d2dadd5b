"""``threadline copy --from URL --to URL``: move whole apps between stores (SQLite ↔
PostgreSQL), verified identical after. The work is ``threadline.export.copy_store``'s; this
command opens the stores, picks the apps, shows progress and prints the counts."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from threadline.cli._common import (
    CliError,
    JsonOption,
    console,
    emit_json,
    open_store,
    removed_on_failure,
)
from threadline.export import CopyReport, copy_store
from threadline.store.base import Store

__all__ = ["copy", "progress_wanted"]


def copy(
    ctx: typer.Context,
    source: Annotated[
        str,
        typer.Option(
            "--from", show_default=False, metavar="URL", help="The store to copy from (only read)."
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to",
            show_default=False,
            metavar="URL",
            help="The store to copy into (a new SQLite file is created).",
        ),
    ],
    app: Annotated[
        list[str] | None,
        typer.Option(
            "--app",
            show_default=False,
            metavar="APP",
            help="Copy this app (repeatable; default: the only app of the source).",
        ),
    ] = None,
    all_apps: Annotated[
        bool, typer.Option("--all-apps", help="Copy every app of the source.")
    ] = False,
    replace: Annotated[
        bool,
        typer.Option(
            help="Make a target app that already holds data an exact copy of the source's "
            "(default: refuse, before anything is written)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Copy whole apps from one store to another, e.g. SQLite to PostgreSQL: sessions with
    their attachments, profiles, blocks and state of every scope, keyed entries and API keys'
    hashes. Then both stores are exported and compared; a difference fails the command,
    naming the first one."""
    if ctx.args:
        raise CliError(f"copy takes no arguments besides its options, got {ctx.args[0]!r}")
    if app and all_apps:
        raise CliError("--app and --all-apps exclude each other")
    if source == target:
        raise CliError("--from and --to name the same store")
    with open_store(source) as origin:
        apps = _apps(origin, app, all_apps)
        with (
            removed_on_failure(target),
            open_store(target, write=True, create=True) as into,
            _progress(not as_json) as progress,
        ):
            report = copy_store(origin, into, apps, replace=replace, progress=progress)
    if as_json:
        emit_json(vars(report))
    else:
        console().print(_summary(report), markup=False, soft_wrap=True)


def _apps(store: Store, chosen: list[str] | None, all_apps: bool) -> list[str]:
    held = store.list_app_names()
    if all_apps:
        return held
    if chosen:
        for name in chosen:
            if name not in held:
                raise CliError(f"the source holds nothing for app {name!r}; {_listing(held)}")
        return chosen
    if len(held) == 1:
        return held
    raise CliError(f"pick --app APP or --all-apps; {_listing(held)}")


def _listing(held: list[str]) -> str:
    return f"its apps: {', '.join(held)}" if held else "the source store is empty"


def progress_wanted() -> bool:
    """The bar is drawn for a person: when standard error (where it goes) is a terminal."""
    return sys.stderr.isatty()


@contextmanager
def _progress(wanted: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress bar on standard error when it is a terminal (else no callback)."""
    if not (wanted and progress_wanted()):
        yield None
        return
    bar = Progress(
        TextColumn("copying {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(file=sys.stderr, force_terminal=True),
    )
    task = bar.add_task("sessions", total=None)

    def advance(app: str, done: int, total: int) -> None:
        bar.update(task, description=f"app {app!r}", completed=done, total=total)

    with bar:
        yield advance


def _summary(report: CopyReport) -> str:
    counts = (
        (report.sessions, "session", "sessions"),
        (report.messages, "message", "messages"),
        (report.users, "user with blocks or state", "users with blocks or state"),
        (report.entries, "keyed entry", "keyed entries"),
        (report.keys, "API key", "API keys"),
        (report.profiles, "profile", "profiles"),
        (report.artifacts, "artifact version", "artifact versions"),
    )
    listed = ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts)
    verified = "; verified: both exports are identical" if report.verified else ""
    apps = ", ".join(report.apps) or "none"
    return f"Copied {len(report.apps)} app(s) ({apps}): {listed}{verified}."
