"""How the CLI shows a message: text, tool calls, attachments and other parts as rich Text.

Message content always goes in as ``Text`` (never as console markup), so brackets in a
message are printed, not interpreted. Nothing is cut silently: a shortened body ends with a
line saying how much was left out and how to see it (``--full``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from threadline.internal import text_in
from threadline.messages import is_tool_part, parts_of, tool_name_of, with_answer

__all__ = ["body", "clip", "prefixed"]

_DATA_URL_MARK = ";base64,"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return repr(value)


def _size(count: int) -> str:
    """``count`` bytes for people: ``512 bytes``, ``600.0 kB``, ``1.2 MB``."""
    if count < 1000:
        return f"{count} bytes"
    value = float(count)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 1000 or unit == "GB":
            break
    return f"{value:.1f} {unit}"


def _file(part: dict[str, Any]) -> Text:
    url = part.get("url")
    media = part.get("mediaType") or "file"
    name = part.get("filename")
    line = Text("📎 ", style="magenta")
    line.append(str(media), style="magenta")
    if isinstance(name, str):
        line.append(f" {name}")
    if isinstance(url, str) and url.startswith("data:") and _DATA_URL_MARK in url:
        encoded = len(url) - url.index(_DATA_URL_MARK) - len(_DATA_URL_MARK)
        line.append(f" ({_size(encoded * 3 // 4)} inline)", style="dim")
    elif isinstance(url, str):
        line.append(f" {url}", style="dim")
    return line


def _tool(part: dict[str, Any]) -> Text:
    line = Text("⚙ ", style="yellow")
    line.append(tool_name_of(part) or "tool", style="bold yellow")
    if "input" in part or ("output" not in part and part.get("errorText") is None):
        line.append("(" + _json(part.get("input", "")) + ")")  # a result alone has no input
    if "output" in part:
        line.append(" → ", style="yellow")
        line.append(_json(part["output"]))
    elif part.get("errorText") is not None:
        line.append(" ✗ ", style="red")
        line.append(_json(part["errorText"]), style="red")
    else:
        line.append(f" [{part.get('state', 'pending')}]", style="dim")
    return line


def _part(part: dict[str, Any], answers: Mapping[str, dict[str, Any]]) -> Text | None:
    kind = part.get("type")
    if kind == "text":
        return Text(str(part.get("text", "")))
    if kind == "reasoning":
        return Text("💭 " + text_in(part), style="dim italic")
    if is_tool_part(part):
        call_id = part.get("toolCallId")
        return _tool(with_answer(part, answers.get(call_id) if isinstance(call_id, str) else None))
    if kind == "file":
        return _file(part)
    if kind in ("source-url", "source-document"):
        return Text("🔗 " + str(part.get("url") or part.get("title") or kind), style="cyan")
    if kind == "step-start":
        return None  # a boundary between steps, no content
    extra = {k: v for k, v in part.items() if k != "type"}
    return Text(f"[{kind}] " + _json(extra), style="dim")


def body(message: dict[str, Any], answers: Mapping[str, dict[str, Any]] | None = None) -> Text:
    """The message's parts, one per line: text as is, tool calls as ``⚙ name(input) →
    output``, attachments as ``📎 media type (size)``, other parts by type. ``answers``
    (call id → result part of a later message) shows a waiting call with its result.

    >>> body({"parts": [{"type": "text", "text": "hi"},
    ...                 {"type": "tool-f", "input": {"x": 1}, "output": "ok"}]}).plain
    'hi\\n⚙ f({"x": 1}) → ok'
    """
    found = answers or {}
    lines = [line for part in parts_of(message) if (line := _part(part, found)) is not None]
    if not lines:
        return Text("(no content)", style="dim")
    return Text("\n").join(lines)


def clip(text: Text, console: Console, width: int, max_lines: int | None) -> list[Text]:
    """``text`` wrapped to ``width`` cells; with ``max_lines``, at most that many lines plus
    one saying how many characters were left out.

    >>> from rich.console import Console
    >>> lines = clip(Text("word " * 40), Console(width=80), 20, 2)
    >>> [line.plain for line in lines]
    ['word word word word ', 'word word word word ', '… 160 more characters (--full shows all)']
    """
    width = max(width, 8)
    total = len(text.plain)
    source = text
    if max_lines is not None and total > width * (max_lines + 1):
        source = text[: width * (max_lines + 1)]  # wrap only what can be shown
    lines = list(source.wrap(console, width, overflow="fold"))
    if max_lines is None or len(lines) <= max_lines:
        return lines
    shown = lines[:max_lines]
    left = total - sum(len(line.plain) for line in shown)
    note = Text(f"… {left} more characters (--full shows all)", style="dim italic")
    return [*shown, note]


def prefixed(first: Text, rest: Text, lines: list[Text]) -> list[Text]:
    """``lines`` with ``first`` before the first one and ``rest`` before the others.

    >>> [t.plain for t in prefixed(Text("├─"), Text("│ "), [Text("a"), Text("b")])]
    ['├─a', '│ b']
    """
    out = []
    for index, line in enumerate(lines):
        row = (first if index == 0 else rest).copy()
        row.append_text(line)
        out.append(row)
    return out
