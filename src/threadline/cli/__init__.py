"""The ``threadline`` command (typer on rich): every everyday job on a store.

Read: ``sessions``, ``show`` (the tree), ``history``, ``search``, ``export``. Write:
``import``, ``fork``, ``checkout``, ``delete``, ``compact``, ``rename``, ``rewind``,
``purge``, ``forget-user``, ``copy`` (whole apps between stores, verified). Memory:
``blocks``, ``state``. Service: ``serve``, ``keys``, ``mcp``.
And ``demo``. Every command takes ``--json`` and the same ``--db/--app/--user`` options
(environment ``THREADLINE_DB`` and ``THREADLINE_APP`` as defaults); the database may also be
the first argument (``threadline history agent.db chat-42``). Read commands open SQLite
read-only and never create a file; an unknown path, app or session is a one-line error with
exit code 1. docs/cli.md has the details.

>>> main(["--help"])  # doctest: +SKIP
0
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer
import typer.main

import threadline
from threadline.cli._admin import forget_user, purge, rename, rewind
from threadline.cli._blocks import append_block, blocks, replace_block, show_blocks
from threadline.cli._common import CliError, register
from threadline.cli._copy import copy
from threadline.cli._demo import demo
from threadline.cli._import import import_
from threadline.cli._mcp import mcp
from threadline.cli._profile import profile, set_profile, show_profile
from threadline.cli._read import export, history, search, sessions, show
from threadline.cli._service import create_key, keys, list_keys, revoke_key, serve
from threadline.cli._state import set_state, show_state, state
from threadline.cli._write import checkout, compact, delete, fork

__all__ = ["app", "main"]

app = typer.Typer(
    name="threadline",
    help="Durable, branching, searchable conversation memory: look at, search, back up and "
    "serve a threadline store.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
for _name, _command, _usage, _panel in (
    ("sessions", sessions, "[DB]", "Read"),
    ("show", show, "[DB] SESSION_ID", "Read"),
    ("history", history, "[DB] SESSION_ID", "Read"),
    ("search", search, "[DB] QUERY", "Read"),
    ("export", export, "[DB]", "Read"),
    ("import", import_, "[DB] FILE", "Write"),
    ("fork", fork, "[DB] SESSION_ID MESSAGE_ID", "Write"),
    ("checkout", checkout, "[DB] SESSION_ID MESSAGE_ID", "Write"),
    ("delete", delete, "[DB] SESSION_ID", "Write"),
    ("compact", compact, "[DB] SESSION_ID", "Write"),
    ("rename", rename, "[DB] SESSION_ID NAME", "Write"),
    ("rewind", rewind, "[DB] SESSION_ID MESSAGE_ID", "Write"),
    ("purge", purge, "[DB]", "Write"),
    ("forget-user", forget_user, "[DB] USER", "Write"),
    ("copy", copy, "--from URL --to URL", "Write"),
    ("serve", serve, "[DB]", "Service"),
    ("mcp", mcp, "[DB]", "Service"),
    ("demo", demo, "", "Start here"),
):
    register(app, _name, _command, _usage, _panel)
register(keys, "create", create_key, "[DB]")
register(keys, "list", list_keys, "[DB]")
register(keys, "revoke", revoke_key, "[DB] KEY_ID")
app.add_typer(keys, name="keys", rich_help_panel="Service")
register(profile, "show", show_profile, "[DB]")
register(profile, "set", set_profile, "[DB] FILE")
app.add_typer(profile, name="profile", rich_help_panel="Service")
register(blocks, "show", show_blocks, "[DB] SESSION_ID")
register(blocks, "replace", replace_block, "[DB] SESSION_ID LABEL TEXT")
register(blocks, "append", append_block, "[DB] SESSION_ID LABEL TEXT")
app.add_typer(
    blocks,
    name="blocks",
    rich_help_panel="Memory",
    short_help="A session's memory blocks: show, replace, append.",
)
register(state, "show", show_state, "[DB] SESSION_ID")
register(state, "set", set_state, "[DB] SESSION_ID KEY=VALUE [KEY=VALUE]...")
app.add_typer(
    state, name="state", rich_help_panel="Memory", short_help="A session's state: show, set."
)


def _version(value: bool) -> None:
    if value:
        typer.echo(threadline.__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Durable, branching, searchable conversation memory: look at, search, back up and
    serve a threadline store."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``threadline`` command with ``argv`` (default: ``sys.argv[1:]``); returns
    the exit code: 0 done, 1 a clear error (one line on stderr), 2 a usage error.

    >>> main(["sessions", "/nonexistent/agent.db"])  # doctest: +SKIP
    1
    """
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # Standalone: typer reports usage errors itself (exit code 2) and raises SystemExit.
        command.main(args=args, prog_name="threadline", standalone_mode=True)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except (CliError, threadline.ThreadlineError, ValueError, OSError) as exc:
        print(f"threadline: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or text}: {exc.filename}"
    return " ".join(text.split())
