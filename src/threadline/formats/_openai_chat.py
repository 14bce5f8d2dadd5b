"""OpenAI Chat Completions messages ⇄ threadline messages (AI SDK ``UIMessage`` shape).

Every construct has a part: text, images (URL or inline), input audio, files, refusals,
assistant ``tool_calls`` and ``tool`` results (AI SDK tool parts). What a part cannot hold
(``detail``, ``name``, a non-compact ``arguments`` string, fields from a future API version...)
is kept verbatim under ``providerMetadata["openai"]`` of the part or the message, so
``to_openai_chat(from_openai_chat(msgs)) == msgs``. Converters never invent ``id`` or
``createdAt``. Pure functions: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from threadline._roles import fold_message_role
from threadline.errors import InvalidMessageError
from threadline.formats._common import (
    absent,
    compact_arguments,
    data_of,
    drop_absent,
    has_output,
    is_answer,
    is_tool_part,
    items_of,
    mapping,
    media_type,
    message_of,
    meta_of,
    note_call,
    parse_arguments,
    parts_in,
    plain,
    rest,
    result_value,
    text_in,
    tool_call_part,
    tool_result_part,
    typed_errors,
    with_meta,
)

__all__ = ["from_openai_chat", "is_openai_chat_message", "to_openai_chat"]

_OPENAI = "openai"
# Message keys with a home of their own; every other key goes to providerMetadata verbatim.
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id")
_THREADLINE_KEYS = ("id", "role", "parts", "createdAt", "metadata", "providerMetadata")
_CHAT_ONLY_KEYS = ("tool_calls", "tool_call_id", "refusal", "name", "audio", "function_call")


def is_openai_chat_message(message: object) -> bool:
    """True for a message in Chat Completions shape that is not already a threadline message:
    it has no ``parts`` and has what only Chat messages have (``content`` that is ``None`` or
    a list, ``tool_calls``, ``tool_call_id``, a ``tool``/``developer`` role...).

    >>> is_openai_chat_message({"role": "assistant", "content": None, "tool_calls": []})
    True
    >>> is_openai_chat_message({"role": "user", "content": "hi"})
    False
    """
    if not isinstance(message, Mapping) or "parts" in message:
        return False
    content = message.get("content", "")
    return (
        not isinstance(content, str)
        or message.get("role") in ("tool", "developer")
        or any(key in message for key in _CHAT_ONLY_KEYS)
    )


# --------------------------------------------------------------------------- content parts in


def _part_from_chat(part: Any) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        return {"type": "data-openai", "data": part}
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return with_meta(
            {"type": "text", "text": part["text"]}, _OPENAI, **rest(part, "type", "text")
        )
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        others = rest(part, "type", "refusal")
        text = {"type": "text", "text": part["refusal"]}
        return with_meta(text, _OPENAI, type="refusal", **others)
    if kind == "image_url" and isinstance(part.get("image_url"), Mapping):
        image = part["image_url"]
        url = image.get("url")
        if isinstance(url, str):
            extra = rest(part, "type", "image_url")
            file = {"type": "file", "mediaType": media_type(url, "image/*"), "url": url}
            return with_meta(file, _OPENAI, type="image_url", image_url=rest(image, "url"), **extra)
    if kind == "input_audio" and isinstance(part.get("input_audio"), Mapping):
        audio = part["input_audio"]
        data, fmt = audio.get("data"), audio.get("format")
        if isinstance(data, str) and isinstance(fmt, str) and re.fullmatch(r"[\w.+-]+", fmt):
            url = f"data:audio/{fmt};base64,{data}"
            extra = rest(part, "type", "input_audio")
            file = {"type": "file", "mediaType": f"audio/{fmt}", "url": url}
            others = rest(audio, "data", "format")
            return with_meta(file, _OPENAI, type="input_audio", input_audio=others, **extra)
    if kind == "file" and isinstance(part.get("file"), Mapping):
        inner = part["file"]
        data = inner.get("file_data")
        extra = rest(part, "type", "file")
        out: dict[str, Any] = {"type": "file"}
        if isinstance(data, str):
            out["mediaType"] = media_type(data, "application/octet-stream")
            out["url"] = data
            inner = rest(inner, "file_data")
        else:
            out["mediaType"] = "application/octet-stream"
        if isinstance(inner.get("filename"), str):
            out["filename"] = inner["filename"]
            inner = rest(inner, "filename")
        return with_meta(out, _OPENAI, type="file", file=inner, **extra)
    return {"type": "data-openai", "data": dict(part)}  # a part type threadline does not know


# --------------------------------------------------------------------------- content parts out


def _part_to_chat(part: Mapping[str, Any]) -> Any:
    meta = meta_of(part, _OPENAI)
    kind = part.get("type")
    if kind == "data-openai":
        return part.get("data")
    if kind == "text":
        if meta.get("type") == "refusal":
            return {"type": "refusal", "refusal": text_in(part), **rest(meta, "type")}
        return {"type": "text", "text": text_in(part), **meta}
    if kind == "file":
        return _file_to_chat(part, meta)
    if kind == "reasoning":
        return None  # Chat Completions has no place for reasoning text
    return None


def _file_to_chat(part: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    url = part.get("url")
    media = str(part.get("mediaType", ""))
    origin = meta.pop("type", None)
    if origin == "input_audio" or (origin is None and media.startswith("audio/")):
        data = data_of(url)
        audio = {
            "data": data,
            "format": media.removeprefix("audio/"),
            **mapping(meta.pop("input_audio", None)),
        }
        return {"type": "input_audio", "input_audio": audio, **meta}
    if origin == "image_url" or (origin is None and media.startswith("image/")):
        image = {"url": url, **mapping(meta.pop("image_url", None))}
        return {"type": "image_url", "image_url": image, **meta}
    inner = mapping(meta.pop("file", None))
    if isinstance(url, str):
        inner["file_data"] = url
    if "filename" in part:
        inner["filename"] = part["filename"]
    return {"type": "file", "file": inner, **meta}


# --------------------------------------------------------------------------- tool calls


def _call_part(call: Any) -> dict[str, Any]:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        return {
            "type": "data-openai",
            "data": call,
            "providerMetadata": {_OPENAI: {"tool_call": True}},
        }
    function = call["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return {
            "type": "data-openai",
            "data": dict(call),
            "providerMetadata": {_OPENAI: {"tool_call": True}},
        }
    missing = [
        *absent(call, "id").get("absent_keys", []),
        *absent(function, "arguments").get("absent_keys", []),
    ]
    meta: dict[str, Any] = {"absent_keys": missing} if missing else {}
    raw = function.get("arguments")
    parsed, keep_raw = parse_arguments(raw)
    if keep_raw and "arguments" in function:
        meta["arguments"] = raw  # kept exactly as the model wrote it
    extra_call = rest(call, "id", "function")
    if extra_call != {"type": "function"}:
        meta["call"] = extra_call
    extra_function = rest(function, "name", "arguments")
    if extra_function:
        meta["function"] = extra_function
    return with_meta(tool_call_part(name, call.get("id"), parsed), _OPENAI, **meta)


def _call_to_chat(part: Mapping[str, Any]) -> Any:
    meta = meta_of(part, _OPENAI)
    if part.get("type") == "data-openai":
        return part.get("data")
    name = part.get("toolName") or str(part.get("type", "")).removeprefix("tool-")
    raw = meta.get("arguments", _ABSENT)
    arguments = compact_arguments(part.get("input")) if raw is _ABSENT else raw
    function = {"name": name, "arguments": arguments, **mapping(meta.get("function"))}
    call = meta.get("call")
    if not isinstance(call, Mapping):
        call = {"type": "function"}
    out = {
        "id": part.get("toolCallId"),
        **call,
        "function": drop_absent(function, meta, "arguments"),
    }
    return drop_absent(out, meta, "id")


# --------------------------------------------------------------------------- messages


def _message_from_chat(message: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise InvalidMessageError("an OpenAI Chat message is a dict with a string 'role'")
    role = message["role"]
    meta = rest(message, *_MESSAGE_KEYS)
    parts: list[dict[str, Any]] = []
    if role == "tool":
        part = tool_result_part(message.get("tool_call_id"), names, message.get("content"))
        if "content" not in message:
            meta["content"] = "absent"
        meta.update(absent(message, "tool_call_id"))
        return _message(role, [part], meta)
    if "tool_call_id" in message:
        meta["tool_call_id"] = message["tool_call_id"]
    content = message.get("content", _ABSENT)
    if not isinstance(content, (str, list)) and (
        role != "assistant" or content not in (None, _ABSENT)
    ):
        raise InvalidMessageError(
            f"'content' must be a string or a list of parts (None only for an assistant "
            f"turn with tool_calls), got {type(content).__name__}"
        )
    if content is _ABSENT:
        meta["content"] = "absent"
    elif content is None:
        meta["content"] = None
    elif isinstance(content, str):
        parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        meta["content"] = "list"
        parts.extend(_part_from_chat(p) for p in content)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            call_part = _call_part(call)
            if isinstance(call_part.get("toolName"), str) and isinstance(
                call_part.get("toolCallId"), str
            ):
                names[call_part["toolCallId"]] = call_part["toolName"]
            parts.append(call_part)
    elif "tool_calls" in message:
        meta["tool_calls"] = calls
    return _message(role, parts, meta)


_ABSENT = object()


def _message(role: str, parts: list[dict[str, Any]], meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "parts": parts}
    if meta:
        out["providerMetadata"] = {_OPENAI: meta}
    # developer, function, ...: one of the stored roles, the original kept (clarification 25)
    return fold_message_role(out, _OPENAI)


def chat_converter() -> Any:
    """A function converting Chat messages one at a time (others pass through unchanged),
    remembering tool call names for the ``tool`` messages that follow."""
    names: dict[str, str] = {}

    def convert(message: Any) -> Any:
        if not is_openai_chat_message(message):
            return message
        with typed_errors("from_openai_chat"):
            return _message_from_chat(message, names)

    return convert


def from_openai_chat(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions messages → threadline messages (no ``id``/``createdAt`` invented).

    A ``tool`` message becomes a ``tool`` message holding one tool part named after its call
    when the call is earlier in ``messages`` (else a ``dynamic-tool`` part).

    >>> from_openai_chat([{"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "c1", "type": "function",
    ...      "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "rain"}])[1]["parts"][0]["type"]
    'tool-weather'
    """
    with typed_errors("from_openai_chat"):
        names: dict[str, str] = {}
        items = items_of(messages, "from_openai_chat")
        return [_message_from_chat(plain(message), names) for message in items]


def to_openai_chat(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Threadline messages → Chat Completions messages (exact inverse of
    :func:`from_openai_chat`; native messages work too: an assistant tool part that holds its
    output becomes a ``tool_calls`` entry followed by a ``tool`` message).

    >>> to_openai_chat([{"role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    [{'role': 'user', 'content': 'hi'}]
    """
    with typed_errors("to_openai_chat"):
        out: list[dict[str, Any]] = []
        asked: set[str] = set()  # ids of the calls written so far
        for message in items_of(messages, "to_openai_chat"):
            out.extend(_message_to_chat(message_of(message, "to_openai_chat"), asked))
        return out


def _message_to_chat(message: Mapping[str, Any], asked: set[str]) -> list[dict[str, Any]]:
    meta = meta_of(message, _OPENAI)
    role = meta.pop("role", message.get("role"))
    parts = parts_in(message)
    if role == "tool":
        no_content = meta.pop("content", _ABSENT) == "absent"
        shape = {"absent_keys": meta.pop("absent_keys", None)}
        tool_messages = []
        for part in [p for p in parts if is_tool_part(p)] or parts[:1] or [{}]:
            result: dict[str, Any] = {"role": "tool", "tool_call_id": part.get("toolCallId")}
            if not no_content:
                result["content"] = result_value(part)
            tool_messages.append({**drop_absent(result, shape, "tool_call_id"), **meta})
        return tool_messages
    # Results of calls written earlier (a tool result stored in a message of its own) are
    # written as their tool messages: the call and its result make one step.
    answers = [p for p in parts if is_answer(p, asked)]
    answered = {id(p) for p in answers}
    calls = [
        p
        for p in parts
        if id(p) not in answered and (is_tool_part(p) or meta_of(p, _OPENAI).get("tool_call"))
    ]
    called = {id(p) for p in calls}
    content_parts = [p for p in parts if id(p) not in answered and id(p) not in called]
    results = [_tool_message(p) for p in calls if is_tool_part(p) and has_output(p)]
    results.extend(_tool_message(p) for p in answers)
    for p in calls:
        note_call(asked, p.get("toolCallId"))
    if answers and not calls and not content_parts and not meta:
        return results
    chat: dict[str, Any] = {"role": role}
    shape = meta.pop("content", "text")
    if shape == "list":
        chat["content"] = [c for c in (_part_to_chat(p) for p in content_parts) if c is not None]
    elif shape is None:
        chat["content"] = None
    elif shape == "text":
        texts = [text_in(p) for p in content_parts if p.get("type") == "text"]
        if texts or not calls:
            chat["content"] = " ".join(texts) if len(texts) != 1 else texts[0]
        else:
            chat["content"] = None
    elif shape != "absent":
        chat["content"] = shape
    if calls:
        chat["tool_calls"] = [_call_to_chat(p) for p in calls]
    elif "tool_calls" in meta:
        chat["tool_calls"] = meta.pop("tool_calls")
    if "tool_call_id" in meta:
        chat["tool_call_id"] = meta.pop("tool_call_id")
    chat.update(meta)
    # Keys a plain {"role", "content"} message brought along stay top-level in threadline.
    chat.update({k: v for k, v in message.items() if k not in _THREADLINE_KEYS})
    return [chat, *results]


def _tool_message(part: Mapping[str, Any]) -> dict[str, Any]:
    content = _as_content(result_value(part))
    return {"role": "tool", "tool_call_id": part.get("toolCallId"), "content": content}


def _as_content(output: Any) -> Any:
    return output if isinstance(output, (str, list)) else json.dumps(output, ensure_ascii=False)
