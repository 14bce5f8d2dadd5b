"""The OpenAI Agents SDK's own Runner, with threadline as its session (offline).

A scripted model stands in for OpenAI: it answers from what the session replays to it, and
calls a function tool on the way. Each run of this script does two turns; run it twice and
the second process picks the conversation up from the SQLite file:

    python examples/openai_agents_chat.py /tmp/agents.db
    python examples/openai_agents_chat.py /tmp/agents.db      # resumes: 4 turns in history

Switching from the SDK's SQLiteSession is one line:
``SQLiteSession("user-42", path)`` -> ``ThreadlineSession("user-42", f"sqlite:///{path}")``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from threadline.integrations.openai_agents import ThreadlineSession


@function_tool
def remember(fact: str) -> str:
    """Note a fact about the user."""
    return f"noted: {fact}"


class ScriptedModel(Model):
    """Answers with how many user turns it was shown; calls ``remember`` once per turn."""

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = input if isinstance(input, list) else [{"role": "user", "content": input}]
        users = [i for i in items if i.get("role") == "user"]
        last = items[-1]
        if last.get("type") != "function_call_output":  # first step of a turn: use the tool
            call = ResponseFunctionToolCall(
                type="function_call", call_id=f"call-{len(users)}", name="remember",
                arguments=json.dumps({"fact": str(users[-1]["content"])}),
            )  # fmt: skip
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = f"I have seen {len(users)} user turns; last tool said {last['output']!r}."
        message = ResponseOutputMessage(
            id="msg", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )  # fmt: skip
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("this example does not stream")


async def main(path: str) -> None:
    set_tracing_disabled(True)  # offline: no trace export
    agent = Agent(name="assistant", model=ScriptedModel(), tools=[remember])
    session = ThreadlineSession("user-42", f"sqlite:///{path}")
    try:
        for text in ("I live in Lisbon.", "I prefer tea."):
            result = await Runner.run(agent, text, session=session)
            print(result.final_output)
        items = await session.get_items()
        print(
            f"{len(items)} items stored; search 'Lisbon':",
            [h.content for h in await session.search("Lisbon")][:1],
        )
    finally:
        session.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "agents.db"))
