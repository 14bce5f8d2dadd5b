"""Amendment 22 over HTTP: a tool result posted after its call (the agent-loop order) is
stored named after the call; the call's row is unchanged."""

from __future__ import annotations

from served import Server


def test_a_result_posted_after_its_call_is_named_after_it(server: Server) -> None:
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
        ],
    }
    with server.client(server.key("tools")) as http:
        path = "/v1/sessions/loop/messages"
        posted_call = http.post(path, json=call)
        assert posted_call.status_code == 201, posted_call.text
        answer = http.post(path, json={"role": "tool", "tool_call_id": "c1", "content": "rain"})
        assert answer.status_code == 201, answer.text
        assert answer.json()["parts"][0]["type"] == "tool-weather"
        history = http.get(path).json()["messages"]
        assert [m["parts"][0]["type"] for m in history] == ["tool-weather", "tool-weather"]
        assert history[0] == posted_call.json()
        assert history[1]["parts"][0]["toolName"] == "weather"
