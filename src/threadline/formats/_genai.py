"""Google GenAI / ADK ``Content`` ⇄ threadline messages (AI SDK ``UIMessage`` shape).

Keys may be camelCase (``inlineData``, ``functionCall``) or snake_case (``inline_data``,
``function_call``); the spelling used is kept. ``role`` ``model`` becomes ``assistant``. Parts:
``text`` (``thought: true`` → ``reasoning``), ``inlineData`` / ``fileData`` → ``file`` parts,
``functionCall`` → a tool part with its ``args``, ``functionResponse`` → a tool part with its
``response`` as output. SDK objects (pydantic ``Content``) are accepted when the SDK is
installed. Whatever has no part of its own stays under ``providerMetadata["google"]``, so
``to_genai(from_genai(contents)) == contents``. Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from threadline.errors import InvalidMessageError
from threadline.formats._common import data_of, is_tool_part, meta_of, plain, rest, with_meta

__all__ = ["from_genai", "to_genai"]

_GOOGLE = "google"
_SPELLINGS = {
    "inline": ("inlineData", "inline_data"),
    "file": ("fileData", "file_data"),
    "call": ("functionCall", "function_call"),
    "response": ("functionResponse", "function_response"),
}


def _meta(target: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    return with_meta(target, _GOOGLE, **fields)


def _spelled(mapping: Mapping[str, Any], *names: str) -> str | None:
    return next((name for name in names if name in mapping), None)


def _part_in(part: Any) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        return {"type": "data-google", "data": part}
    if isinstance(part.get("text"), str):
        kind = "reasoning" if part.get("thought") is True else "text"
        return _meta({"type": kind, "text": part["text"]}, **rest(part, "text"))
    key = _spelled(part, *_SPELLINGS["inline"]) or _spelled(part, *_SPELLINGS["file"])
    if key is not None and isinstance(part[key], Mapping):
        inner = part[key]
        mime_key = _spelled(inner, "mimeType", "mime_type")
        payload_key = _spelled(inner, "data", "fileUri", "file_uri")
        mime = inner.get(mime_key) if mime_key else None
        payload = inner.get(payload_key) if payload_key else None
        if isinstance(payload, str) and (mime is None or isinstance(mime, str)):
            media = mime or "application/octet-stream"
            url = f"data:{media};base64,{payload}" if payload_key == "data" else payload
            file = {"type": "file", "mediaType": media, "url": url}
            inner_rest = rest(inner, *(k for k in (mime_key, payload_key) if k))
            shape: dict[str, Any] = {
                "key": key,
                "mime": mime_key,
                "payload": payload_key,
                "inner": inner_rest,
            }
            return _meta(file, shape=shape, part=rest(part, key))
    key = _spelled(part, *_SPELLINGS["call"]) or _spelled(part, *_SPELLINGS["response"])
    if key is not None and isinstance(part[key], Mapping):
        inner = part[key]
        name = inner.get("name")
        if isinstance(name, str) and name:
            is_call = key in _SPELLINGS["call"]
            value_key = "args" if is_call else "response"
            tool: dict[str, Any] = {
                "type": f"tool-{name}",
                "toolCallId": inner.get("id"),
                "toolName": name,
                "state": "input-available" if is_call else "output-available",
            }
            tool["input" if is_call else "output"] = inner.get(value_key)
            present = [k for k in ("id", value_key) if k in inner]
            shape = {"key": key, "present": present, "inner": rest(inner, "name", "id", value_key)}
            return _meta(tool, shape=shape, part=rest(part, key))
    return {"type": "data-google", "data": dict(part)}


def _part_out(part: Mapping[str, Any]) -> list[Any]:
    meta = meta_of(part, _GOOGLE)
    kind = part.get("type")
    if kind == "data-google":
        return [part.get("data")]
    if kind in ("text", "reasoning"):
        out = {"text": part.get("text", ""), **meta}
        if kind == "reasoning" and "thought" not in meta:
            out["thought"] = True
        return [out]
    shape = meta.get("shape")
    if kind == "file":
        url, media = part.get("url"), part.get("mediaType")
        if shape is None:
            if isinstance(url, str) and url.startswith("data:"):
                return [{"inlineData": {"mimeType": media, "data": data_of(url)}}]
            return [{"fileData": {"mimeType": media, "fileUri": url}}]
        inner = dict(shape.get("inner", {}))
        if shape.get("mime"):
            inner[shape["mime"]] = media
        if shape.get("payload"):
            inner[shape["payload"]] = data_of(url) if shape["payload"] == "data" else url
        return [{shape["key"]: inner, **meta.get("part", {})}]
    if is_tool_part(part):
        name = part.get("toolName") or str(kind).removeprefix("tool-")
        if shape is None:  # a native part: a call, and its response when it has one
            call = {"name": name, "args": part.get("input")}
            if part.get("toolCallId") is not None:
                call["id"] = part["toolCallId"]
            out_parts: list[Any] = [{"functionCall": call}]
            if part.get("state") == "output-available":
                response = {"name": name, "response": part.get("output")}
                out_parts.append({"functionResponse": {**response, **rest(call, "name", "args")}})
            return out_parts
        is_call = shape["key"] in _SPELLINGS["call"]
        inner = {"name": name, **shape.get("inner", {})}
        for key in shape.get("present", []):
            if key == "id":
                inner["id"] = part.get("toolCallId")
            else:
                inner[key] = part.get("input" if is_call else "output")
        return [{shape["key"]: inner, **meta.get("part", {})}]
    return []


def from_genai(contents: Iterable[Any]) -> list[dict[str, Any]]:
    """GenAI / ADK ``Content`` values (dicts, or SDK objects) → threadline messages.

    >>> from_genai([{"role": "model", "parts": [{"functionCall": {"name": "weather",
    ...     "args": {"city": "Oslo"}}}]}])[0]["parts"][0]["type"]
    'tool-weather'
    """
    out: list[dict[str, Any]] = []
    for content in contents:
        content = plain(content)  # google.genai.types.Content, when installed
        if not isinstance(content, Mapping) or not isinstance(content.get("parts", []), list):
            raise InvalidMessageError("a Content is a dict with a 'parts' list")
        role = content.get("role")
        meta = rest(content, "role", "parts")
        if role == "model":
            meta["role"] = "model"
        elif role is None:
            meta["role"] = None
        elif not isinstance(role, str):
            raise InvalidMessageError("a Content's 'role' is a string")
        mapped = "assistant" if role in ("model", None) else role
        if "parts" not in content:
            meta["parts"] = "absent"
        parts = [_part_in(p) for p in content.get("parts", [])]
        out.append(_meta({"role": mapped, "parts": parts}, **meta))
    return out


def to_genai(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Threadline messages → GenAI ``Content`` dicts (inverse of :func:`from_genai`; native
    messages come out camelCase, ``assistant`` as ``model``).

    >>> to_genai([{"role": "assistant", "parts": [{"type": "text", "text": "Hi"}]}])
    [{'role': 'model', 'parts': [{'text': 'Hi'}]}]
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        meta = meta_of(message, _GOOGLE)
        role = meta.pop(
            "role", "model" if message.get("role") == "assistant" else message.get("role")
        )
        parts: list[Any] = []
        for part in message.get("parts", []):
            if isinstance(part, Mapping):
                parts.extend(_part_out(part))
        content: dict[str, Any] = {} if role is None else {"role": role}
        if meta.pop("parts", None) != "absent":
            content["parts"] = parts
        out.append({**content, **meta})
    return out
