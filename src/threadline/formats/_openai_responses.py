"""OpenAI Responses API input items ⇄ threadline messages (AI SDK ``UIMessage`` shape).

One item, one message: a ``message`` item keeps its role and content parts (``input_text`` /
``output_text`` as text, ``input_image`` / ``input_file`` as ``file`` parts, refusals); a
``function_call`` becomes an assistant tool part, a ``function_call_output`` a ``tool``
message named after its call when the call is earlier in the list (else ``dynamic-tool``),
a ``reasoning`` item an assistant message of ``reasoning`` parts (its encrypted content kept).
Item ids (``msg_...``, ``fc_...``) stay in ``providerMetadata["openai"]``, never become message
ids. ``to_openai_responses(from_openai_responses(items)) == items``. Pure functions: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from threadline._roles import fold_message_role
from threadline.errors import InvalidMessageError
from threadline.formats._common import (
    absent,
    compact_arguments,
    drop_absent,
    has_output,
    is_answer,
    is_result_only,
    is_tool_part,
    items_of,
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

__all__ = ["from_openai_responses", "to_openai_responses"]

_OPENAI = "openai"


def _meta(target: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    return with_meta(target, _OPENAI, **fields)


def _content_in(part: Any) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        return {"type": "data-openai", "data": part}
    kind = part.get("type")
    if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
        return _meta({"type": "text", "text": part["text"]}, **rest(part, "text"))
    if kind == "refusal" and isinstance(part.get("refusal"), str):
        return _meta({"type": "text", "text": part["refusal"]}, **rest(part, "refusal"))
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        url = part["image_url"]
        file = {"type": "file", "mediaType": media_type(url, "image/*"), "url": url}
        return _meta(file, **rest(part, "image_url"))
    if kind == "input_file" and isinstance(part.get("file_data"), str):
        url = part["file_data"]
        file = {
            "type": "file",
            "mediaType": media_type(url, "application/octet-stream"),
            "url": url,
        }
        if isinstance(part.get("filename"), str):
            file["filename"] = part["filename"]
        return _meta(file, **rest(part, "file_data", "filename"))
    return {"type": "data-openai", "data": dict(part)}


def _content_out(part: Mapping[str, Any]) -> Any:
    meta = meta_of(part, _OPENAI)
    kind, origin = part.get("type"), meta.get("type")
    if kind == "data-openai":
        return part.get("data")
    if kind == "text":
        if origin == "refusal":
            return {"refusal": text_in(part), **meta}
        return {"type": "input_text", "text": text_in(part), **meta}
    if kind == "file":
        if origin == "input_file" or (
            origin is None and not str(part.get("mediaType", "")).startswith("image/")
        ):
            out = {"type": "input_file", "file_data": part.get("url"), **meta}
            if "filename" in part:
                out["filename"] = part["filename"]
            return out
        return {"type": "input_image", "image_url": part.get("url"), **meta}
    return None


def _item_in(item: Any, names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        raise InvalidMessageError("a Responses input item is a dict")
    kind = item.get("type", "message")
    if kind == "message" and isinstance(item.get("role"), str):
        role, content = item["role"], item.get("content")
        meta = rest(item, "role", "content")
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            meta["content"] = "list"
            parts = [_content_in(p) for p in content]
        else:
            raise InvalidMessageError("a message item's 'content' is a string or a list")
        message = _meta({"role": role, "parts": parts}, item="message", **meta)
        return fold_message_role(message, _OPENAI)  # developer → system (clarification 25)
    if kind == "function_call" and isinstance(item.get("name"), str) and item["name"]:
        name, call_id, raw = item["name"], item.get("call_id"), item.get("arguments")
        if isinstance(call_id, str):
            names[call_id] = name
        meta = rest(item, "type", "call_id", "name", "arguments")
        meta.update(absent(item, "call_id", "arguments"))
        parsed, keep_raw = parse_arguments(raw)
        if keep_raw and "arguments" in item:
            meta["arguments"] = raw
        part = tool_call_part(name, call_id, parsed)
        return _meta({"role": "assistant", "parts": [part]}, item="function_call", **meta)
    if kind == "function_call_output":
        part = tool_result_part(item.get("call_id"), names, item.get("output"))
        meta = rest(item, "type", "call_id", "output")
        meta.update(absent(item, "call_id", "output"))
        return _meta({"role": "tool", "parts": [part]}, item="function_call_output", **meta)
    if kind == "reasoning" and isinstance(item.get("summary"), list):
        summary = item["summary"]
        if all(isinstance(s, Mapping) and isinstance(s.get("text"), str) for s in summary):
            parts = [
                _meta({"type": "reasoning", "text": s["text"]}, **rest(s, "text")) for s in summary
            ]
            meta = rest(item, "type", "summary")
            return _meta({"role": "assistant", "parts": parts}, item="reasoning", **meta)
    data = {"type": "data-openai", "data": dict(item)}
    # The item comes back whole from its part: the role here only places it in the thread.
    return _meta({"role": _fold(item.get("role", "assistant")), "parts": [data]}, item="raw")


def _fold(role: Any) -> str:
    return str(fold_message_role({"role": role}, _OPENAI)["role"])


def from_openai_responses(items: Iterable[Any]) -> list[dict[str, Any]]:
    """Responses API input items → threadline messages, one per item.

    >>> [m["role"] for m in from_openai_responses([
    ...     {"role": "user", "content": "Weather in Oslo?"},
    ...     {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
    ...     {"type": "function_call_output", "call_id": "c1", "output": "rain"}])]
    ['user', 'assistant', 'tool']
    """
    with typed_errors("from_openai_responses"):
        names: dict[str, str] = {}
        return [_item_in(plain(item), names) for item in items_of(items, "from_openai_responses")]


def to_openai_responses(messages: Iterable[Mapping[str, Any]]) -> list[Any]:
    """Threadline messages → Responses API input items (inverse of
    :func:`from_openai_responses`; native messages work too).

    >>> to_openai_responses([{"role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    [{'role': 'user', 'content': 'hi'}]
    """
    with typed_errors("to_openai_responses"):
        out: list[Any] = []
        asked: set[str] = set()  # ids of the calls written so far
        for message in items_of(messages, "to_openai_responses"):
            out.extend(_message_out(message_of(message, "to_openai_responses"), asked))
        return out


def _message_out(message: Mapping[str, Any], asked: set[str]) -> list[Any]:
    meta = meta_of(message, _OPENAI)
    kind = meta.pop("item", None)
    parts = parts_in(message)
    if kind == "raw":
        return [parts[0].get("data")] if parts else []
    if kind == "function_call" and parts:
        note_call(asked, parts[0].get("toolCallId"))
        return [_call_out(parts[0], meta)]
    if kind == "function_call_output" and parts:
        part = parts[0]
        shape = {"absent_keys": meta.pop("absent_keys", None)}
        item = {"type": "function_call_output", "call_id": part.get("toolCallId"),
                "output": part.get("output")}  # fmt: skip
        return [{**drop_absent(item, shape, "call_id", "output"), **meta}]
    if kind == "reasoning":
        summary = [{"text": text_in(p), **meta_of(p, _OPENAI)} for p in parts]
        return [{"type": "reasoning", "summary": summary, **meta}]
    # A message item (or a native message: its tool parts become call and output items; a
    # result whose call was written before, or any result of a tool message, is its output
    # item alone, so the call and its result make one step).
    role = meta.pop("role", message.get("role"))
    tools = [p for p in parts if is_tool_part(p)]
    content_parts = [p for p in parts if not is_tool_part(p) and p.get("type") != "reasoning"]
    items: list[Any] = []
    if kind == "message" or not tools or (content_parts and role != "tool"):
        if meta.pop("content", None) == "list":
            content: Any = [c for c in (_content_out(p) for p in content_parts) if c is not None]
        else:
            content = " ".join(text_in(p) for p in content_parts if p.get("type") == "text")
        items.append({"role": role, "content": content, **meta})
    for part in tools:
        if not (is_answer(part, asked) or (role == "tool" and is_result_only(part))):
            items.append(_call_out(part, {}))
            note_call(asked, part.get("toolCallId"))
        if has_output(part):
            output = result_value(part)
            if not isinstance(output, str):
                output = json.dumps(output, ensure_ascii=False)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": part.get("toolCallId"),
                    "output": output,
                }
            )
    return items


def _call_out(part: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    name = part.get("toolName") or str(part.get("type", "")).removeprefix("tool-")
    if "arguments" in meta:
        arguments = meta.pop("arguments")
    else:
        arguments = compact_arguments(part.get("input"))
    shape = {"absent_keys": meta.pop("absent_keys", None)}
    call = {"type": "function_call", "call_id": part.get("toolCallId"), "name": name,
            "arguments": arguments}  # fmt: skip
    return {**drop_absent(call, shape, "call_id", "arguments"), **meta}
