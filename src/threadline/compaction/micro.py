"""Micro-compaction: shrink bulky tool outputs and text without an LLM.

``truncate_older_messages`` is a read-time copy for building a prompt; ``enforce_row_size`` is
what the store applies before writing one message that is too large. Neither mutates its input.
Sizes are measured on compact JSON (``separators=(",", ":")``, ``ensure_ascii=False``); byte
limits on its UTF-8 encoding.

>>> old = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "x" * 30}]}
>>> truncate_older_messages([old], keep_recent=0, max_text_chars=10)[0]["parts"][0]["text"]
'xxxxxxxxxx... [truncated 30 chars]'
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from threadline.messages import compact_json as _json
from threadline.messages import is_tool_part
from threadline.types import Message

logger = logging.getLogger("threadline")

ROW_TOOL_OUTPUT_CHARS = 1_000
"""``enforce_row_size`` cuts completed tool outputs to this many characters."""
ROW_TEXT_PART_CHARS = 1_000
"""``enforce_row_size`` rewrites text parts longer than this."""
ROW_TEXT_PREVIEW_CHARS = 500
ROW_PART_CHARS = 1_000
"""Last resort: any other part larger than this (as JSON) is shrunk to about this size."""
ROW_METADATA_CHARS = 10_000
"""Last resort: metadata and extra top-level keys are shrunk to about this size."""

_STANDARD_KEYS = frozenset({"id", "role", "parts", "createdAt", "metadata"})
_RECORD_KEYS = (
    "compactedToolOutputs",
    "compactedTextParts",
    "compactedParts",
    "compactedPartsRemoved",
    "compactedMetadata",
)


def _size(value: Any) -> int:
    # surrogatepass: measuring must never raise (normalisation rejects lone surrogates anyway).
    return len(_json(value).encode("utf-8", "surrogatepass"))


def truncation_marker(original_chars: int) -> str:
    """The suffix appended to a cut string: ``... [truncated N chars]``.

    >>> truncation_marker(1200)
    '... [truncated 1200 chars]'
    """
    return f"... [truncated {original_chars} chars]"


def placeholder(original_chars: int) -> dict[str, Any]:
    """What replaces a structured value that cannot be kept in shape.

    >>> placeholder(42)
    {'__truncated': True, '__truncatedChars': 42}
    """
    return {"__truncated": True, "__truncatedChars": original_chars}


def cut_text(text: str, max_chars: int) -> str:
    """``text[:max_chars] + "... [truncated N chars]"`` when longer than ``max_chars``.

    >>> cut_text("abcdef", 3)
    'abc... [truncated 6 chars]'
    """
    return text if len(text) <= max_chars else text[:max_chars] + truncation_marker(len(text))


# --------------------------------------------------------------------------- shape-preserving


def _shrink_string(text: str, budget: int) -> str:
    """Cut ``text`` so its JSON form (quotes and escapes included) fits ``budget`` if possible."""
    marker = truncation_marker(len(text))
    keep = max(0, budget - 2 - len(marker))
    while keep > 0:
        excess = len(_json(text[:keep] + marker)) - budget
        if excess <= 0:
            break
        keep = max(0, keep - excess)  # escapes made it longer: drop at least the excess
    return text[:keep] + marker


def _shrink_list(items: Sequence[Any], budget: int, original_chars: int) -> list[Any]:
    """Keep leading items that fit and end with a marker string (the first item may be cut)."""
    marker = truncation_marker(original_chars)
    available = budget - 3 - len(_json(marker))  # brackets and the marker's comma
    kept: list[Any] = []
    used = 0
    for item in items:
        size = len(_json(item)) + (1 if kept else 0)
        if used + size > available:
            break
        kept.append(item)
        used += size
    if not kept and items and available > len(marker):
        kept.append(shrink_value(items[0], available))
    return [*kept, marker]


def _shrink_dict(obj: dict[Any, Any], budget: int, original_chars: int) -> dict[Any, Any] | Any:
    """Keep every key: small values whole, the big ones share what is left of the budget."""
    skeleton = 2 + sum(len(_json(str(key))) + 1 for key in obj) + max(0, len(obj) - 1)
    remaining = budget - skeleton
    if remaining < 0:
        return placeholder(original_chars)
    sizes = {key: len(_json(value)) for key, value in obj.items()}
    order = sorted(obj, key=lambda key: sizes[key])
    result: dict[Any, Any] = {}
    for position, key in enumerate(order):
        share = remaining // (len(order) - position)
        value = obj[key] if sizes[key] <= share else shrink_value(obj[key], share)
        result[key] = value
        remaining -= sizes[key] if value is obj[key] else len(_json(value))
    return {key: result[key] for key in obj}


def shrink_value(value: Any, max_chars: int) -> Any:
    """Shrink a JSON value to about ``max_chars`` of compact JSON, keeping keys and types.

    Strings are cut (ending with ``... [truncated N chars]``), arrays lose trailing items and
    end with a marker string, objects keep every key (values that fit stay whole); what cannot
    be kept becomes ``{"__truncated": true, "__truncatedChars": N}``. ``N`` is the length of the
    original string, or of the compact JSON of the original structured value. Tiny budgets may
    be overshot by a marker. The input is not modified.

    >>> shrink_value({"id": 7, "body": "x" * 100}, 60)
    {'id': 7, 'body': 'xxxxxxxxxxxxxxxxx... [truncated 100 chars]'}
    """
    text = _json(value)
    if len(text) <= max_chars:
        return value
    if isinstance(value, str):
        return _shrink_string(value, max_chars)
    if isinstance(value, (list, tuple)):
        return _shrink_list(value, max_chars, len(text))
    if isinstance(value, dict):
        return _shrink_dict(value, max_chars, len(text))
    return placeholder(len(text))


def truncate_tool_output(output: Any, max_chars: int, *, preserve_shape: bool = True) -> Any:
    """Truncate one tool output longer than ``max_chars``; return it unchanged otherwise.

    A string output is measured by its length; a structured one by its compact JSON. With
    ``preserve_shape=False`` a structured output becomes one cut string of its JSON.

    >>> truncate_tool_output({"rows": list(range(100))}, 40, preserve_shape=False)
    '{"rows":[0,1,2,3,4,5,6,7,8,9,10,11,12,13... [truncated 300 chars]'
    """
    if isinstance(output, str):
        return cut_text(output, max_chars)
    text = _json(output)
    if len(text) <= max_chars:
        return output
    return shrink_value(output, max_chars) if preserve_shape else cut_text(text, max_chars)


# --------------------------------------------------------------------------- read time


def _parts(message: Message) -> list[Any]:
    parts = message.get("parts")
    return parts if isinstance(parts, list) else []


def _truncate_part(
    part: Any, max_tool_output_chars: int, max_text_chars: int, preserve_shape: bool
) -> Any:
    if not isinstance(part, dict):
        return part
    if part.get("type") == "text" and isinstance(part.get("text"), str):
        if len(part["text"]) > max_text_chars:
            return {**part, "text": cut_text(part["text"], max_text_chars)}
    elif is_tool_part(part) and "output" in part:
        output = truncate_tool_output(
            part["output"], max_tool_output_chars, preserve_shape=preserve_shape
        )
        if output is not part["output"]:
            return {**part, "output": output}
    return part


def truncate_older_messages(
    messages: Sequence[Message],
    *,
    keep_recent: int = 4,
    max_tool_output_chars: int = 500,
    max_text_chars: int = 10_000,
    preserve_shape: bool = True,
) -> list[Message]:
    """Copy of ``messages`` with bulky tool outputs and long texts cut, except the newest ones.

    The last ``keep_recent`` messages (and every older message needing no change) are returned
    as the same objects; changed messages are new dicts, so the input is never modified.

    >>> msgs = [{"id": "a", "role": "assistant", "parts": [
    ...     {"type": "tool-search", "toolCallId": "c1", "state": "output-available",
    ...      "input": {}, "output": "r" * 900}]}]
    >>> truncate_older_messages(msgs, keep_recent=0)[0]["parts"][0]["output"][-25:]
    '... [truncated 900 chars]'
    """
    older = max(0, len(messages) - max(0, keep_recent))
    out: list[Message] = []
    for message in messages[:older]:
        parts = _parts(message)
        new_parts = [
            _truncate_part(p, max_tool_output_chars, max_text_chars, preserve_shape) for p in parts
        ]
        changed = any(new is not old for new, old in zip(new_parts, parts, strict=True))
        out.append({**message, "parts": new_parts} if changed else message)
    out.extend(messages[older:])
    return out


# --------------------------------------------------------------------------- row size


class _Draft:
    """A new message being shrunk step by step; never shares mutable state with the input."""

    def __init__(self, message: Message) -> None:
        self.message: Message = dict(message)
        self.parts: list[Any] = list(_parts(message))
        metadata = message.get("metadata")
        self.metadata: dict[str, Any] = dict(metadata) if isinstance(metadata, dict) else {}

    def build(self) -> Message:
        out = dict(self.message)
        if "parts" in out or self.parts:
            out["parts"] = self.parts
        if self.metadata or "metadata" in out:
            out["metadata"] = self.metadata
        return out

    def size(self) -> int:
        return _size(self.build())

    def record(self, key: str, value: Any) -> None:
        existing = self.metadata.get(key)
        self.metadata[key] = [*(existing if isinstance(existing, list) else []), value]


def _truncate_tool_outputs(draft: _Draft) -> None:
    """Step 1: completed tool outputs over 1,000 characters, shape preserved."""
    for index, part in enumerate(draft.parts):
        if not (is_tool_part(part) and "output" in part):
            continue
        output = truncate_tool_output(part["output"], ROW_TOOL_OUTPUT_CHARS)
        if output is not part["output"]:
            draft.parts[index] = {**part, "output": output}
            call_id = part.get("toolCallId")
            if isinstance(call_id, str):
                draft.record("compactedToolOutputs", call_id)


def _replace_until_fits(draft: _Draft, max_bytes: int, candidates: list[int], key: str) -> None:
    """Replace ``candidates`` parts in order, tracking the size incrementally, until it fits."""
    # Reserve room for the metadata list this step may add, so the running total stays exact
    # enough without re-encoding the whole message after every part.
    target = max_bytes - _size({key: candidates}) - 8
    total = draft.size()
    for index in candidates:
        if total <= target:
            break
        old = draft.parts[index]
        new = _rewrite_part(old, key)
        draft.parts[index] = new
        draft.record(key, index)
        total += _size(new) - _size(old)


def _rewrite_part(part: dict[str, Any], key: str) -> dict[str, Any]:
    if key == "compactedTextParts":
        text: str = part["text"]
        preview = text[:ROW_TEXT_PREVIEW_CHARS]
        summary = f"[Text truncated for storage ({len(text)} chars). First 500 chars: {preview}...]"
        return {**part, "text": summary}
    shrunk = shrink_value(part, ROW_PART_CHARS)
    if not isinstance(shrunk, dict) or shrunk.get("type") != part.get("type"):
        shrunk = {"type": part.get("type"), **placeholder(len(_json(part)))}
    return shrunk


def _truncate_text_parts(draft: _Draft, max_bytes: int) -> None:
    """Step 2: text parts over 1,000 characters, oldest first, until the message fits."""
    candidates = [
        i
        for i, p in enumerate(draft.parts)
        if isinstance(p, dict)
        and p.get("type") == "text"
        and isinstance(p.get("text"), str)
        and len(p["text"]) > ROW_TEXT_PART_CHARS
    ]
    _replace_until_fits(draft, max_bytes, candidates, "compactedTextParts")


def _shrink_large_parts(draft: _Draft, max_bytes: int) -> None:
    """Last resort 1: any part still over ~1,000 characters of JSON (reasoning, files...)."""
    candidates = [
        i
        for i, p in enumerate(draft.parts)
        if isinstance(p, dict) and len(_json(p)) > 2 * ROW_PART_CHARS
    ]
    _replace_until_fits(draft, max_bytes, candidates, "compactedParts")


def _shrink_metadata_and_extras(draft: _Draft) -> None:
    """Last resort 2: huge metadata or unknown top-level keys are shrunk in shape."""
    records = {k: draft.metadata[k] for k in _RECORD_KEYS if k in draft.metadata}
    own = {k: v for k, v in draft.metadata.items() if k not in records}
    if len(_json(own)) > ROW_METADATA_CHARS:
        shrunk = shrink_value(own, ROW_METADATA_CHARS)
        draft.metadata = {**(shrunk if isinstance(shrunk, dict) else {}), **records}
        draft.metadata["compactedMetadata"] = True
    for key, value in list(draft.message.items()):
        if key not in _STANDARD_KEYS and len(_json(value)) > ROW_METADATA_CHARS:
            draft.message[key] = shrink_value(value, ROW_METADATA_CHARS)


def _drop_trailing_parts(draft: _Draft, max_bytes: int) -> None:
    """Last resort 3: keep the leading parts that fit and replace the rest by one note."""
    sizes = [_size(p) + 1 for p in draft.parts]
    room = max_bytes - (draft.size() - sum(sizes)) - 200  # the note and its metadata record
    kept = 0
    for size in sizes:
        if room - size < 0:
            break
        room -= size
        kept += 1
    dropped = draft.parts[kept:]
    note = f"[{len(dropped)} parts removed for storage ({len(_json(dropped))} chars)]"
    draft.parts = [*draft.parts[:kept], {"type": "text", "text": note}]
    draft.metadata["compactedPartsRemoved"] = len(dropped)


def _minimal(draft: _Draft) -> None:
    """Final fallback: only the id, role, timestamp, a note and the compaction records."""
    draft.message = {k: draft.message[k] for k in ("id", "role", "createdAt") if k in draft.message}
    draft.parts = [{"type": "text", "text": "[Message too large for storage; content removed]"}]
    draft.metadata = {k: draft.metadata[k] for k in _RECORD_KEYS if k in draft.metadata}


def enforce_row_size(message: Message, max_bytes: int = 1_800_000) -> Message:
    """Return ``message`` if its compact UTF-8 JSON fits ``max_bytes``, else a shrunk copy.

    Steps, stopping as soon as it fits: (1) completed tool outputs (any role) cut to
    1,000 characters, shape preserved, call ids in ``metadata.compactedToolOutputs``; (2) text
    parts over 1,000 characters, oldest first, become ``[Text truncated for storage (N chars).
    First 500 chars: ...]``, indices in ``metadata.compactedTextParts``. Last resort, so the
    store never rejects a message for size: (3) other parts over ~2,000 characters of JSON
    (reasoning, files, tool inputs) are shrunk in shape, indices in ``metadata.compactedParts``;
    (4) metadata and unknown top-level keys over 10,000 characters are shrunk
    (``metadata.compactedMetadata``); (5) trailing parts that still do not fit are replaced by
    one text note (``metadata.compactedPartsRemoved`` = how many); (6) only id, role,
    ``createdAt``, a note and the records are kept. A WARNING is logged on ``threadline``.

    >>> big = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "é" * 2000}]}
    >>> len(enforce_row_size(big, max_bytes=2000)["parts"][0]["text"])
    563
    """
    original = _size(message)
    if original <= max_bytes:
        return message
    draft = _Draft(message)
    steps: tuple[Callable[[_Draft], None], ...] = (
        _truncate_tool_outputs,
        lambda d: _truncate_text_parts(d, max_bytes),
        lambda d: _shrink_large_parts(d, max_bytes),
        _shrink_metadata_and_extras,
        lambda d: _drop_trailing_parts(d, max_bytes),
        _minimal,
    )
    final = original
    for step in steps:
        step(draft)
        final = draft.size()
        if final <= max_bytes:
            break
    logger.warning(
        "message %r is %d bytes, over the %d-byte row limit; compacted to %d bytes",
        message.get("id"),
        original,
        max_bytes,
        final,
    )
    return draft.build()


__all__ = [
    "cut_text",
    "enforce_row_size",
    "placeholder",
    "shrink_value",
    "truncate_older_messages",
    "truncate_tool_output",
    "truncation_marker",
]
