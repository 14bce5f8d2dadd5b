"""Google ADK's own ``Runner``, persisting through threadline, offline.

An ``LlmAgent`` with one tool runs for a few turns against a scripted model (no network, no
API key); its sessions and memory live in a threadline SQLite file. Run it twice: the second
process resumes the same session and sees every event of the first.

    python examples/adk_agent.py /tmp/adk.db      # first run: three turns
    python examples/adk_agent.py /tmp/adk.db      # second run: resumes, one more turn

The only line that differs from ADK's own setup is the session service:
``ThreadlineSessionService(url)`` where ADK has ``DatabaseSessionService(db_url)``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

from threadline.integrations.adk import ThreadlineMemoryService, ThreadlineSessionService

APP, USER, SESSION = "weather_app", "ada", "trip-planning"
USAGE = types.GenerateContentResponseUsageMetadata(prompt_token_count=10, candidates_token_count=5)


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city (a canned answer: this example runs offline)."""
    return {"city": city, "forecast": "light rain, 12 °C"}


class ScriptedModel(BaseLlm):
    """A fake model: calls the tool when asked about weather, otherwise answers from what it
    sees in the request, which ADK builds from the session's stored events."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        part = (last.parts or [types.Part()])[0]
        if part.function_response is not None:
            forecast = (part.function_response.response or {}).get("forecast")
            reply = f"The forecast says {forecast}."
        elif part.text and "weather" in part.text.lower():
            city = part.text.rstrip("?").split()[-1]
            call = types.FunctionCall(name="get_weather", args={"city": city})
            content = types.Content(role="model", parts=[types.Part(function_call=call)])
            yield LlmResponse(content=content, usage_metadata=USAGE)
            return
        elif part.text and part.text.lower().startswith("remind"):
            said = [p.text for c in llm_request.contents for p in c.parts or [] if p.text]
            plans = [text for text in said if "going to" in text]
            reply = f"You told me: {plans[0]!r}" if plans else "You have not told me yet."
        else:
            user_turns = sum(
                1
                for c in llm_request.contents
                if c.role == "user" and any(p.text for p in c.parts or [])
            )
            reply = f"Noted: {part.text!r}. This is user message {user_turns} of this session."
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=reply)]),
            usage_metadata=USAGE,
        )


async def main(db_path: str) -> None:
    url = f"sqlite:///{Path(db_path).resolve()}"
    sessions = ThreadlineSessionService(url)  # was: DatabaseSessionService(db_url)
    memory = ThreadlineMemoryService(sessions.store)
    agent = LlmAgent(
        name="planner",
        model=ScriptedModel(model="scripted"),
        instruction="Help plan a trip.",
        tools=[get_weather],
        output_key="last_reply",
    )
    runner = Runner(agent=agent, app_name=APP, session_service=sessions, memory_service=memory)

    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    if session is None:
        session = await sessions.create_session(
            app_name=APP, user_id=USER, session_id=SESSION, state={"user:home": "Bergen"}
        )
        turns = ["I am going to Lisbon in May.", "What is the weather in Lisbon?", "Thanks!"]
        print(f"new session {SESSION!r}")
    else:
        turns = ["Remind me where I am going."]
        print(f"resumed session {SESSION!r} with {len(session.events)} events")
        for event in session.events:
            text = " ".join(
                p.text for p in (event.content.parts if event.content else []) if p.text
            )
            print(
                f"  stored {event.author}: {text}" if text else f"  stored {event.author}: (tool)"
            )

    for text in turns:
        print(f"user> {text}")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for event in runner.run_async(user_id=USER, session_id=SESSION, new_message=message):
            for part in event.content.parts if event.content else []:
                if part.text:
                    print(f"{event.author}> {part.text}")
                elif call := part.function_call:
                    print(f"{event.author}> calls {call.name}({call.args})")

    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name=APP, user_id=USER, query="Lisbon")
    print(f"events stored: {len(session.events)}; state: {session.state}")
    print(f"memories about Lisbon: {len(found.memories)}")
    await runner.close()
    await sessions.close()


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(tempfile.mkdtemp()) / "adk.db")
    asyncio.run(main(target))
