"""Anthropic Messages ⇄ threadline messages (AI SDK ``UIMessage`` shape).

Blocks map to parts: ``text``; ``image`` and ``document`` (base64, URL or text sources) to
``file`` parts; ``tool_use`` to a tool part with its input; ``tool_result`` (in a user turn)
to a tool part with its output (``output-error`` when ``is_error``), named after its
``tool_use`` when that is earlier in the list, else ``dynamic-tool``; ``thinking`` (with its
signature) and ``redacted_thinking`` to ``reasoning`` parts. The system prompt becomes a
leading ``system`` message. Whatever has no part of its own stays verbatim under
``providerMetadata["anthropic"]``, so ``to_anthropic(from_anthropic(m, system=s)) == (s, m)``.
Pure functions: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from threadline._roles import fold_message_role, restore_role
from threadline.errors import InvalidMessageError
from threadline.formats._common import (
    absent,
    data_of,
    drop_absent,
    has_output,
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
    result_value,
    text_in,
    tool_call_part,
    tool_result_part,
    typed_errors,
    with_meta,
)

__all__ = ["from_anthropic", "to_anthropic"]

_ANTHROPIC = "anthropic"
_ROLE_KEYS = ("role", "content")


def _meta(target: dict[str, Any], /, **fields: Any) -> dict[str, Any]:
    return with_meta(target, _ANTHROPIC, **fields)


def _source_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """``image``/``document`` block → ``file`` part (None when its source is unknown)."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    kind, others = block.get("type"), rest(block, "type", "source")
    media = source.get("media_type")
    if source.get("type") == "base64" and isinstance(media, str):
        data = source.get("data")
        if isinstance(data, str):
            part = {"type": "file", "mediaType": media, "url": f"data:{media};base64,{data}"}
            return _meta(part, type=kind, source=rest(source, "data", "media_type"), **others)
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        default = "image/*" if kind == "image" else "application/octet-stream"
        part = {"type": "file", "mediaType": default, "url": source["url"]}
        return _meta(part, type=kind, source=rest(source, "url"), **others)
    return None


def _block_in(block: Any, names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(block, Mapping):
        return {"type": "data-anthropic", "data": block}
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return _meta({"type": "text", "text": block["text"]}, **rest(block, "type", "text"))
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        part = {"type": "reasoning", "text": block["thinking"]}
        return _meta(part, type="thinking", **rest(block, "type", "thinking"))
    if kind == "redacted_thinking":
        return _meta({"type": "reasoning", "text": ""}, **dict(block))
    if kind in ("image", "document"):
        file = _source_part(block)
        if file is not None:
            return file
    if kind == "tool_use" and isinstance(block.get("name"), str) and block["name"]:
        name, call_id = block["name"], block.get("id")
        if isinstance(call_id, str):
            names[call_id] = name
        part = tool_call_part(name, call_id, block.get("input"))
        extra = {**rest(block, "type", "id", "name", "input"), **absent(block, "id", "input")}
        return _meta(part, **extra)
    if kind == "tool_result":
        error = block.get("is_error") is True
        part = tool_result_part(block.get("tool_use_id"), names, block.get("content"), error=error)
        extra = {**rest(block, "type", "tool_use_id", "content"), **absent(block, "tool_use_id")}
        if "content" not in block:
            extra["content"] = "absent"
        return _meta(part, type="tool_result", **extra)
    return {"type": "data-anthropic", "data": dict(block)}


def _block_out(part: Mapping[str, Any]) -> Any:
    meta = meta_of(part, _ANTHROPIC)
    kind = part.get("type")
    if kind == "data-anthropic":
        return part.get("data")
    if kind == "text":
        return {"type": "text", "text": text_in(part), **meta}
    if kind == "reasoning":
        if meta.get("type") == "redacted_thinking":
            return meta
        return {"type": "thinking", "thinking": text_in(part), **rest(meta, "type")}
    if kind == "file":
        block_type = meta.pop("type", None) or (
            "image" if str(part.get("mediaType", "")).startswith("image/") else "document"
        )
        source = mapping(meta.pop("source", None))
        url = part.get("url")
        if isinstance(url, str) and url.startswith("data:"):
            source = {"type": "base64", "media_type": part.get("mediaType"), "data": data_of(url),
                      **source}  # fmt: skip
        else:
            source = {"type": "url", "url": url, **source}
        return {"type": block_type, "source": source, **meta}
    if is_tool_part(part):
        if meta.pop("type", None) == "tool_result" or is_result_only(part):
            return _result_block(part, meta)
        name = part.get("toolName") or str(kind).removeprefix("tool-")
        shape = {"absent_keys": meta.pop("absent_keys", None)}
        use = {"type": "tool_use", "id": part.get("toolCallId"), "name": name,
               "input": part.get("input")}  # fmt: skip
        return {**drop_absent(use, shape, "id", "input"), **meta}
    return None


def _result_block(part: Mapping[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.get("toolCallId")}
    drop_absent(block, {"absent_keys": meta.pop("absent_keys", None)}, "tool_use_id")
    if meta.pop("content", None) != "absent":
        block["content"] = result_value(part)
    if part.get("state") == "output-error" and "is_error" not in meta:
        block["is_error"] = True  # a native failed call (from_anthropic keeps its own flag)
    return {**block, **meta}


def _message_in(message: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise InvalidMessageError("an Anthropic message is a dict with a string 'role'")
    content = message.get("content")
    meta = rest(message, *_ROLE_KEYS)
    if isinstance(content, str):
        parts: list[dict[str, Any]] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        meta["content"] = "list"
        parts = [_block_in(block, names) for block in content]
    else:
        raise InvalidMessageError("Anthropic 'content' is a string or a list of blocks")
    out: dict[str, Any] = {"role": message["role"], "parts": parts}
    return fold_message_role(_meta(out, **meta), _ANTHROPIC)  # clarification 25


def from_anthropic(
    messages: Iterable[Mapping[str, Any]], *, system: str | list[Any] | None = None
) -> list[dict[str, Any]]:
    """Anthropic Messages (and the request's ``system``) → threadline messages.

    >>> from_anthropic([{"role": "user", "content": "Hi"}], system="Be brief.")[0]["role"]
    'system'
    """
    with typed_errors("from_anthropic"):
        names: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        items = items_of(messages, "from_anthropic")
        if system is not None:
            out.append(_message_in({"role": "system", "content": plain(system)}, names))
        out.extend(_message_in(plain(message), names) for message in items)
        return out


def to_anthropic(
    messages: Iterable[Mapping[str, Any]],
) -> tuple[str | list[Any] | None, list[dict[str, Any]]]:
    """Threadline messages → ``(system, messages)`` for the Messages API (inverse of
    :func:`from_anthropic`). System messages make the ``system`` prompt.

    >>> to_anthropic([{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}])
    (None, [{'role': 'user', 'content': 'Hi'}])
    """
    with typed_errors("to_anthropic"):
        return _to_anthropic(items_of(messages, "to_anthropic"))


def _to_anthropic(messages: list[Any]) -> tuple[str | list[Any] | None, list[dict[str, Any]]]:
    system: str | list[Any] | None = None
    out: list[dict[str, Any]] = []
    asked: set[str] = set()  # ids of the calls written so far
    for message in messages:
        message = message_of(message, "to_anthropic")
        if restore_role(message, _ANTHROPIC) != "system":  # not a folded role
            out.extend(_message_out(message, asked))
            continue
        content = _message_out(message, asked)[0]["content"]
        if system is None:
            system = content
        elif isinstance(system, str) and isinstance(content, str):
            system = f"{system}\n\n{content}"
        else:
            system = [*_as_blocks(system), *_as_blocks(content)]
    return system, out


def _as_blocks(content: str | list[Any]) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _message_out(message: Mapping[str, Any], asked: set[str]) -> list[dict[str, Any]]:
    """One Anthropic message; two when a native assistant part holds both a call and its
    result (the ``tool_use`` stays, its ``tool_result`` follows in a user turn)."""
    meta = meta_of(message, _ANTHROPIC)
    role = meta.pop("role", message.get("role"))
    if role == "tool":
        role = "user"  # Anthropic carries tool results in user turns
    parts = parts_in(message)
    blocks = [b for b in (_block_out(p) for p in parts) if b is not None]
    # Native calls that hold their result: answered in the user turn after this one.
    answers = [
        _result_block(p, {})
        for p in parts
        if is_tool_part(p)
        and has_output(p)
        and not is_result_only(p)
        and not meta_of(p, _ANTHROPIC)
    ]
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            note_call(asked, block.get("id"))
    if meta.pop("content", None) == "list":
        content: Any = blocks
    elif len(blocks) == 1 and _plain_text(blocks[0]):
        content = blocks[0]["text"]
    elif blocks and all(_plain_text(b) for b in blocks):
        content = " ".join(b["text"] for b in blocks)
    else:
        content = blocks
    out = [{"role": role, "content": content, **meta}]
    if answers:
        out.append({"role": "user", "content": answers})
    return out


def _plain_text(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and set(block) == {"type", "text"}
        and block["type"] == "text"
        and isinstance(block["text"], str)
    )
