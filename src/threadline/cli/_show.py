"""Drawing a whole session (``threadline show``) and a history (``threadline history``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from threadline.cli._render import body, clip, prefixed
from threadline.cli._tree import covered_ids, layout
from threadline.compaction.overlays import visible_overlays
from threadline.messages import (
    TOOL_NAME_WINDOW,
    answers_of,
    is_overlay_id,
    is_result_only,
    is_tool_part,
    parts_of,
)
from threadline.store.base import SessionDump
from threadline.types import Compaction, Message

__all__ = ["draw_history", "draw_tree", "head_path"]

_SHORT_LINES = 3  # body lines per message without --full
_MIN_BODY = 40  # cells kept for content however deep the branch


def head_path(dump: SessionDump) -> list[str]:
    """Ids from the root to the head (``[]`` for an empty session), along parent links."""
    parent_of = {node.message["id"]: node.parent_id for node in dump.messages}
    path: list[str] = []
    current = dump.head_id
    while current is not None and current in parent_of and len(path) <= len(parent_of):
        path.append(current)
        current = parent_of[current]
    return path[::-1]


class _Overlays:
    """Which overlay starts at which message, which messages each one covers, and which
    overlays the head's history applies ("active")."""

    def __init__(self, dump: SessionDump, path: Sequence[str]) -> None:
        parent_of = {node.message["id"]: node.parent_id for node in dump.messages}
        by_id = {node.message["id"]: node.message for node in dump.messages}
        spans = visible_overlays([by_id[i] for i in path], dump.compactions)
        self.active = {span.compaction.id for span in spans}
        self.starting: dict[str, list[Compaction]] = {}
        self.covered: dict[str, int] = {}
        self.status: dict[str, str] = {}
        self.summarised: set[str] = set()
        on_path = set(path)
        for compaction in dump.compactions:
            ids = covered_ids(
                compaction.from_message_id, compaction.to_message_id, parent_of, len(parent_of)
            )
            self.starting.setdefault(compaction.from_message_id, []).append(compaction)
            self.covered[compaction.id] = len(ids)
            if compaction.id in self.active:
                self.summarised.update(ids)
                self.status[compaction.id] = "applied to the head's history"
            elif ids and on_path.issuperset(ids):
                self.status[compaction.id] = "not applied: a newer summary covers it"
            else:
                self.status[compaction.id] = "not on the head's path"


def _prefixes(row_level: int, opens: bool, cap: int) -> tuple[Text, Text, int]:
    """(first-line prefix, continuation prefix, level drawn) for a row."""
    level = min(row_level, cap)
    if level == 0:
        return Text(""), Text("  "), 0
    guides = "│ " * (level - 1)
    first = Text(guides + ("├─" if opens else "│ "), style="bright_black")
    rest = Text("│ " * level + "  ", style="bright_black")
    return first, rest, level


def tool_answers(dump: SessionDump) -> dict[str, dict[str, dict[str, Any]]]:
    """Call message id → (call id → result part) for the results stored in later messages:
    each result answers the nearest message above it (within :data:`TOOL_NAME_WINDOW`)
    holding its call, so a call shows as answered on the branch its result is on."""
    by_id = {node.message["id"]: node for node in dump.messages}
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    for node in dump.messages:
        for part in parts_of(node.message):
            call_id = part.get("toolCallId")
            if not (is_tool_part(part) and is_result_only(part) and isinstance(call_id, str)):
                continue
            up, steps = node.parent_id, 0
            while up is not None and up in by_id and steps < TOOL_NAME_WINDOW:
                if any(
                    is_tool_part(p) and p.get("toolCallId") == call_id and not is_result_only(p)
                    for p in parts_of(by_id[up].message)
                ):
                    answers.setdefault(up, {}).setdefault(call_id, part)
                    break
                up, steps = by_id[up].parent_id, steps + 1
    return answers


def _message_text(
    message: Message,
    *,
    on_path: bool,
    is_head: bool,
    summarised: bool,
    depth: int | None,
    answers: dict[str, dict[str, Any]] | None = None,
) -> Text:
    line = Text("● " if on_path else "○ ", style="green" if on_path else "bright_black")
    line.append(str(message.get("id")), style="bold")
    line.append(f" {message.get('role')}", style="cyan")
    if is_head:
        line.append(" ← head", style="bold yellow")
    if summarised:
        line.append(" [summarised]", style="blue")
    if depth is not None:
        line.append(f" [branch depth {depth}]", style="dim")
    line.append("  ")
    line.append_text(body(message, answers))
    return line


def _overlay_text(compaction: Compaction, status: str, count: int) -> Text:
    line = Text("≡ ", style="bold blue")
    line.append(f"summary of {count} message{'s' if count != 1 else ''}", style="blue")
    line.append(f" ({status})", style="dim")
    line.append("  ")
    line.append(compaction.summary)
    return line


def draw_tree(dump: SessionDump, console: Console, *, full: bool) -> Iterator[Text]:
    """Every line of the drawing of ``dump``: each root, each branch, each overlay (before
    the message it starts at) and each message exactly once, wrapped to the console width.
    """
    width = console.width
    path = head_path(dump)
    on_path = set(path)
    overlays = _Overlays(dump, path)
    by_id = {node.message["id"]: node.message for node in dump.messages}
    answers = tool_answers(dump)
    pairs = ((node.message["id"], node.parent_id) for node in dump.messages)
    rows = layout(pairs, path)
    roots = sum(1 for row in rows if row.kind == "root") + (1 if rows else 0)
    cap = max(1, (width - _MIN_BODY) // 2)
    max_lines = None if full else _SHORT_LINES
    for row in rows:
        if row.kind == "root":
            yield Text(f"┄┄ root {row.root_index + 1} of {roots} ┄┄", style="bold magenta")
            continue
        first, rest, level = _prefixes(row.level, row.opens_branch, cap)
        for compaction in overlays.starting.get(row.message_id, ()):
            text = _overlay_text(
                compaction, overlays.status[compaction.id], overlays.covered[compaction.id]
            )
            yield from prefixed(first, rest, clip(text, console, width - len(rest), max_lines))
            first = _prefixes(row.level, False, cap)[0]
        text = _message_text(
            by_id[row.message_id],
            on_path=row.message_id in on_path,
            is_head=row.message_id == dump.head_id,
            summarised=row.message_id in overlays.summarised,
            depth=row.level if row.level > level else None,
            answers=answers.get(row.message_id),
        )
        yield from prefixed(first, rest, clip(text, console, width - len(rest), max_lines))


def draw_history(messages: Sequence[Message]) -> Iterator[Text]:
    """The messages of a history, in order, each under a line naming it; bodies in full. A
    call answered by a later message shows its result (one step)."""
    answers = answers_of(messages)
    for message in messages:
        title = Text("── ", style="bright_black")
        title.append(str(message.get("id")), style="bold")
        title.append(f" · {message.get('role')}", style="cyan")
        if isinstance(message.get("createdAt"), str):
            title.append(f" · {message['createdAt']}", style="dim")
        if is_overlay_id(message.get("id")):
            title.append(" · summary overlay", style="blue")
        yield title
        yield body(message, answers)
