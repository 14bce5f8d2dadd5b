"""Amendment 22 and clarification 32: a tool result appended in its own call takes its tool's
name from the call on the parent's path (the last 200 messages), whatever the way in; the
call's row is never rewritten; beyond the window, or on another branch, it stays
``dynamic-tool``. On every backend."""

from __future__ import annotations

from typing import Any

import threadline
from threadline import Session
from threadline.formats import to_openai_chat
from threadline.messages import TOOL_NAME_WINDOW, assistant, tool_call, user

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": "c1", "content": "rain"}


def _part(message: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = message["parts"][0]
    return part


def test_a_result_appended_alone_is_named_after_its_call(store: Any) -> None:
    session = Session.create(store).for_session("loop")
    session.append_message(user("weather?"))
    call = session.append_message(CALL)
    stored = session.append_message(RESULT)
    assert (_part(stored)["type"], _part(stored)["toolName"]) == ("tool-weather", "weather")
    history = session.get_history()
    assert _part(history[-1])["type"] == "tool-weather"  # as stored, not only as returned
    assert history[1] == call  # the call's row is not rewritten
    assert to_openai_chat(history[1:]) == [CALL, RESULT]


def test_native_and_handle_appends_are_named_too(store: Any) -> None:
    handle = store.session("default", "native")
    call = tool_call("search", {"q": "x"}, tool_call_id="k1")
    handle.append_messages([threadline.messages.normalize_message(call)])
    result = {
        "id": "r1",
        "role": "tool",
        "createdAt": "2026-11-28T00:00:00.000Z",
        "parts": [
            {
                "type": "dynamic-tool",
                "toolCallId": "k1",
                "state": "output-error",
                "errorText": "offline",
            }
        ],
    }
    stored = handle.append_messages([result])[0]
    assert _part(stored)["type"] == "tool-search" and _part(stored)["toolName"] == "search"
    assert _part(stored)["state"] == "output-error"


def test_a_dynamic_call_keeps_its_type(store: Any) -> None:
    session = Session.create(store).for_session("dynamic")
    call = {"role": "assistant", "parts": [{"type": "dynamic-tool", "toolName": "mcp_fetch",
            "toolCallId": "d1", "state": "input-available", "input": {}}]}  # fmt: skip
    session.append_message(call)
    stored = session.append_message({"role": "tool", "tool_call_id": "d1", "content": "ok"})
    assert (_part(stored)["type"], _part(stored)["toolName"]) == ("dynamic-tool", "mcp_fetch")


def test_only_the_last_200_messages_of_the_parents_path_are_searched(store: Any) -> None:
    session = Session.create(store).for_session("window")
    session.append_message(CALL)
    filler = [assistant(f"m{i}") for i in range(TOOL_NAME_WINDOW - 1)]
    session.append_messages(filler)  # the call is now the 200th message back: found
    near = session.append_message(RESULT, filler[-1]["id"])
    assert _part(near)["type"] == "tool-weather"
    session.append_message(assistant("one more"), filler[-1]["id"])
    far = session.append_message(RESULT)  # 201 back: not looked for
    assert (_part(far)["type"], _part(far)["toolName"]) == ("dynamic-tool", "unknown")


def test_a_call_on_another_branch_is_not_found(store: Any) -> None:
    session = Session.create(store).for_session("branches")
    root = session.append_message(user("hi"))
    session.append_message(CALL)
    other = session.append_message(assistant("no tools here"), root["id"])
    stored = session.append_message(RESULT, other["id"])
    assert _part(stored)["type"] == "dynamic-tool"


def test_a_batch_names_results_from_its_own_calls_and_the_path(store: Any) -> None:
    session = Session.create(store).for_session("batch")
    session.append_message(tool_call("a", {}, tool_call_id="ca"))
    result = {"role": "tool", "parts": [{"type": "dynamic-tool", "toolCallId": "ca",
              "state": "output-available", "output": 1}]}  # fmt: skip
    second = tool_call("b", {}, tool_call_id="cb")
    result_b = {"role": "tool", "parts": [{**result["parts"][0], "toolCallId": "cb"}]}
    stored = session.append_messages([result, second, result_b])
    assert [_part(m)["type"] for m in stored] == ["tool-a", "tool-b", "tool-b"]


def test_the_head_path_is_searched_when_newer_messages_are_on_another_branch(store: Any) -> None:
    session = Session.create(store).for_session("checked-out")
    root = session.append_message(user("hi"))
    call = session.append_message(CALL)
    session.append_messages([assistant("elsewhere"), assistant("newer")], root["id"])
    session.checkout(call["id"])  # the newest rows by seq are not the head's path
    stored = session.append_message(RESULT)
    assert _part(stored)["type"] == "tool-weather"
