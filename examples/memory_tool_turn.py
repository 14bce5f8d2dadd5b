"""A tool-calling agent turn that edits a memory block (offline: a scripted model).

The session has a writable "memory" block that already holds one fact. The user says they moved;
the model calls threadline's ``set_context`` tool with ``action="append"``; the Runner executes
the call against the block, hands the tool's answer back to the model, and the model replies.
The run is stored as one invocation — the user message, the assistant's tool call with its
output, the final answer — and the next run's system prompt carries the edited block.

    python examples/memory_tool_turn.py
"""

from __future__ import annotations

import re
from typing import Any

from threadline import Runner, SessionManager
from threadline.messages import function_calls, function_responses, text_of, tool_call


def scripted_model(system: str, messages: list[Any], tools: Any) -> Any:
    """Stands in for an LLM: records a move with the memory tool, answers from its memory."""
    last = messages[-1]
    if last["role"] != "user":  # the tool ran: its answer is in the last message
        return "Noted: I'll remember where you live now."
    said = text_of(last)
    if (moved := re.search(r"moved to (\w+)", said)) and "set_context" in tools:
        fact = f"The user lives in {moved[1]}."
        return tool_call("set_context", {"label": "memory", "content": fact, "action": "append"})
    if "where" in said.lower() and (known := re.findall(r"lives in (\w+)", system)):
        return f"You live in {known[-1]}."
    return "Tell me more."


def main() -> None:
    manager = SessionManager(":memory:").with_context("memory", description="Facts about the user")
    session = manager.get_session("ana")
    session.replace_context_block("memory", "The user's name is Ana.")
    runner = Runner(manager, scripted_model)

    result = runner.run("I just moved to Lisbon!", session_id="ana")
    _, call, answer = result.messages
    print("tool calls:", [(c["name"], c["args"]["action"]) for c in function_calls(call)])
    print("tool answer:", function_responses(call)[0]["response"])
    print("reply:", text_of(answer))
    block = manager.get_session("ana").get_context_block("memory")
    print("memory block:", block.content if block else None)
    one_run = {m["metadata"]["invocationId"] for m in result.messages}
    print("stored:", [m["role"] for m in result.messages], "in", len(one_run), "invocation")

    later = runner.run("Where do I live?", session_id="ana")
    print("next run:", text_of(later.output))


if __name__ == "__main__":
    main()
