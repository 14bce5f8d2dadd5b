"""``GET /v1/sessions/{id}/context`` against a real server (SQLite file and PostgreSQL): its
numbers equal ``Runner.context`` computed in this process over the same store, and what the
model endpoint (a scripted fake of the external LLM) receives on the next turn is what it
showed: the same system prompt, block by block, and the same window. Defaults come from the
app's stored profile (``runner``, written through ``PUT /v1/profile``); query parameters
override them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_openai import FakeOpenAI
from served import Server
from server_config import configure as configure_app
from turns_config import RUNNER, store_profile

import threadline
from threadline import Runner, SessionManager


@pytest.fixture
def app() -> str:
    return f"llm-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def http(turns_server: Server, app: str, llm_endpoint: FakeOpenAI) -> Iterator[httpx.Client]:
    with turns_server.client(turns_server.key(app)) as client:
        store_profile(client, llm_endpoint.url)
        yield client


def _runner_here(server: Server, app: str, **limits: Any) -> tuple[Runner, Any]:
    """The app as the server configures it (its stored profile, the hook on top), in this
    process, over the same store."""
    store = threadline.connect(server.db)
    manager = configure_app(SessionManager.from_profile(store, app_name=app))
    assert manager.profile is not None and manager.profile.runner["runs"] == RUNNER["runs"]
    return Runner(manager, lambda s, m, t: "unused", **limits), store


def _turns(http: httpx.Client, session: str, count: int) -> None:
    for i in range(count):
        answer = http.post(
            f"/v1/sessions/{session}/turns",
            json={"input": f"question {i}: hotels near the beach in Porto?"},
        )
        assert answer.status_code == 200, answer.text


def _context(http: httpx.Client, session: str, **params: Any) -> dict[str, Any]:
    answer = http.get(f"/v1/sessions/{session}/context", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_route_is_the_runners_view_and_what_the_model_then_gets(
    turns_server: Server, http: httpx.Client, app: str, llm: FakeOpenAI
) -> None:
    session = "ctx-1"
    put = http.put(f"/v1/sessions/{session}/blocks/memory", json={"content": "Likes quiet."})
    assert put.status_code == 200, put.text
    _turns(http, session, 5)

    shown = _context(http, session)
    runner, store = _runner_here(turns_server, app, runs=RUNNER["runs"])
    try:
        assert shown == runner.context(session).to_dict()
    finally:
        store.close()
    assert shown["runs"] == 3 and shown["max_context_tokens"] is None  # the profile's
    assert [b["label"] for b in shown["system"]["blocks"]] == ["soul", "memory", "rules"]
    assert "Likes quiet." in shown["system"]["blocks"][1]["text"]
    assert len(shown["messages"]) == 6 and len(shown["dropped"]) == 4  # 3 runs of 5

    llm.requests.clear()
    _turns(http, session, 1)
    sent = llm.requests[0]["body"]["messages"]
    system = "\n\n".join(b["text"] for b in shown["system"]["blocks"])
    assert sent[0] == {"role": "system", "content": system}
    assert [m["role"] for m in sent[1:-1]] == [m["role"] for m in shown["messages"]]
    history = http.get(f"/v1/sessions/{session}/messages").json()["messages"]
    by_id = {m["id"]: m for m in history}
    assert [m["content"] for m in sent[1:-1]] == [
        by_id[m["id"]]["parts"][0]["text"] for m in shown["messages"]
    ]


def test_query_parameters_override_the_profile_and_the_budget_drops_history(
    turns_server: Server, http: httpx.Client, app: str, llm: FakeOpenAI
) -> None:
    session = "ctx-2"
    _turns(http, session, 6)
    shown = _context(http, session, runs=5, max_context_tokens=150)
    runner, store = _runner_here(turns_server, app, runs=5, max_context_tokens=150)
    try:
        assert shown == runner.context(session).to_dict()
    finally:
        store.close()
    totals = shown["totals"]
    assert shown["runs"] == 5 and totals["budget"] == 150
    assert totals["total"] == totals["system"] + totals["history"] <= 150
    assert totals["history"] == sum(m["tokens"] for m in shown["messages"])
    assert shown["dropped"] and len(shown["messages"]) < 10
    everything = http.get(f"/v1/sessions/{session}/messages").json()["messages"]
    ids = [m["id"] for m in shown["dropped"] + shown["messages"]]
    assert ids == [m["id"] for m in everything]
    assert shown["dropped_count"] == len(shown["dropped"])
    assert totals["dropped"] == sum(m["tokens"] for m in shown["dropped"])
    # a long session: list only the newest of what falls out, count all of it
    few = _context(http, session, runs=5, max_context_tokens=150, dropped_limit=1)
    assert few["dropped"] == shown["dropped"][-1:]
    assert few["dropped_count"] == shown["dropped_count"] and few["totals"] == totals


def test_a_session_of_another_user_or_none_is_missing_and_bad_values_are_422(
    turns_server: Server, app: str, http: httpx.Client
) -> None:
    with turns_server.client(turns_server.key(app)) as admin:
        assert admin.post("/v1/sessions", json={"session_id": "ana-s", "user_id": "ana"}).is_success
        assert admin.get("/v1/sessions/nope/context").status_code == 404
        assert admin.get("/v1/sessions/ana-s/context", params={"runs": -1}).status_code == 422
        bad = admin.get("/v1/sessions/ana-s/context", params={"max_context_tokens": "x"})
        assert bad.status_code == 422
    with turns_server.client(turns_server.key(app, "bob")) as bob:
        answer = bob.get("/v1/sessions/ana-s/context")
        assert (
            answer.status_code == 404 and answer.json()["error"]["type"] == "SessionNotFoundError"
        )
    with turns_server.client(turns_server.key(app, "ana")) as ana:
        assert ana.get("/v1/sessions/ana-s/context").json()["messages"] == []


def test_without_a_profile_there_are_no_defaults(turns_server: Server) -> None:
    with turns_server.client(turns_server.key(f"plain-{uuid.uuid4().hex[:8]}")) as http:
        assert http.post("/v1/sessions", json={"session_id": "p"}).status_code == 201
        shown = _context(http, "p")
        assert shown["runs"] is None and shown["max_context_tokens"] is None
        assert [b["label"] for b in shown["system"]["blocks"]] == ["soul", "memory", "rules"]
