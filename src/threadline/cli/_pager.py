"""Long output on a terminal goes through a pager (``less``, or ``$PAGER``).

Only when a person reads it: standard output is a terminal, the output is not ``--json``,
``--no-pager`` was not given, and it is longer than the screen. A pipe, a file or a script
gets the lines as they are drawn (streamed, never held whole).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

__all__ = ["NoPagerOption", "pager_styles", "print_paged", "wants_pager"]

NoPagerOption = Annotated[
    bool,
    typer.Option(
        "--no-pager", help="Print everything, even on a terminal (default: long output is paged)."
    ),
]

_BATCH = 500  # lines printed per call when streaming


def wants_pager(
    *, enabled: bool, is_terminal: bool, as_json: bool, lines: int, height: int
) -> bool:
    """Whether output of ``lines`` lines goes through the pager on a screen ``height`` lines
    high: only for a person at a terminal (``is_terminal``, not ``--json``, not
    ``--no-pager``), and only when it does not fit (the prompt keeps one line).

    >>> wants_pager(enabled=True, is_terminal=True, as_json=False, lines=80, height=40)
    True
    >>> wants_pager(enabled=True, is_terminal=True, as_json=False, lines=39, height=40)
    False
    >>> wants_pager(enabled=True, is_terminal=False, as_json=False, lines=80, height=40)
    False
    """
    return enabled and is_terminal and not as_json and lines > max(height - 1, 0)


def pager_styles(environ: Mapping[str, str]) -> bool:
    """Whether the pager shows colours (``less -R``): with ``LESS`` holding ``R``/``r`` or a
    ``PAGER`` naming ``-R``; else it gets plain text rather than escape codes.

    >>> pager_styles({"LESS": "-FRX"}), pager_styles({"PAGER": "less -R"}), pager_styles({})
    (True, True, False)
    """
    less = environ.get("LESS", "")
    return "R" in less or "r" in less or "-R" in environ.get("PAGER", "").split()


def _stream(out: Console, lines: Iterable[Text], wrap: bool) -> None:
    chunk: list[Text] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= _BATCH:
            out.print(Text("\n").join(chunk), soft_wrap=not wrap)
            chunk = []
    if chunk:
        out.print(Text("\n").join(chunk), soft_wrap=not wrap)


def _screen_lines(out: Console, items: list[Text], enough: int) -> int:
    """Screen lines ``items`` take at ``out.width``, counted up to ``enough`` (then it is
    known not to fit, and the rest need not be wrapped)."""
    count = 0
    for item in items:
        count += len(item.wrap(out, out.width))
        if count > enough:
            break
    return count


def print_paged(
    out: Console, lines: Iterable[Text], *, enabled: bool = True, wrap: bool = False
) -> None:
    """Print ``lines`` (rich ``Text``: fitted to ``out.width`` already, or ``wrap`` to
    wrap them) on ``out``, through the pager when :func:`wants_pager` says so; else
    streamed, a batch at a time."""
    if not (enabled and sys.stdout.isatty()):
        _stream(out, lines, wrap)
        return
    held = list(lines)
    count = _screen_lines(out, held, out.height)
    if wants_pager(
        enabled=enabled, is_terminal=True, as_json=False, lines=count, height=out.height
    ):
        with out.pager(styles=pager_styles(os.environ)):
            _stream(out, held, wrap)
    else:
        _stream(out, held, wrap)
