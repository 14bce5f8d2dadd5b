"""Message helpers: ids, timestamps, normalisation, JSON encoding and part inspection.

Messages are plain dicts in AI SDK ``UIMessage`` shape. Everything here is pure: no I/O,
and no function mutates the dict it is given.

>>> m = normalize_message({"role": "user", "content": "hi"}, now="2026-11-21T10:00:00.000Z")
>>> m["parts"], m["createdAt"]
([{'type': 'text', 'text': 'hi'}], '2026-11-21T10:00:00.000Z')
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from threadline._roles import ROLES, fold_message_role, fold_role, restore_role, stored_role
from threadline.errors import InvalidMessageError
from threadline.formats._common import has_output, is_result_only, plain
from threadline.formats._openai_chat import (
    chat_converter,
    from_openai_chat,
    is_openai_chat_message,
)
from threadline.types import Message

OVERLAY_ID_PREFIX = "compaction_"
"""Ids with this prefix belong to compaction overlays and are refused for stored messages."""

SKILL_LOAD_TOOL = "load_context"
_UNLOADED_PREFIX = "[skill unloaded"
_FIRST_KEYS = ("id", "role", "parts", "createdAt", "metadata")


# --------------------------------------------------------------------------- ids and time


def new_id() -> str:
    """Return a new unique message id: 32 lowercase hex characters, time-ordered — the first
    12 are the creation time in milliseconds, the other 20 random (80 bits) — so ids made
    later sort later and the stores' id indexes grow at one end instead of splitting pages
    anywhere.

    >>> first, second = new_id(), new_id()
    >>> len(first), first[:12] <= second[:12]
    (32, True)
    """
    return f"{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"


def is_overlay_id(message_id: object) -> bool:
    """True if ``message_id`` is a string using the reserved compaction-overlay prefix.

    >>> is_overlay_id("compaction_abc"), is_overlay_id("m1")
    (True, False)
    """
    return isinstance(message_id, str) and message_id.startswith(OVERLAY_ID_PREFIX)


def validate_message_id(message_id: object) -> str:
    """Return ``message_id`` if it is a usable stored-message id, else raise InvalidMessageError.

    >>> validate_message_id("m1")
    'm1'
    """
    if not isinstance(message_id, str):
        raise InvalidMessageError(f"message id must be a string, got {type(message_id).__name__}")
    if not message_id:
        raise InvalidMessageError("message id must not be empty")
    if is_overlay_id(message_id):
        raise InvalidMessageError(
            f"message id {message_id!r} uses the reserved prefix {OVERLAY_ID_PREFIX!r}"
        )
    return message_id


def format_timestamp(dt: datetime) -> str:
    """Format ``dt`` as canonical ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (naive means UTC).

    >>> format_timestamp(datetime(2026, 11, 21, 10, 0, 0, 123456))
    '2026-11-21T10:00:00.123Z'
    """
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    dt = dt.astimezone(UTC)
    # Truncate (not round) to milliseconds so a timestamp never moves into the future.
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        f".{dt.microsecond // 1000:03d}Z"
    )


def now_iso() -> str:
    """Return the current UTC time in canonical message form.

    >>> now_iso().endswith("Z")
    True
    """
    return format_timestamp(datetime.now(UTC))


_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def _parse_offset(text: str | None) -> timezone:
    if text is None or text in ("Z", "z"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or "0")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_timestamp(value: str | datetime) -> datetime:
    """Parse an ISO 8601 string (``Z``, offsets, optional fraction) or datetime to aware UTC.

    Naive inputs are taken as UTC. Anything unparseable raises ``InvalidMessageError``.

    >>> parse_timestamp("2026-11-21T11:00:00+01:00").isoformat()
    '2026-11-21T10:00:00+00:00'
    """
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        try:
            return dt.astimezone(UTC)
        except (ValueError, OverflowError) as exc:  # e.g. year 1 with a positive offset
            raise InvalidMessageError(f"timestamp out of range: {value!r}") from exc
    if not isinstance(value, str):
        raise InvalidMessageError(
            f"timestamp must be a string or datetime, got {type(value).__name__}"
        )
    match = _ISO_RE.fullmatch(value.strip())
    if match is None:
        raise InvalidMessageError(f"invalid ISO 8601 timestamp: {value!r}")
    year, month, day, hour, minute, second, frac, offset = match.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    try:
        dt = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            micro,
            tzinfo=_parse_offset(offset),
        )
        return dt.astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # month 13, offset +25:00, year overflow...
        raise InvalidMessageError(f"invalid ISO 8601 timestamp: {value!r}") from exc


# --------------------------------------------------------------------------- normalisation


def _check_encodable(message: dict[str, Any]) -> None:
    """What ``json.dumps(message, allow_nan=False)`` would refuse, and text that is not valid
    UTF-8 (lone surrogates), refused without building the JSON: a walk costs a fraction of
    encoding a small message and nothing for a megabyte of ASCII (base64 data)."""
    try:
        _check_json(message)
    except RecursionError:
        raise InvalidMessageError("message is nested too deeply (or refers to itself)") from None
    except UnicodeEncodeError as exc:
        raise InvalidMessageError(f"message contains text that is not valid UTF-8: {exc}") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidMessageError(f"message is not JSON-serialisable: {exc}") from exc


def _check_json(value: Any) -> None:
    if isinstance(value, str):
        if not value.isascii():
            value.encode("utf-8")  # raises on a lone surrogate
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) or not (key is None or isinstance(key, (int, float))):
                _check_key(key)
            elif isinstance(key, float) and not math.isfinite(key):
                raise ValueError(f"out of range float key: {key!r}")
            _check_json(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_json(item)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"out of range float value: {value!r}")
    elif value is not None and not isinstance(value, int):
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
    if not key.isascii():
        key.encode("utf-8")


def _copy_json(value: Any) -> Any:
    """A deep copy of the containers of a JSON-like value (dicts and lists; tuples become
    lists, as JSON has them); leaves are shared: strings and numbers are immutable, and
    anything else makes the message fail :func:`_check_encodable` anyway. A cycle ends in
    ``RecursionError`` (reported as "nested too deeply"). Several times faster than
    ``copy.deepcopy`` on messages.

    >>> parts = [{"type": "text", "text": "hi", "n": (1, 2)}]
    >>> copied = _copy_json(parts)
    >>> copied == [{"type": "text", "text": "hi", "n": [1, 2]}], copied[0] is parts[0]
    (True, False)
    """
    if isinstance(value, dict):
        return {key: _copy_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy_json(item) for item in value]
    return value


def _check_role(role: object) -> str:
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidMessageError(
            f"message 'role' must be one of {', '.join(ROLES)}, got {_shown(role)} "
            "(other APIs' messages go through threadline.formats)"
        )
    return role


def _shown(value: object) -> str:
    return repr(value)[:60] if isinstance(value, str) else type(value).__name__


def _check_parts(parts: object) -> list[Any]:
    if not isinstance(parts, list):
        raise InvalidMessageError(f"'parts' must be a list, got {type(parts).__name__}")
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            raise InvalidMessageError(f"part {i} must be a dict, got {type(part).__name__}")
        kind = part.get("type")
        if not isinstance(kind, str):
            raise InvalidMessageError(f"part {i} has no string 'type'")
        # A reasoning part may keep its text elsewhere (AI SDK v4: ``reasoning``).
        has_text = kind == "text" or (kind == "reasoning" and "text" in part)
        if has_text and not isinstance(part.get("text"), str):
            raise InvalidMessageError(f"part {i} ({kind}) must hold a string 'text'")
    return parts


def check_message(message: object) -> Message:
    """Raise ``InvalidMessageError`` unless ``message`` has the shape every stored message has:
    a usable string ``id``, a role of :data:`ROLES`, a ``parts`` list of dicts with a string
    ``type`` (a text part holding a string ``text``, a reasoning part's ``text`` a string when
    present), ``metadata`` a dict when present, ``createdAt`` a string when present. Copies
    nothing; the stores run it on every write, whatever the way in, after
    :func:`normalize_message` made the message.

    >>> check_message({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]})["id"]
    'm1'
    >>> check_message({"id": "m1", "role": "robot", "parts": []})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidMessageError: message 'role' must be one of system, ... got 'robot' ...
    """
    if not isinstance(message, dict):
        raise InvalidMessageError(f"message must be a dict, got {type(message).__name__}")
    validate_message_id(message.get("id"))
    _check_role(message.get("role"))
    _check_parts(message.get("parts"))
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidMessageError(f"'metadata' must be a dict, got {type(metadata).__name__}")
    created = message.get("createdAt")
    if created is not None and not isinstance(created, str):
        raise InvalidMessageError(f"'createdAt' must be a string, got {type(created).__name__}")
    return message


def _normalize_parts(message: dict[str, Any]) -> list[Any]:
    if "parts" in message and message["parts"] is not None:
        parts = _check_parts(message["parts"])
        copied: list[Any] = _copy_json(parts)
        return copied
    if "content" not in message:
        raise InvalidMessageError("message has neither 'parts' nor 'content'")
    content = message["content"]
    if not isinstance(content, str):
        raise InvalidMessageError(f"'content' must be a string, got {type(content).__name__}")
    return [{"type": "text", "text": content}]


def _normalize_id(message: dict[str, Any]) -> str:
    message_id = message.get("id")
    return new_id() if message_id is None else validate_message_id(message_id)


def _normalize_created_at(message: dict[str, Any], now: str | None) -> str:
    value = message.get("createdAt")
    if value is None:
        return now if now is not None else now_iso()
    if not isinstance(value, (str, datetime)):
        raise InvalidMessageError(
            f"'createdAt' must be an ISO 8601 string or datetime, got {value!r}"
        )
    return format_timestamp(parse_timestamp(value))


def normalize_message(message: object, *, now: str | None = None) -> Message:
    """Validate ``message`` and return a new, normalised copy (the input is never mutated).

    Missing ``id`` gets :func:`new_id`; a ``content`` string becomes one text part; ``createdAt``
    defaults to ``now`` (or the current time) and is rewritten in canonical form. Invalid input
    raises ``InvalidMessageError`` naming the problem.

    >>> normalize_message({"id": "m1", "role": "user", "content": "hi"})["parts"]
    [{'type': 'text', 'text': 'hi'}]
    """
    try:
        return _normalize(message, now)
    except RecursionError:
        raise InvalidMessageError("message is nested too deeply") from None


def normalize_messages(messages: object, *, now: str | None = None) -> list[Message]:
    """:func:`normalize_message` over a batch; OpenAI Chat Completions messages in it are
    converted together (``from_openai_chat``), so a ``tool`` result takes the name of its
    call from earlier in the batch.

    >>> [m["parts"][0]["type"] for m in normalize_messages([
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
    ...      "function": {"name": "weather", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "rain"}])]
    ['tool-weather', 'tool-weather']
    """
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, (list, tuple)):
        raise InvalidMessageError("messages must be a list of messages")
    convert = chat_converter()
    return [normalize_message(convert(m), now=now) for m in messages]


def _normalize(message: object, now: str | None) -> Message:
    if not isinstance(message, dict):  # an SDK object (e.g. response.choices[0].message)
        message = plain(message)
    if is_openai_chat_message(message):  # Chat Completions, as is: converted first
        message = from_openai_chat([message])[0]  # type: ignore[list-item]
    if not isinstance(message, dict):
        raise InvalidMessageError(f"message must be a dict, got {type(message).__name__}")
    role = _check_role(message.get("role"))
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidMessageError(f"'metadata' must be a dict, got {type(metadata).__name__}")
    out: dict[str, Any] = {
        "id": _normalize_id(message),
        "role": role,
        "parts": _normalize_parts(message),
        "createdAt": _normalize_created_at(message, now),
    }
    if metadata is not None:
        out["metadata"] = _copy_json(metadata)
    for key, value in message.items():
        if key not in _FIRST_KEYS and key != "content":
            out[key] = _copy_json(value)
    _check_encodable(out)
    return out


_COMPACT: dict[str, Any] = {"separators": (",", ":"), "ensure_ascii": False}
# Built once: json.dumps with any option builds a new encoder per call, which costs about as
# much as encoding a small message. An encoder keeps no state between calls (thread-safe).
_STORED_ENCODER = json.JSONEncoder(allow_nan=False, **_COMPACT)
_LENIENT_ENCODER = json.JSONEncoder(default=str, **_COMPACT)


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept: the one stored form (messages, metadata, state). NaN and
    infinities are refused (``ValueError``): they are not JSON.

    >>> dumps({"a": [1, "é"]})
    '{"a":[1,"é"]}'
    """
    return _STORED_ENCODER.encode(value)


def compact_json(value: Any) -> str:
    """:func:`dumps`, except that non-JSON values become ``str`` instead of raising.

    The encoding used to measure and render structured values (tool inputs and outputs,
    micro-compaction sizes, token estimates).

    >>> compact_json({"a": [1, "é"], "b": {1, 2}})
    '{"a":[1,"é"],"b":"{1, 2}"}'
    """
    return _LENIENT_ENCODER.encode(value)


def encode_message(message: Message) -> str:
    """Encode a message in the stored form (UTF-8 size = stored byte size).

    >>> encode_message({"id": "m1", "role": "user", "parts": []})
    '{"id":"m1","role":"user","parts":[]}'
    """
    return dumps(message)


def decode_message(text: str) -> Message:
    """Decode JSON produced by :func:`encode_message`.

    >>> decode_message('{"id":"m1","role":"user","parts":[]}')["id"]
    'm1'
    """
    value = json.loads(text)
    if not isinstance(value, dict):
        raise InvalidMessageError("stored message JSON is not an object")
    return value


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


# --------------------------------------------------------------------------- inspection


def parts_of(message: object) -> list[dict[str, Any]]:
    """The dict parts of a message (``[]`` when it has no ``parts`` list); never raises.

    >>> parts_of({"parts": [{"type": "text", "text": "a"}, "junk"]})
    [{'type': 'text', 'text': 'a'}]
    """
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return []
    return [p for p in parts if isinstance(p, dict)]


def text_of(message: object) -> str:
    """Join the message's text parts with a single space; ignores everything else, never raises.

    >>> text_of({"parts": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    'a b'
    """
    texts = [
        p["text"]
        for p in parts_of(message)
        if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    # An un-normalised OpenAI-style message: its content string is its text.
    if isinstance(message, dict) and "parts" not in message:
        content = message.get("content")
        return content if isinstance(content, str) else ""
    return " ".join(texts)


def is_tool_part(part: object) -> bool:
    """True for tool parts: ``type`` starts with ``tool-`` or equals ``dynamic-tool``.

    >>> is_tool_part({"type": "tool-search"}), is_tool_part({"type": "text"})
    (True, False)
    """
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def tool_name_of(part: object) -> str | None:
    """Return a tool part's name (``toolName``, else the ``type`` suffix), or None.

    >>> tool_name_of({"type": "tool-search"})
    'search'
    """
    if not is_tool_part(part):
        return None
    assert isinstance(part, dict)
    name = part.get("toolName")
    if isinstance(name, str) and name:
        return name
    kind: str = part["type"]
    return kind[len("tool-") :] if kind.startswith("tool-") else None


def function_calls(message: object) -> list[dict[str, Any]]:
    """The tool calls a message makes, ADK-TS ``event.getFunctionCalls()`` style: one
    ``{"id", "name", "args"}`` per tool part carrying a call (its ``input``; a part holding
    only a result, as in a result message, is not a call). Never raises.

    >>> function_calls(tool_call("weather", {"city": "Oslo"}, tool_call_id="c1"))
    [{'id': 'c1', 'name': 'weather', 'args': {'city': 'Oslo'}}]
    >>> function_calls(user("hi"))
    []
    """
    calls = []
    for part in parts_of(message):
        # A call carries its input, or still awaits it; a result-only part is no call.
        if not is_tool_part(part) or ("input" not in part and has_output(part)):
            continue
        call_id = part.get("toolCallId")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) else None,
                "name": tool_name_of(part),
                "args": part.get("input"),
            }
        )
    return calls


def function_responses(message: object) -> list[dict[str, Any]]:
    """The tool results a message holds, ADK-TS ``event.getFunctionResponses()`` style: one
    ``{"id", "name", "response"}`` per tool part with an output (a failed call's response is
    ``{"error": errorText}``). Never raises.

    >>> function_responses(tool_call("weather", {"city": "Oslo"}, "rain", tool_call_id="c1"))
    [{'id': 'c1', 'name': 'weather', 'response': 'rain'}]
    >>> function_responses(tool_call("weather", {"city": "Oslo"}))  # still waiting
    []
    """
    responses = []
    for part in parts_of(message):
        if not is_tool_part(part) or not has_output(part):
            continue
        response = part["output"] if "output" in part else {"error": part.get("errorText")}
        call_id = part.get("toolCallId")
        responses.append(
            {
                "id": call_id if isinstance(call_id, str) else None,
                "name": tool_name_of(part),
                "response": response,
            }
        )
    return responses


UNNAMED_TOOL = "unknown"
"""The ``toolName`` a converter gives a ``dynamic-tool`` result whose call it did not see."""

TOOL_NAME_WINDOW = 200
"""How many messages of the parent's path an append searches for a tool result's call."""


def is_unnamed_result(part: object) -> bool:
    """True for a tool result that does not know its tool: a result-only ``dynamic-tool``
    part with a string ``toolCallId`` and no ``toolName`` (or :data:`UNNAMED_TOOL`).

    >>> is_unnamed_result({"type": "dynamic-tool", "toolCallId": "c1", "toolName": "unknown",
    ...                    "state": "output-available", "output": "rain"})
    True
    """
    if not isinstance(part, dict) or part.get("type") != "dynamic-tool":
        return False
    name = part.get("toolName")
    unnamed = not isinstance(name, str) or name in ("", UNNAMED_TOOL)
    return unnamed and isinstance(part.get("toolCallId"), str) and is_result_only(part)


def tool_call_names(messages: Iterable[object]) -> dict[str, tuple[str, str]]:
    """Call id → ``(part type, tool name)`` of every named tool part in ``messages``.

    >>> tool_call_names([tool_call("weather", {"city": "Oslo"}, tool_call_id="c1")])
    {'c1': ('tool-weather', 'weather')}
    """
    names: dict[str, tuple[str, str]] = {}
    for message in messages:
        for part in parts_of(message):
            call_id, name = part.get("toolCallId"), tool_name_of(part)
            if isinstance(call_id, str) and name and not is_unnamed_result(part):
                names[call_id] = (part["type"], name)
    return names


def name_tool_results(messages: Sequence[Message], earlier: Iterable[object] = ()) -> list[Message]:
    """``messages`` with each unnamed tool result (:func:`is_unnamed_result`) named after its
    call, looked for in ``earlier`` (the path before them, oldest first) and in the messages
    before it; unchanged messages are returned as they are (not copied). A call's own
    message is never changed: the result takes the call's part type and tool name.

    >>> call = tool_call("weather", {"city": "Oslo"}, tool_call_id="c1")
    >>> result = {"role": "tool", "parts": [{"type": "dynamic-tool", "toolCallId": "c1",
    ...     "toolName": "unknown", "state": "output-available", "output": "rain"}]}
    >>> name_tool_results([result], [call])[0]["parts"][0]["type"]
    'tool-weather'
    """
    names = tool_call_names(earlier)
    out: list[Message] = []
    for message in messages:
        parts = message.get("parts")
        if isinstance(parts, list) and any(map(is_unnamed_result, parts)):
            named = [_named(part, names) for part in parts]
            if any(a is not b for a, b in zip(named, parts, strict=True)):
                message = {**message, "parts": named}
        names.update(tool_call_names([message]))
        out.append(message)
    return out


def _named(part: Any, names: dict[str, tuple[str, str]]) -> Any:
    found = names.get(part["toolCallId"]) if is_unnamed_result(part) else None
    if found is None:
        return part
    kind, name = found
    named = {key: kind if key == "type" else value for key, value in part.items()}
    named["toolName"] = name
    return named


def answers_of(messages: Iterable[object]) -> dict[str, dict[str, Any]]:
    """Call id → the result part that answers it from a later message (a result-only tool
    part after the message holding the call): what presents a call and its result as one
    step. A call that holds its own output needs no answer and is left out.

    >>> call = tool_call("weather", {"city": "Oslo"}, tool_call_id="c1")
    >>> result = {"role": "tool", "parts": [{"type": "tool-weather", "toolCallId": "c1",
    ...     "state": "output-available", "output": "rain"}]}
    >>> answers_of([call, result])["c1"]["output"]
    'rain'
    """
    asked: set[str] = set()
    answers: dict[str, dict[str, Any]] = {}
    for message in messages:
        parts = parts_of(message)
        for part in parts:
            call_id = part.get("toolCallId")
            if is_tool_part(part) and isinstance(call_id, str):
                if not is_result_only(part):
                    asked.add(call_id)
                elif call_id in asked and call_id not in answers:
                    answers[call_id] = part
    return answers


def with_answer(part: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
    """A call ``part`` still waiting, shown with its ``answer``'s state and output (or error);
    ``part`` itself when it holds its own output or there is no answer.

    >>> call = tool_call("weather", {"city": "Oslo"})["parts"][0]
    >>> answered = with_answer(call, {"state": "output-error", "errorText": "offline"})
    >>> answered["state"], answered["errorText"]
    ('output-error', 'offline')
    """
    if answer is None or has_output(part):
        return part
    out = {**part, "state": answer.get("state", "output-available")}
    for key in ("output", "errorText"):
        if key in answer:
            out[key] = answer[key]
    return out


def is_final_response(message: object) -> bool:
    """ADK-TS ``event.isFinalResponse()``: an assistant message with no tool call awaiting
    its output and not marked ``metadata.partial`` (a streaming chunk). Never raises.

    >>> is_final_response(assistant("Rain in Oslo."))
    True
    >>> is_final_response(tool_call("weather", {"city": "Oslo"}))  # awaits its output
    False
    >>> is_final_response(tool_call("weather", {"city": "Oslo"}, output="rain"))
    True
    >>> is_final_response({**assistant("Ra"), "metadata": {"partial": True}})
    False
    """
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and metadata.get("partial"):
        return False
    return not any(is_tool_part(p) and not has_output(p) for p in parts_of(message))


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
