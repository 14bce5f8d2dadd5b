"""Amendment 22 through the OpenAI Agents SDK adapter: a ``function_call_output`` added in its
own ``add_items`` call (as the SDK's runner does after running the tool) is stored named after
its call, and the items come back as they went in. On every backend."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents")

from threadline.integrations.openai_agents import ThreadlineSession

CALL = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "rain"}


def test_an_output_added_after_its_call_is_named_after_it(store: Any) -> None:
    session = ThreadlineSession("agents", store)
    asyncio.run(session.add_items([{"role": "user", "content": "weather?"}]))
    asyncio.run(session.add_items([CALL]))
    asyncio.run(session.add_items([OUTPUT]))
    history = session.threadline_session.get_history()
    assert history[-1]["parts"][0]["type"] == "tool-weather"
    assert asyncio.run(session.get_items())[1:] == [CALL, OUTPUT]
