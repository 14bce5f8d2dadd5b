"""``POST /v1/sessions/{id}/turns`` against a real server (SQLite file and PostgreSQL) and a
scripted OpenAI-compatible endpoint (a fake of the external LLM): a turn with a memory-tool
call then an answer, stored and announced; a user-bound key's turn cannot write app-wide blocks
(clarification 28); no model, a model variable not set, a failing endpoint: typed errors and
nothing stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from fake_openai import FakeOpenAI, error_reply, text_reply, tool_call_reply
from served import Server
from test_http_events import Subscriber
from turns_config import LLM_KEY, UNSET_ENV, store_profile


@pytest.fixture
def app() -> str:
    return f"llm-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def http(turns_server: Server, app: str, llm_endpoint: FakeOpenAI) -> Iterator[httpx.Client]:
    """An app-wide key of an app whose stored profile names the fake LLM."""
    with turns_server.client(turns_server.key(app)) as client:
        store_profile(client, llm_endpoint.url)
        yield client


def _history(http: httpx.Client, session: str) -> list[dict[str, object]]:
    answer = http.get(f"/v1/sessions/{session}/messages")
    if answer.status_code == 404:
        return []
    assert answer.status_code == 200, answer.text
    messages: list[dict[str, object]] = answer.json()["messages"]
    return messages


def test_a_turn_calls_a_memory_tool_answers_and_is_stored_and_announced(
    turns_server: Server, http: httpx.Client, app: str, llm: FakeOpenAI
) -> None:
    assert http.post("/v1/sessions", json={"session_id": "t1"}).status_code == 201
    llm.add(
        tool_call_reply("set_context", {"label": "memory", "content": "Likes tea."}, "call_1"),
        text_reply("Noted: you like tea."),
    )
    watcher = Subscriber(turns_server, turns_server.key(app), "t1")
    try:
        answer = http.post("/v1/sessions/t1/turns", json={"input": "I like tea."})
        assert answer.status_code == 200, answer.text
        watcher.wait_for(3, "message")
    finally:
        watcher.close()
    turn = answer.json()
    assert turn["session_id"] == "t1" and turn["stop_reason"] == "done"
    assert [m["role"] for m in turn["messages"]] == ["user", "assistant", "assistant"]
    call = turn["messages"][1]["parts"][0]
    assert call["type"] == "tool-set_context" and call["state"] == "output-available"
    assert call["output"].startswith("Written to memory")
    assert turn["output"]["parts"] == [{"type": "text", "text": "Noted: you like tea."}]
    assert [m["id"] for m in _history(http, "t1")] == [m["id"] for m in turn["messages"]]
    block = http.get("/v1/sessions/t1/blocks/memory").json()
    assert block["content"] == "Likes tea."
    # what the endpoint got: the bearer key, the tools, then the call and its result
    first, second = llm.requests
    assert first["headers"]["Authorization"] == f"Bearer {LLM_KEY}"
    assert [t["function"]["name"] for t in first["body"]["tools"]] == ["set_context"]
    assert [m["role"] for m in second["body"]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    invocations = {m["metadata"]["invocationId"] for m in turn["messages"]}
    assert len(invocations) == 1


def test_a_message_input_and_the_profiles_max_steps(http: httpx.Client, llm: FakeOpenAI) -> None:
    call = {"label": "memory", "content": "again"}
    llm.add(*(tool_call_reply("set_context", call) for _ in range(6)))
    answer = http.post(
        "/v1/sessions/t2/turns", json={"input": {"role": "user", "content": "Loop please."}}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["stop_reason"] == "max_steps"
    assert len(llm.requests) == 4  # the profile's max_steps
    assert answer.json()["messages"][0]["parts"][0]["text"] == "Loop please."


def test_a_user_bound_keys_turn_cannot_write_app_wide_blocks(
    turns_server: Server, app: str, http: httpx.Client, llm: FakeOpenAI
) -> None:
    with turns_server.client(turns_server.key(app, "ana")) as ana:
        llm.add(
            tool_call_reply("set_context", {"label": "rules", "content": "No refunds."}),
            tool_call_reply("set_context", {"label": "memory", "content": "Ana likes tea."}),
            text_reply("Done."),
        )
        answer = ana.post("/v1/sessions/ana-t/turns", json={"input": "Set the rules."})
        assert answer.status_code == 200, answer.text
        refused = answer.json()["messages"][1]["parts"][0]["output"]
        assert refused.startswith("Error"), refused
        offered = llm.requests[0]["body"]["tools"][0]["function"]["parameters"]
        assert offered["properties"]["label"]["enum"] == ["memory"]
        assert ana.get("/v1/sessions/ana-t/blocks/rules").json()["content"] == ""
        assert ana.get("/v1/sessions/ana-t/blocks/memory").json()["content"] == "Ana likes tea."
        assert ana.get("/v1/sessions/ana-t").json()["user_id"] == "ana"  # created as hers
    # an app-wide key's turn may write them
    with turns_server.client(turns_server.key(app)) as admin:
        llm.add(
            tool_call_reply("set_context", {"label": "rules", "content": "No refunds."}),
            text_reply("Done."),
        )
        answer = admin.post("/v1/sessions/admin-t/turns", json={"input": "Set the rules."})
        assert answer.status_code == 200, answer.text
        assert admin.get("/v1/sessions/admin-t/blocks/rules").json()["content"] == "No refunds."


def test_an_app_without_a_model_gets_a_typed_error_saying_how_to_set_one(
    turns_server: Server, llm: FakeOpenAI
) -> None:
    with turns_server.client(turns_server.key(f"plain-{uuid.uuid4().hex[:8]}")) as http:
        answer = http.post("/v1/sessions/t3/turns", json={"input": "hello"})
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["type"] == "InvalidArgumentError"
        assert "PUT /v1/profile" in error["message"] and '"model"' in error["message"]
        assert _history(http, "t3") == [] and llm.requests == []


def test_a_key_variable_not_set_on_the_server_is_named(http: httpx.Client, llm: FakeOpenAI) -> None:
    store_profile(http, llm.url, UNSET_ENV)
    answer = http.post("/v1/sessions/t4/turns", json={"input": "hello"})
    assert answer.status_code == 400, answer.text
    assert UNSET_ENV in answer.json()["error"]["message"]
    assert _history(http, "t4") == [] and llm.requests == []


def test_a_model_set_later_is_used_at_once_and_a_profile_without_one_refuses(
    turns_server: Server, llm: FakeOpenAI
) -> None:
    with turns_server.client(turns_server.key(f"later-{uuid.uuid4().hex[:8]}")) as http:
        assert http.put("/v1/profile", json={"runner": {"runs": 1}}).status_code == 200
        answer = http.post("/v1/sessions/t7/turns", json={"input": "hello"})
        assert answer.status_code == 400 and "PUT /v1/profile" in answer.text
        store_profile(http, llm.url)
        answer = http.post("/v1/sessions/t7/turns", json={"input": "hello"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["output"]["parts"][0]["text"] == "Echo: hello"


def test_a_failing_endpoint_is_a_502_and_nothing_is_stored(
    http: httpx.Client, llm: FakeOpenAI
) -> None:
    llm.add(text_reply("first answer"))
    assert http.post("/v1/sessions/t5/turns", json={"input": "one"}).status_code == 200
    llm.add(error_reply(503, f"overloaded (key {LLM_KEY})"))
    answer = http.post("/v1/sessions/t5/turns", json={"input": "two"})
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["type"] == "ModelError" and "HTTP 503" in error["message"]
    assert LLM_KEY not in answer.text
    assert [m["parts"][0]["text"] for m in _history(http, "t5")] == ["one", "first answer"]


def test_bad_bodies_are_422(http: httpx.Client) -> None:
    assert http.post("/v1/sessions/t6/turns", json={}).status_code == 422
    assert http.post("/v1/sessions/t6/turns", json={"input": 5}).status_code == 422
    assert http.post("/v1/sessions/t6/turns", json={"input": "x", "extra": 1}).status_code == 422
    answer = http.post(
        "/v1/sessions/t6/turns", json={"input": {"role": "assistant", "content": "hi"}}
    )
    assert answer.status_code == 400 and answer.json()["error"]["type"] == "InvalidArgumentError"
