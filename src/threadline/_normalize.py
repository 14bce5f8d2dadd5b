"""Message validation and normalisation: the shape every stored message has, and the one
way a message of any accepted form (parts, a ``content`` string, OpenAI Chat, an SDK object)
becomes it. Pure: the input is never mutated.

Re-exported by :mod:`threadline.messages`, the public home of these names.

>>> normalize_message({"id": "m1", "role": "user", "content": "hi"})["parts"]
[{'type': 'text', 'text': 'hi'}]
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from threadline._message_ids import new_id, validate_message_id
from threadline._roles import ROLES
from threadline._timestamps import format_timestamp, now_iso, parse_timestamp
from threadline.errors import InvalidMessageError
from threadline.formats._common import plain
from threadline.formats._openai_chat import (
    chat_converter,
    from_openai_chat,
    is_openai_chat_message,
)
from threadline.types import Message

_FIRST_KEYS = ("id", "role", "parts", "createdAt", "metadata")


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
