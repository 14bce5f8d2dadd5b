"""Message helpers: ids, timestamps, normalisation, JSON encoding and part inspection.

Messages are plain dicts in AI SDK ``UIMessage`` shape. Everything here is pure: no I/O,
and no function mutates the dict it is given. This module is their public home; each concern
is defined in a private module of its own (``_message_ids``, ``_timestamps``, ``_normalize``,
``_message_json``, ``_message_parts``) and re-exported here; builders and skill loads live here.

>>> m = normalize_message({"role": "user", "content": "hi"}, now="2026-11-21T10:00:00.000Z")
>>> m["parts"], m["createdAt"]
([{'type': 'text', 'text': 'hi'}], '2026-11-21T10:00:00.000Z')
"""

from __future__ import annotations

from typing import Any

from threadline._message_ids import OVERLAY_ID_PREFIX, is_overlay_id, new_id, validate_message_id
from threadline._message_json import compact_json, decode_message, encode_message
from threadline._message_json import dumps as dumps  # the stores' encoder; not in __all__
from threadline._message_parts import (
    TOOL_NAME_WINDOW,
    UNNAMED_TOOL,
    answers_of,
    function_calls,
    function_responses,
    is_final_response,
    is_tool_part,
    is_unnamed_result,
    name_tool_results,
    parts_of,
    text_of,
    tool_call_names,
    tool_name_of,
    with_answer,
)
from threadline._normalize import check_message, normalize_message, normalize_messages
from threadline._roles import ROLES, fold_message_role, fold_role, restore_role, stored_role
from threadline._timestamps import format_timestamp, now_iso, parse_timestamp
from threadline.formats._common import has_output, is_result_only
from threadline.types import Message

SKILL_LOAD_TOOL = "load_context"
_UNLOADED_PREFIX = "[skill unloaded"


# --------------------------------------------------------------------------- builders


def user(text: str, id: str | None = None) -> Message:
    """Build a user message with one text part.

    >>> user("hi", id="m1")["parts"]
    [{'type': 'text', 'text': 'hi'}]
    """
    return {
        "id": new_id() if id is None else id,
        "role": "user",
        "parts": [{"type": "text", "text": text}],
    }


def assistant(text: str, id: str | None = None) -> Message:
    """Build an assistant message with one text part.

    >>> assistant("hello")["role"]
    'assistant'
    """
    return {
        "id": new_id() if id is None else id,
        "role": "assistant",
        "parts": [{"type": "text", "text": text}],
    }


def tool_call(
    tool_name: str, input: Any, output: Any = None, tool_call_id: str | None = None
) -> Message:
    """Build an assistant message holding one tool part (``output-available`` if output given).

    >>> tool_call("weather", {"city": "Oslo"}, output="rain")["parts"][0]["state"]
    'output-available'
    """
    part: dict[str, Any] = {
        "type": f"tool-{tool_name}",
        "toolCallId": tool_call_id or f"call_{new_id()}",
        "toolName": tool_name,
        "state": "output-available" if output is not None else "input-available",
        "input": input,
    }
    if output is not None:
        part["output"] = output
    return {"id": new_id(), "role": "assistant", "parts": [part]}


# --------------------------------------------------------------------------- skill loads


def _skill_load(part: dict[str, Any]) -> tuple[str, str, str | None] | None:
    """``(label, key, toolCallId)`` of a completed ``load_context`` tool part, else None."""
    if tool_name_of(part) != SKILL_LOAD_TOOL or part.get("state") != "output-available":
        return None
    args = part.get("input")
    if not isinstance(args, dict):
        return None
    label, key = args.get("label"), args.get("key")
    if not isinstance(label, str) or not isinstance(key, str):
        return None
    call_id = part.get("toolCallId")
    return label, key, call_id if isinstance(call_id, str) else None


def _is_unloaded(part: dict[str, Any]) -> bool:
    output = part.get("output")
    return isinstance(output, str) and output.startswith(_UNLOADED_PREFIX)


def skill_loads_of(message: object) -> list[tuple[str, str, str | None]]:
    """Return ``(label, key, toolCallId)`` for each completed, still-loaded ``load_context`` call.

    >>> skill_loads_of(tool_call("load_context", {"label": "s", "key": "k"}, "doc", "c1"))
    [('s', 'k', 'c1')]
    """
    found: list[tuple[str, str, str | None]] = []
    for part in parts_of(message):
        load = _skill_load(part)
        if load is not None and not _is_unloaded(part):
            found.append(load)
    return found


def mark_skill_unloaded(message: Message, label: str, key: str) -> Message:
    """Copy of ``message`` whose ``load_context`` results for label/key read
    ``[skill unloaded: <key>]`` — what ``unload_context`` stores (only when one is still loaded).

    >>> m = tool_call("load_context", {"label": "s", "key": "k"}, "doc")
    >>> mark_skill_unloaded(m, "s", "k")["parts"][0]["output"]
    '[skill unloaded: k]'
    """
    loaded = any((lbl, k) == (label, key) for lbl, k, _ in skill_loads_of(message))
    parts = []
    for part in message.get("parts", []):
        load = _skill_load(part) if loaded and isinstance(part, dict) else None
        if load is not None and load[:2] == (label, key):
            part = {**part, "output": f"[skill unloaded: {key}]"}
        parts.append(part)
    return {**message, "parts": parts}


__all__ = [
    "OVERLAY_ID_PREFIX",
    "ROLES",
    "TOOL_NAME_WINDOW",
    "UNNAMED_TOOL",
    "answers_of",
    "assistant",
    "check_message",
    "compact_json",
    "decode_message",
    "encode_message",
    "fold_message_role",
    "fold_role",
    "format_timestamp",
    "function_calls",
    "function_responses",
    "has_output",
    "is_final_response",
    "is_overlay_id",
    "is_result_only",
    "is_tool_part",
    "is_unnamed_result",
    "mark_skill_unloaded",
    "name_tool_results",
    "new_id",
    "normalize_message",
    "normalize_messages",
    "now_iso",
    "parse_timestamp",
    "parts_of",
    "restore_role",
    "skill_loads_of",
    "stored_role",
    "text_of",
    "tool_call",
    "tool_call_names",
    "tool_name_of",
    "user",
    "validate_message_id",
    "with_answer",
]
