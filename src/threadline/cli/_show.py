"""Drawing a whole session (``threadline show``) and a history (``threadline history``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from threadline.cli._render import body, clip, prefixed
from threadline.cli._tree import covered_ids, layout
from threadline.compaction import superseded
from threadline.compaction.overlays import overlays_cross_start, visible_overlays
from threadline.messages import (
    TOOL_NAME_WINDOW,
    answers_of,
    decode_message,
    is_overlay_id,
    is_result_only,
    is_tool_part,
    parts_of,
)
from threadline.store.base import SessionDump
from threadline.types import Compaction, Message

__all__ = ["draw_history", "draw_tail", "draw_tree", "head_path"]

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
    """Which overlay starts at which message, which messages each one covers, which
    overlays the head's history applies ("active") and which no read shows any more
    ("superseded", :func:`threadline.compaction.superseded`)."""

    def __init__(self, dump: SessionDump, path: Sequence[str]) -> None:
        parent_of = {node.message["id"]: node.parent_id for node in dump.messages}
        by_id = {node.message["id"]: node.message for node in dump.messages}
        spans = visible_overlays([by_id[i] for i in path], dump.compactions)
        self.active = {span.compaction.id for span in spans}
        self.superseded = superseded(dump.compactions, parent_of, dump.head_id)
        self.starting: dict[str, list[Compaction]] = {}
        self.covered: dict[str, int] = {}
        self.status: dict[str, str] = {}
        self.summarised: set[str] = set()
        for compaction in dump.compactions:
            ids = covered_ids(
                compaction.from_message_id, compaction.to_message_id, parent_of, len(parent_of)
            )
            self.starting.setdefault(compaction.from_message_id, []).append(compaction)
            self.covered[compaction.id] = len(ids)
            if compaction.id in self.active:
                self.summarised.update(ids)
                self.status[compaction.id] = "applied to the head's history"
            elif compaction.id in self.superseded:
                self.status[compaction.id] = "superseded: a newer summary is read instead"
            else:
                self.status[compaction.id] = "not applied to the head's history"


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


def tail_overlays(
    rows: Sequence[tuple[str, str, int]], compactions: Sequence[Compaction], shown: int
) -> tuple[dict[str, list[tuple[Compaction, str, int]]], set[str], bool]:
    """For ``show --last``: the overlays touching the last ``shown`` of ``rows`` (the newest
    part of the head's path, ``(id, stored JSON, depth)``, possibly read further back so that
    every overlay ending in it is seen whole). Returns (start id → [(overlay, status,
    messages covered)], ids drawn as summarised, whether more rows are needed: an overlay
    ending in them starts before them and the path goes further back).

    >>> from datetime import datetime, timezone
    >>> c = Compaction("c1", "S", "m1", "m2", datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> rows = [(f"m{i}", "{}", i) for i in (1, 2, 3)]
    >>> starting, summarised, more = tail_overlays(rows, [c], 2)
    >>> starting["m2"][0][1:], sorted(summarised), more
    (("applied to the head's history; it starts before the messages shown", 2), ['m2'], False)
    """
    shown = min(shown, len(rows))
    encoded = [(message_id, data) for message_id, data, _ in rows]
    if rows and rows[0][2] > 1 and overlays_cross_start(encoded, compactions):
        return {}, set(), True
    ids = [message_id for message_id, _, _ in rows]
    spans = visible_overlays([{"id": message_id} for message_id in ids], compactions)
    active = {span.compaction.id: span for span in spans}
    first_shown = len(ids) - shown
    positions = {message_id: index for index, message_id in enumerate(ids)}
    starting: dict[str, list[tuple[Compaction, str, int]]] = {}
    summarised: set[str] = set()
    for compaction in compactions:
        start = positions.get(compaction.from_message_id)
        end = positions.get(compaction.to_message_id)
        if start is None or end is None or end < start or end < first_shown:
            continue
        status = (
            "applied to the head's history"
            if compaction.id in active
            else "not applied: a newer summary covers it on this path"
        )
        if start < first_shown:
            status += "; it starts before the messages shown"
        if compaction.id in active:
            summarised.update(ids[max(start, first_shown) : end + 1])
        at = ids[max(start, first_shown)]
        starting.setdefault(at, []).append((compaction, status, end - start + 1))
    return starting, summarised, False


def draw_tail(
    rows: Sequence[tuple[str, str, int]],
    compactions: Sequence[Compaction],
    shown: int,
    console: Console,
    *,
    full: bool,
) -> Iterator[Text]:
    """The lines of ``show --last``: the last ``shown`` messages of the head's path (``rows``
    as :func:`tail_overlays` takes them, every overlay ending in them seen whole), one
    level, the head last; a first line says how many earlier messages are not shown."""
    width = console.width
    max_lines = None if full else _SHORT_LINES
    shown = min(shown, len(rows))
    starting, summarised, _ = tail_overlays(rows, compactions, shown)
    tail = rows[len(rows) - shown :]
    if tail and tail[0][2] > 1:
        earlier = tail[0][2] - 1
        yield Text(
            f"┄┄ {earlier} earlier message{'s' * (earlier != 1)} on the head's path "
            f"(without --last: the whole tree) ┄┄",
            style="bold magenta",
        )
    messages = [decode_message(data) for _, data, _ in tail]
    answers = answers_of(messages)
    rest = Text("  ")
    for index, message in enumerate(messages):
        message_id = str(message.get("id"))
        for compaction, status, count in starting.get(message_id, ()):
            text = _overlay_text(compaction, status, count)
            yield from prefixed(Text(""), rest, clip(text, console, width - 2, max_lines))
        text = _message_text(
            message,
            on_path=True,
            is_head=index == len(messages) - 1,
            summarised=message_id in summarised,
            depth=None,
            answers=answers,
        )
        yield from prefixed(Text(""), rest, clip(text, console, width - 2, max_lines))


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
