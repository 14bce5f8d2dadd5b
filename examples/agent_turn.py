"""Agent turns with threadline's Runner (offline: a scripted model stands in for an LLM).

The RadarOS flow: "My name is Bob" — the model saves the fact into its memory block with the
``set_context`` tool — then, in a later run, "What's my name?" — answered from the memory block,
which the refreshed system prompt now holds. State set by a hook persists between runs.

    python examples/agent_turn.py
"""

from __future__ import annotations

import json
import re
from typing import Any

from threadline import Hooks, Runner, SessionManager
from threadline.messages import text_of


def scripted_model(system: str, messages: list[Any], tools: Any) -> Any:
    """Saves "My name is X" to memory with a tool call; answers name questions from memory."""
    last = messages[-1]
    said = text_of(last)
    if last["role"] == "user" and (match := re.search(r"[Mm]y name is (\w+)", said)):
        args = json.dumps({"label": "memory", "content": f"The user's name is {match[1]}."})
        call = {"id": "call-1", "type": "function",
                "function": {"name": "set_context", "arguments": args}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if last["role"] != "user":  # the tool ran: acknowledge
        return "Nice to meet you! I'll remember that."
    if "name" in said and (known := re.search(r"The user's name is (\w+)", system)):
        return f"Your name is {known[1]}."
    return "I don't know yet."


def count_visits(ctx: Any) -> None:
    ctx.set_state("visits", ctx.get_state("visits", 0) + 1)


def main() -> None:
    manager = SessionManager(":memory:").with_context("memory", description="Facts about the user")
    runner = Runner(manager, scripted_model, runs=10, hooks=Hooks(before_run=count_visits))
    first = runner.run("Hi! My name is Bob.", session_id="bob")
    print("run 1:", text_of(first.output))
    second = runner.run("What's my name?", session_id="bob")
    print("run 2:", text_of(second.output))
    session = manager.get_session("bob")
    print("memory block:", session.get_context_block("memory").content)
    print("visits:", session.get_state("visits"), "| messages stored:", session.get_path_length())


if __name__ == "__main__":
    main()
