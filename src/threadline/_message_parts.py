"""Reading a message's parts: its text, its tool calls and results, which result answers
which call, and whether it is a final response. Never raises on odd input.

Re-exported by :mod:`threadline.messages`, the public home of these names.

>>> parts_of({"parts": [{"type": "tool-search", "toolCallId": "c1"}, "junk"]})[0]["type"]
'tool-search'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from threadline.formats._common import has_output, is_result_only
from threadline.types import Message


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

    >>> from threadline.messages import tool_call, user
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

    >>> from threadline.messages import tool_call
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

    >>> from threadline.messages import tool_call
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

    >>> from threadline.messages import tool_call
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

    >>> from threadline.messages import tool_call
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

    >>> from threadline.messages import tool_call
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

    >>> from threadline.messages import assistant, tool_call
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
