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

from threadline._roles import fold_message_role
from threadline.errors import InvalidMessageError
from threadline.formats._common import (
    data_of,
    has_output,
    is_answer,
    is_result_only,
    is_tool_part,
    items_of,
    mapping,
    message_of,
    meta_of,
    note_call,
    parts_in,
    plain,
    rest,
    text_in,
    typed_errors,
    with_meta,
)

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


def _shape(meta: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The original spelling kept by :func:`_part_in`, when it is one (stored metadata is
    whatever was stored: anything else is a native part)."""
    shape = meta.get("shape")
    if isinstance(shape, Mapping) and isinstance(shape.get("key"), str):
        return shape
    return None


def _part_out(part: Mapping[str, Any], answer_only: bool) -> list[Any]:
    meta = meta_of(part, _GOOGLE)
    kind = part.get("type")
    if kind == "data-google":
        return [part.get("data")]
    if kind in ("text", "reasoning"):
        out = {"text": text_in(part), **meta}
        if kind == "reasoning" and "thought" not in meta:
            out["thought"] = True
        return [out]
    shape = _shape(meta)
    if kind == "file":
        url, media = part.get("url"), part.get("mediaType")
        if shape is None:
            if isinstance(url, str) and url.startswith("data:"):
                return [{"inlineData": {"mimeType": media, "data": data_of(url)}}]
            return [{"fileData": {"mimeType": media, "fileUri": url}}]
        inner = mapping(shape.get("inner"))
        if isinstance(shape.get("mime"), str):
            inner[shape["mime"]] = media
        if isinstance(shape.get("payload"), str):
            inner[shape["payload"]] = data_of(url) if shape["payload"] == "data" else url
        return [{shape["key"]: inner, **mapping(meta.get("part"))}]
    if is_tool_part(part):
        name = part.get("toolName") or str(kind).removeprefix("tool-")
        if shape is None:  # a native part: a call, and its response when it has one
            call = {"name": name, "args": part.get("input")}
            if part.get("toolCallId") is not None:
                call["id"] = part["toolCallId"]
            # A result whose call was written before is its response alone: one step.
            out_parts: list[Any] = [] if answer_only else [{"functionCall": call}]
            if has_output(part):
                value = part["output"] if "output" in part else {"error": part.get("errorText")}
                response = {"name": name, "response": value}
                out_parts.append({"functionResponse": {**response, **rest(call, "name", "args")}})
            return out_parts
        is_call = shape["key"] in _SPELLINGS["call"]
        inner = {"name": name, **mapping(shape.get("inner"))}
        present = shape.get("present")
        for key in present if isinstance(present, list) else ():
            if key == "id":
                inner["id"] = part.get("toolCallId")
            elif isinstance(key, str):
                inner[key] = part.get("input" if is_call else "output")
        return [{shape["key"]: inner, **mapping(meta.get("part"))}]
    return []


def from_genai(contents: Iterable[Any]) -> list[dict[str, Any]]:
    """GenAI / ADK ``Content`` values (dicts, or SDK objects) → threadline messages.

    >>> from_genai([{"role": "model", "parts": [{"functionCall": {"name": "weather",
    ...     "args": {"city": "Oslo"}}}]}])[0]["parts"][0]["type"]
    'tool-weather'
    """
    with typed_errors("from_genai"):
        return [_content_in(content) for content in items_of(contents, "from_genai")]


def _content_in(content: Any) -> dict[str, Any]:
    content = plain(content)  # google.genai.types.Content, when installed
    if not isinstance(content, Mapping) or not isinstance(content.get("parts", []), list):
        raise InvalidMessageError("a Content is a dict with a 'parts' list")
    role = content.get("role")
    meta = rest(content, "role", "parts")
    if role is None or role == "tool":  # ADK's model turns may have no role; "tool" is
        meta["role"] = role  # written back as "user" unless kept
    elif not isinstance(role, str):
        raise InvalidMessageError("a Content's 'role' is a string")
    if "parts" not in content:
        meta["parts"] = "absent"
    parts = [_part_in(p) for p in content.get("parts", [])]
    message = _meta({"role": "assistant" if role is None else role, "parts": parts}, **meta)
    return fold_message_role(message, _GOOGLE)  # model → assistant (clarification 25)


def to_genai(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Threadline messages → GenAI ``Content`` dicts (inverse of :func:`from_genai`; native
    messages come out camelCase, ``assistant`` as ``model``).

    >>> to_genai([{"role": "assistant", "parts": [{"type": "text", "text": "Hi"}]}])
    [{'role': 'model', 'parts': [{'text': 'Hi'}]}]
    """
    with typed_errors("to_genai"):
        out: list[dict[str, Any]] = []
        asked: set[str] = set()  # ids of the calls written so far
        for message in items_of(messages, "to_genai"):
            out.append(_content_out(message_of(message, "to_genai"), asked))
        return out


def _content_out(message: Mapping[str, Any], asked: set[str]) -> dict[str, Any]:
    meta = meta_of(message, _GOOGLE)
    stored = message.get("role")
    # GenAI has user and model turns: tool results go in a user turn.
    native = (
        {"assistant": "model", "tool": "user"}.get(stored, stored)
        if isinstance(stored, str)
        else stored
    )
    role = meta.pop("role", native)
    parts: list[Any] = []
    for part in parts_in(message):
        answer_only = is_answer(part, asked) or (stored == "tool" and is_result_only(part))
        parts.extend(_part_out(part, answer_only))
        if is_tool_part(part) and not answer_only:
            note_call(asked, part.get("toolCallId"))
    content: dict[str, Any] = {} if role is None else {"role": role}
    if meta.pop("parts", None) != "absent":
        content["parts"] = parts
    return {**content, **meta}
