"""A complete agent turn loop on threadline, runnable offline: ``python examples/agent_loop.py``.

What it shows:

* a session with a read-only soul, a writable memory block and a skills block;
* the frozen system prompt (stable within a turn so the LLM's prefix cache stays warm) and
  a refresh between turns, so what the model saved shows up on the next turn;
* tools derived from the blocks (``session.tools()``) exported for the OpenAI Chat
  Completions API, executed with ``toolset.execute`` (which never raises);
* history sent to the model through ``threadline.formats.to_openai_chat``;
* tool calls stored in history as UIMessage tool parts.

The model here is scripted (no network, no API key). The commented section at the end shows
the same loop with the real OpenAI or Anthropic client.
"""

from __future__ import annotations

import json
import re
from typing import Any

import threadline
from threadline import Session, StaticContext, StoreSkillProvider
from threadline.formats import to_openai_chat
from threadline.messages import assistant, text_of, user

MAX_STEPS = 5  # tool round-trips allowed per user turn


# --------------------------------------------------------------------------- history → OpenAI


def to_openai_messages(system: str, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions messages: the system prompt, then the history through the library's
    converter (an assistant message with tool parts becomes ``tool_calls`` plus one ``tool``
    message per call)."""
    return ([{"role": "system", "content": system}] if system else []) + to_openai_chat(history)


# --------------------------------------------------------------------------- a scripted model


class ScriptedModel:
    """Stands in for an LLM: reacts to the last message with a tool call or an answer.

    ``complete`` takes and returns Chat Completions shapes, so it can be swapped for
    ``client.chat.completions.create(...).choices[0].message``.
    """

    def __init__(self) -> None:
        self.calls = 0

    def _tool_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        call = {"name": name, "arguments": json.dumps(args)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"call_{self.calls}", "type": "function", "function": call}],
        }

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        names = {t["function"]["name"] for t in tools}
        last = messages[-1]
        if last["role"] == "tool":
            result = last["content"]
            if result.startswith("Error:"):
                return {"role": "assistant", "content": f"That did not work: {result}"}
            if result.startswith(("Written to", "Indexed")):
                return {"role": "assistant", "content": "Noted, I will remember that."}
            return {"role": "assistant", "content": f"From the guide:\n{result}"}
        text = last["content"]
        fact = re.match(r"(?i)remember that (.+)", text)
        if fact and "set_context" in names:
            return self._tool_call(
                "set_context", {"label": "memory", "content": fact.group(1), "action": "append"}
            )
        if "deploy" in text.lower() and "load_context" in names:
            return self._tool_call("load_context", {"label": "skills", "key": "deploy"})
        return {"role": "assistant", "content": "Here is what I know: " + _memory_of(messages)}


def _memory_of(messages: list[dict[str, Any]]) -> str:
    """The MEMORY block's content as rendered in the system prompt (the first message)."""
    after_header = messages[0]["content"].split("\nMEMORY", 1)[-1].split("\n", 2)[-1]
    return after_header.split("\n\n", 1)[0].replace("\n", " ") or "nothing yet"


# --------------------------------------------------------------------------- the turn loop


def run_turn(session: Session, model: ScriptedModel, text: str) -> str:
    """One user turn: the model may call tools several times before it answers."""
    session.append_message(user(text))
    system = session.freeze_system_prompt()  # same prompt for every step of the turn
    toolset = session.tools()
    for _ in range(MAX_STEPS):
        messages = to_openai_messages(system, session.get_history())
        reply = model.complete(messages, toolset.to_openai())
        calls = reply.get("tool_calls") or []
        if not calls:
            session.append_message(assistant(reply["content"] or ""))
            break
        parts = []
        for call in calls:
            name, raw = call["function"]["name"], call["function"]["arguments"]
            output = toolset.execute(name, raw)  # never raises: errors come back as "Error: ..."
            try:
                args = json.loads(raw or "{}")
            except ValueError:
                args = {"raw": raw}
            parts.append(
                {
                    "type": f"tool-{name}",
                    "toolCallId": call["id"],
                    "toolName": name,
                    "state": "output-available",
                    "input": args,
                    "output": output,
                }
            )
        session.append_message({"role": "assistant", "parts": parts})
        toolset = session.tools()  # e.g. unload_context's description lists loaded skills
    session.refresh_system_prompt()  # next turn sees what this turn wrote
    return text_of(session.get_history()[-1])


def main() -> None:
    store = threadline.connect(":memory:")  # or "agent.db" for a durable file
    session = (
        Session.create(store)
        .for_session("demo")
        .with_context("soul", provider=StaticContext("You are a concise, helpful assistant."))
        .with_context("memory", description="Facts about the user", max_tokens=200)
        .with_context("skills", description="How-to guides", provider=StoreSkillProvider(store))
    )
    session.write_context_entry(
        "skills",
        "1. Run the tests.\n2. Tag the release.\n3. Push the tag; CI deploys.",
        title="deploy",
        description="How to deploy the app",
    )
    model = ScriptedModel()
    for text in (
        "Remember that I prefer TypeScript.",
        "How do I deploy?",
        "What do you know about me?",
    ):
        print(f"user> {text}")
        print(f"assistant> {run_turn(session, model, text)}\n")
    print("Tools offered:", ", ".join(session.tools()))
    print("Loaded skills:", sorted(session.loaded_skills))
    print("\nSystem prompt for the next turn:\n" + session.freeze_system_prompt())
    store.close()


if __name__ == "__main__":
    main()


# --------------------------------------------------------------------------- real models
#
# OpenAI Chat Completions (pip install openai; OPENAI_API_KEY set) — replace ScriptedModel:
#
#     from openai import OpenAI
#
#     class OpenAIModel:
#         def __init__(self, model: str = "gpt-4o-mini") -> None:
#             self.client, self.model = OpenAI(), model
#
#         def complete(self, messages, tools):
#             response = self.client.chat.completions.create(
#                 model=self.model, messages=messages, tools=tools
#             )
#             return response.choices[0].message.model_dump(exclude_none=True)
#
# The Responses API takes `session.tools().to_openai_responses()` instead.
#
# Anthropic Messages (pip install anthropic; ANTHROPIC_API_KEY set): the system prompt is a
# separate argument and tools use `to_anthropic()`:
#
#     import anthropic
#
#     client = anthropic.Anthropic()
#     response = client.messages.create(
#         model="claude-sonnet-4-5",
#         max_tokens=1024,
#         system=session.freeze_system_prompt(),
#         messages=anthropic_messages,  # history converted to user/assistant content blocks
#         tools=session.tools().to_anthropic(),
#     )
#     for block in response.content:
#         if block.type == "tool_use":
#             result = toolset.execute(block.name, block.input)
#             # store it as a tool part, send {"type": "tool_result", "tool_use_id": block.id,
#             # "content": result} in the next user message
