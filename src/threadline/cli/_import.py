"""``threadline import``: restore an export, with a progress bar on a terminal and counts.

The bar (on standard error, only when it is a terminal) follows the three steps of an
import: reading the file, checking every record, then writing them all in one transaction.
The result is counted (sessions and messages imported, and those ``--user`` left out, and
what app records held), never listed id by id; ``--json`` also keeps the ids (``imported``).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any, BinaryIO

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from threadline.cli._common import (
    DbOption,
    JsonOption,
    UserOption,
    console,
    emit_json,
    open_store,
    positionals,
    removed_on_failure,
)
from threadline.export import import_records, load_jsonl

__all__ = ["ImportCounts", "count_records", "import_"]


@dataclass(frozen=True)
class ImportCounts:
    """What an import wrote and what ``--user`` left out, by sessions and messages."""

    sessions: int
    messages: int
    skipped_sessions: int = 0
    skipped_messages: int = 0

    def describe(self, apps: Sequence[str], user: str | None) -> str:
        """The one-line summary printed after an import.

        >>> ImportCounts(3, 57).describe(["travel"], None)
        "Imported 3 session(s), 57 message(s) into app 'travel'"
        >>> ImportCounts(0, 0, 2, 9).describe([], "ana")
        "Imported 0 session(s), 0 message(s); skipped 2 session(s), 9 message(s) not ana's"
        """
        where = " into app " + ", ".join(repr(a) for a in apps) if apps else ""
        text = f"Imported {self.sessions} session(s), {self.messages} message(s){where}"
        if self.skipped_sessions:
            text += (
                f"; skipped {self.skipped_sessions} session(s), {self.skipped_messages} "
                f"message(s) not {user}'s"
            )
        return text


def _messages_of(record: Mapping[str, Any]) -> int:
    messages = record.get("messages")
    return len(messages) if isinstance(messages, list) else 0


def count_records(
    records: Sequence[Mapping[str, Any]], kept: Sequence[Mapping[str, Any]]
) -> ImportCounts:
    """Counts of ``kept`` (what is imported) among ``records`` (what the file held).

    >>> a, b = {"messages": [{}, {}]}, {"messages": [{}]}
    >>> count_records([a, b], [a])
    ImportCounts(sessions=1, messages=2, skipped_sessions=1, skipped_messages=1)
    """
    messages = sum(_messages_of(r) for r in kept)
    every = sum(_messages_of(r) for r in records)
    return ImportCounts(len(kept), messages, len(records) - len(kept), every - messages)


class _Metered(io.RawIOBase):
    """A binary file that reports each read's size (the reading step's progress)."""

    def __init__(self, raw: BinaryIO, advance: Callable[[int], None]) -> None:
        self._raw = raw
        self._advance = advance

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        buffer[: len(data)] = data
        self._advance(len(data))
        return len(data)


class _Steps:
    """The progress bar's steps (nothing is drawn when it is off)."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress

    def start(self, label: str, total: float | None) -> Callable[[float], None]:
        """Begin a step; returns ``advance(amount)``."""
        progress = self._progress
        if progress is None:
            return lambda amount: None
        self.finish()
        task_id = progress.add_task(label, total=total)
        return lambda amount: progress.advance(task_id, amount)

    def finish(self) -> None:
        """Mark every step begun so far as done (a step of unknown size at what it did)."""
        if self._progress is not None:
            for task in self._progress.tasks:
                done = task.completed or 1
                self._progress.update(task.id, total=done, completed=done)


@contextmanager
def _steps(enabled: bool) -> Iterator[_Steps]:
    if not enabled:
        yield _Steps(None)
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr, force_terminal=True),
        transient=False,
    )
    with bar:
        yield _Steps(bar)


def _read(source: str, steps: _Steps) -> list[dict[str, Any]]:
    if source == "-":
        advance = steps.start("reading standard input (records)", None)
        records = []
        for record in load_jsonl(sys.stdin):
            records.append(record)
            advance(1)
        return records
    path = Path(source)
    advance = steps.start(f"reading {path.name}", path.stat().st_size or None)
    with path.open("rb") as fp:
        return list(load_jsonl(_text(fp, advance)))


def _text(raw: BinaryIO, advance: Callable[[int], None]) -> IO[str]:
    return io.TextIOWrapper(io.BufferedReader(_Metered(raw, advance)), encoding="utf-8")


def _checked(records: list[dict[str, Any]], steps: _Steps) -> Iterator[dict[str, Any]]:
    """``records`` as the import reads them: one step while it checks them, and the
    writing step once it has seen the last one."""
    advance = steps.start(f"checking {len(records)} record(s)", len(records) or None)
    for record in records:
        yield record
        advance(1)
    sessions = sum(1 for record in records if record.get("type") != "app")
    also = " and the app record(s)" if sessions < len(records) else ""
    steps.start(f"writing {sessions} session(s){also} in one transaction", None)


def progress_wanted() -> bool:
    """The bar is drawn for a person: when standard error (where it goes, apart from the
    output, ``--json`` included) is a terminal."""
    return sys.stderr.isatty()


def import_(
    ctx: typer.Context,
    db: DbOption = None,
    app: Annotated[
        str | None,
        typer.Option(
            "--app",
            envvar="THREADLINE_APP",
            show_default=False,
            help="Import into this app (default: each record's own app).",
        ),
    ] = None,
    user: UserOption = None,
    replace: Annotated[
        bool, typer.Option(help="Replace sessions that already exist (default: refuse).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import a JSON Lines export (format 2 or 1). FILE is the export (- for standard
    input). Every record is checked first; a session that already exists stops the import
    unless --replace (which also makes an app record replace the app's profile, blocks,
    state and keyed entries). Everything is written in one transaction. On a terminal a
    progress bar follows the steps; the result is counted, not listed."""
    url, (source,) = positionals(ctx.args, ["FILE"], db)
    with _steps(progress_wanted()) as steps:
        records = _read(source, steps)
        kept = records
        if user is not None:  # a user's sessions: no app record (it is the whole app's)
            kept = [r for r in records if (r.get("session") or {}).get("user_id") == user]
        with removed_on_failure(url), open_store(url, write=True, create=True) as store:
            report = import_records(store, _checked(kept, steps), replace=replace, app=app)
        steps.finish()
    sessions = [r for r in records if r.get("type") != "app"]
    counts = count_records(sessions, [r for r in kept if r.get("type") != "app"])
    apps = [app] if app is not None else sorted({str(r.get("app")) for r in kept})
    if as_json:
        emit_json(
            {
                "imported": report.sessions,
                "apps": apps,
                "sessions": counts.sessions,
                "messages": counts.messages,
                "skipped_sessions": counts.skipped_sessions,
                "skipped_messages": counts.skipped_messages,
                "app_records": report.apps,
                "entries": report.entries,
                "keys": report.keys,
                "profiles": report.profiles,
                "artifacts": report.artifacts,
            }
        )
    else:
        text = counts.describe(apps, user)
        if report.entries or report.keys or report.profiles or report.artifacts:
            text += (
                f"; app record(s) of {', '.join(map(repr, report.apps))}: {report.entries} "
                f"keyed entr{'y' if report.entries == 1 else 'ies'}, {report.keys} API "
                f"key(s), {report.profiles} profile(s), {report.artifacts} artifact version(s)"
            )
        console().print(text, markup=False, soft_wrap=True)
