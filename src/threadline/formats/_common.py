"""Helpers every converter shares: provider metadata on parts and messages, data URLs.

>>> with_meta({"type": "text", "text": "hi"}, "openai", detail="low")["providerMetadata"]
{'openai': {'detail': 'low'}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

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
