"""Helpers every converter shares: provider metadata on parts and messages, data URLs.

>>> with_meta({"type": "text", "text": "hi"}, "openai", detail="low")["providerMetadata"]
{'openai': {'detail': 'low'}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from threadline.errors import InvalidMessageError, ThreadlineError

_DATA_URL = re.compile(r"^data:([^;,]*)(;base64)?,", re.DOTALL)


def plain(value: Any) -> Any:
    """``value`` with SDK objects (pydantic models of the OpenAI, Anthropic and Google SDKs,
    anywhere inside) turned into the plain dicts of their JSON form; plain values unchanged.

    >>> class Block:
    ...     def model_dump(self, **options): return {"type": "text", "text": "hi"}
    >>> plain({"role": "assistant", "content": [Block()]})
    {'role': 'assistant', 'content': [{'type': 'text', 'text': 'hi'}]}
    """
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, dict):
        items = {key: plain(item) for key, item in value.items()}
        return items if any(items[key] is not value[key] for key in value) else value
    if isinstance(value, list):
        listed = [plain(item) for item in value]
        return listed if any(a is not b for a, b in zip(listed, value, strict=True)) else value
    return value


@contextmanager
def typed_errors(converter: str) -> Iterator[None]:
    """Run a converter's body: input it cannot read (wrong types at any depth, nesting
    deeper than Python's stack, SDK objects that fail to dump) ends in ``InvalidMessageError``
    naming the converter, never in a raw ``TypeError`` (amendment 15).

    >>> with typed_errors("to_x"):
    ...     {}["parts"]
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidMessageError: to_x cannot read this input: 'parts'
    """
    try:
        yield
    except ThreadlineError:
        raise
    except RecursionError:
        raise InvalidMessageError(f"{converter}: the input is nested too deeply") from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        raise InvalidMessageError(f"{converter} cannot read this input: {exc}") from None


def items_of(value: Any, converter: str) -> list[Any]:
    """The messages (or items) a converter was given, as a list: ``InvalidMessageError`` for
    ``None``, a string, a single dict or anything else that is not a list of them.

    >>> items_of(({"role": "user"},), "from_x")
    [{'role': 'user'}]
    >>> items_of(None, "from_x")
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidMessageError: from_x takes a list of messages, got NoneType
    """
    if value is None or isinstance(value, (str, bytes, bytearray, Mapping)):
        raise InvalidMessageError(
            f"{converter} takes a list of messages, got {type(value).__name__}"
        )
    try:
        return list(value)
    except TypeError:
        raise InvalidMessageError(
            f"{converter} takes a list of messages, got {type(value).__name__}"
        ) from None


def message_of(value: Any, converter: str) -> Mapping[str, Any]:
    """A threadline message given to a ``to_*`` converter: a dict whose ``parts`` (when
    present) is a list; ``InvalidMessageError`` otherwise.

    >>> message_of({"role": "user", "parts": []}, "to_x")["role"]
    'user'
    """
    if not isinstance(value, Mapping):
        raise InvalidMessageError(f"{converter}: a message is a dict, got {type(value).__name__}")
    parts = value.get("parts")
    if parts is not None and not isinstance(parts, list):
        raise InvalidMessageError(f"{converter}: 'parts' is a list, got {type(parts).__name__}")
    return value


def parts_in(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The dict parts of a message (others have no meaning to a converter and are skipped).

    >>> parts_in({"parts": [{"type": "text", "text": "a"}, 5]})
    [{'type': 'text', 'text': 'a'}]
    """
    parts = message.get("parts")
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def text_in(part: Mapping[str, Any]) -> str:
    """A text part's text as a string: a stored text that is not one (``null``, a number
    from an older store) comes out as its JSON (``null`` as ``""``); a reasoning part
    without ``text`` (AI SDK v4) gives its ``reasoning``.

    >>> text_in({"text": "hi"}), text_in({"text": None}), text_in({"text": 5})
    ('hi', '', '5')
    >>> text_in({"type": "reasoning", "reasoning": "hmm"})
    'hmm'
    """
    if "text" not in part and isinstance(part.get("reasoning"), str):
        return str(part["reasoning"])
    text = part.get("text")
    if isinstance(text, str):
        return text
    return "" if text is None else json.dumps(text, ensure_ascii=False, default=str)


def mapping(value: Any) -> dict[str, Any]:
    """``value`` as a dict when it is a mapping, else ``{}``: metadata read back from a
    stored message is whatever was stored, so shapes are checked, not assumed.

    >>> mapping({"a": 1}), mapping(5)
    ({'a': 1}, {})
    """
    return dict(value) if isinstance(value, Mapping) else {}


def has_output(part: Mapping[str, Any]) -> bool:
    """A tool part holding its result: its ``state`` starts with ``output`` (without a
    state: it has an ``output`` or an ``errorText``).

    >>> has_output({"state": "output-error"}), has_output({"state": "input-available"})
    (True, False)
    """
    state = part.get("state")
    if isinstance(state, str):
        return state.startswith("output")
    return "output" in part or "errorText" in part


def is_result_only(part: Mapping[str, Any]) -> bool:
    """A tool part that holds a result and no call input: what a result message carries.

    >>> is_result_only({"type": "tool-f", "state": "output-available", "output": 1})
    True
    """
    return "input" not in part and has_output(part)


def is_answer(part: Mapping[str, Any], asked: set[str]) -> bool:
    """A result-only tool part whose call a ``to_*`` converter already wrote (call ids in
    ``asked``): written as the result alone, so call and result make one step.

    >>> is_answer({"type": "tool-f", "toolCallId": "c1", "state": "output-available"}, {"c1"})
    True
    """
    call_id = part.get("toolCallId")
    return (
        is_tool_part(part)
        and is_result_only(part)
        and isinstance(call_id, str)
        and call_id in asked
    )


def absent(source: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """Metadata naming those of ``keys`` missing from ``source`` (``{}`` when all are
    there), so the ``to_*`` converter leaves them out again instead of writing ``None``.

    >>> absent({"name": "f"}, "name", "arguments")
    {'absent_keys': ['arguments']}
    """
    missing = [key for key in keys if key not in source]
    return {"absent_keys": missing} if missing else {}


def drop_absent(target: dict[str, Any], meta: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``target`` without those of ``keys`` that :func:`absent` recorded in ``meta``.

    >>> drop_absent({"name": "f", "arguments": None}, {"absent_keys": ["arguments"]}, "arguments")
    {'name': 'f'}
    """
    missing = meta.get("absent_keys")
    if isinstance(missing, list):
        for key in keys:
            if key in missing:
                target.pop(key, None)
    return target


def note_call(asked: set[str], call_id: Any) -> None:
    """Remember that a ``to_*`` converter wrote the call ``call_id`` (string ids only).

    >>> asked: set[str] = set(); note_call(asked, "c1"); note_call(asked, ["x"]); asked
    {'c1'}
    """
    if isinstance(call_id, str):
        asked.add(call_id)


def result_value(part: Mapping[str, Any]) -> Any:
    """What a tool result says: its ``output``, else (a failed call) its ``errorText``.

    >>> result_value({"state": "output-error", "errorText": "offline"})
    'offline'
    """
    return part["output"] if "output" in part else part.get("errorText")


def with_meta(target: dict[str, Any], provider: str, /, **fields: Any) -> dict[str, Any]:
    """``target`` with ``fields`` (when any) under ``providerMetadata[provider]``."""
    if fields:
        target["providerMetadata"] = {provider: fields}
    return target


def meta_of(item: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """A copy of ``item["providerMetadata"][provider]`` (``{}`` when there is none).

    >>> meta_of({"providerMetadata": {"openai": {"a": 1}}}, "openai")
    {'a': 1}
    """
    metadata = item.get("providerMetadata")
    if metadata is None:  # the common case, answered before any isinstance on an ABC
        return {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get(provider), Mapping):
        return dict(metadata[provider])
    return {}


def rest(item: Mapping[str, Any], *known: str) -> dict[str, Any]:
    """The keys of ``item`` other than ``known``.

    >>> rest({"type": "text", "text": "a", "x": 1}, "type", "text")
    {'x': 1}
    """
    return {k: v for k, v in item.items() if k not in known}


def media_type(url: str, default: str) -> str:
    """The media type of a ``data:`` URL, else ``default``.

    >>> media_type("data:image/png;base64,AAAA", "image/*"), media_type("https://x", "image/*")
    ('image/png', 'image/*')
    """
    match = _DATA_URL.match(url)
    return (match.group(1) or default) if match else default


def data_url(media: str, data: str) -> str:
    """A base64 ``data:`` URL.

    >>> data_url("image/png", "AAAA")
    'data:image/png;base64,AAAA'
    """
    return f"data:{media};base64,{data}"


def data_of(url: object) -> str:
    """The payload of a ``data:`` URL (what follows the first comma), else ``""``.

    >>> data_of("data:image/png;base64,AAAA")
    'AAAA'
    """
    return url.split(",", 1)[1] if isinstance(url, str) and "," in url else ""


def is_tool_part(part: Mapping[str, Any]) -> bool:
    """A tool part: ``type`` ``tool-<name>`` or ``dynamic-tool``."""
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def tool_call_part(name: str, call_id: Any, tool_input: Any) -> dict[str, Any]:
    """The AI SDK part of a tool call waiting for its result.

    >>> tool_call_part("weather", "c1", {"city": "Oslo"})["state"]
    'input-available'
    """
    return {
        "type": f"tool-{name}",
        "toolCallId": call_id,
        "toolName": name,
        "state": "input-available",
        "input": tool_input,
    }


def tool_result_part(
    call_id: Any, names: Mapping[str, str], output: Any, *, error: bool = False
) -> dict[str, Any]:
    """The AI SDK part of a tool result, named after its call (``names``: call id → tool name)
    when the call is known, else a ``dynamic-tool`` part.

    >>> tool_result_part("c1", {"c1": "weather"}, "rain")["type"]
    'tool-weather'
    >>> tool_result_part("c9", {}, "rain")["type"]
    'dynamic-tool'
    """
    name = names.get(call_id) if isinstance(call_id, str) else None
    return {
        "type": f"tool-{name}" if name else "dynamic-tool",
        "toolCallId": call_id,
        "toolName": name or "unknown",
        "state": "output-error" if error else "output-available",
        "output": output,
    }


def parse_arguments(raw: Any) -> tuple[Any, bool]:
    """``(parsed arguments, keep_raw)``: a JSON arguments string parsed; ``keep_raw`` when
    re-encoding it compactly would not give back the exact string (spaces, broken JSON).

    >>> parse_arguments('{"a":1}'), parse_arguments('{"a": 1}'), parse_arguments('{"a')
    (({'a': 1}, False), ({'a': 1}, True), ('{"a', True))
    """
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):
        return raw, True
    return parsed, compact_arguments(parsed) != raw


def compact_arguments(value: Any) -> str:
    """Tool arguments as the compact JSON string the APIs carry.

    >>> compact_arguments({"city": "Oslo"})
    '{"city":"Oslo"}'
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
