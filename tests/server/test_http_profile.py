"""``GET/PUT /v1/profile`` and a service configured by stored profiles alone (no --config),
over a real uvicorn (integrations.md §18.1, api.md clarification 27)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from served import BACKENDS, Server, backend_db, start_server

from threadline import Profile, SessionManager
from threadline.compaction import create_compact_function
from threadline.store import connect
from threadline.summarizers import named

ALLOWED = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module", params=BACKENDS)
def bare(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server with no configure hook: only stored profiles configure its apps."""
    tmp = tmp_path_factory.mktemp("profiles")
    db = backend_db(request, request.param, tmp)
    store = connect(db)
    try:  # written before the server starts, as the demo does before `threadline serve`
        manager = SessionManager(store, "declared").with_context("memory", scope="user")
        manager = manager.with_context("soul", provider="Be brief.").on_compaction(
            create_compact_function(
                named({"type": "extractive"}), protect_head=0, tail_token_budget=0
            )
        )
        manager.save_profile()
    finally:
        store.close()
    running = start_server(
        db, tmp, config=None, serve_args=f", allow_models=['local={ALLOWED},LLM_KEY']"
    )
    try:
        yield running
    finally:
        running.stop()


def test_an_app_is_configured_from_its_stored_profile(bare: Server) -> None:
    with bare.client(bare.key("declared")) as http:
        assert http.post("/v1/sessions", json={"session_id": "s1", "user_id": "ana"}).is_success
        blocks = http.get("/v1/sessions/s1/blocks").json()["blocks"]
        assert [b["label"] for b in blocks] == ["memory", "soul"]
        put = http.put("/v1/sessions/s1/blocks/memory", json={"content": "Likes tea."})
        assert put.status_code == 200, put.text
        for text in ("Book a hotel in Oslo.", "Which dates?", "3 to 5 May.", "Thanks."):
            sent = http.post("/v1/sessions/s1/messages", json={"role": "user", "content": text})
            assert sent.is_success, sent.text
        compacted = http.post("/v1/sessions/s1/compact", json={})
        assert compacted.status_code == 200, compacted.text
        assert compacted.json()["result"]["summary"].strip()


def test_get_and_put_profile(bare: Server) -> None:
    with bare.client(bare.key("fresh")) as http:
        empty = http.get("/v1/profile").json()
        assert empty["version"] == 0 and empty["blocks"] == []
        document = {"blocks": [{"label": "notes", "max_tokens": 50}],
                    "compaction": {"summarizer": {"type": "extractive"}}}  # fmt: skip
        put = http.put("/v1/profile", json=document)
        assert put.status_code == 200, put.text
        assert put.json()["version"] == 1
        # the same worker serves the new blocks at once
        assert http.post("/v1/sessions", json={"session_id": "p1"}).is_success
        blocks = http.get("/v1/sessions/p1/blocks").json()["blocks"]
        assert [(b["label"], b["max_tokens"]) for b in blocks] == [("notes", 50)]
        # GET -> edit -> PUT round trip
        got = http.get("/v1/profile").json()
        got["blocks"].append({"label": "extra"})
        again = http.put("/v1/profile", json=got)
        assert again.status_code == 200 and again.json()["version"] == 2
    store = connect(bare.db)
    try:
        stored = Profile.load(store, "fresh")
    finally:
        store.close()
    assert stored is not None and [b["label"] for b in stored.blocks] == ["notes", "extra"]


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"blocks": [{"label": "x", "scope": "team"}]}, "blocks[0].scope"),
        ({"model": {"type": "openai", "base_url": "http://169.254.169.254/v1", "model": "m",
                    "api_key_env": "LLM_KEY"}}, "model"),
        ({"model": {"type": "openai", "base_url": ALLOWED, "model": "m",
                    "api_key_env": "AWS_SECRET_ACCESS_KEY"}}, "model"),
        ({"compaction": {"summarizer": {"type": "openai", "base_url": "http://evil.test/v1",
                                        "model": "m"}}}, "compaction.summarizer"),
        ({"blocks": [{"label": "s", "kind": "skill", "skills_dir": "/etc"}]},
         "blocks[0].skills_dir"),
    ],
)  # fmt: skip
def test_a_tenant_cannot_aim_the_profile(bare: Server, document: dict, path: str) -> None:
    with bare.client(bare.key("aimed")) as http:
        answer = http.put("/v1/profile", json=document)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["type"] == "InvalidArgumentError"
        assert error["message"].startswith(path + " ")
        assert http.get("/v1/profile").json()["version"] == 0


def test_an_allowed_model_is_accepted(bare: Server) -> None:
    model = {"type": "openai", "base_url": ALLOWED, "model": "m", "api_key_env": "LLM_KEY"}
    with bare.client(bare.key("allowed")) as http:
        answer = http.put("/v1/profile", json={"model": model})
        assert answer.status_code == 200, answer.text
        assert http.get("/v1/profile").json()["model"] == model


def test_a_user_bound_key_cannot_write_the_profile(bare: Server) -> None:
    with bare.client(bare.key("bound", "ana")) as http:
        assert http.get("/v1/profile").status_code == 200
        answer = http.put("/v1/profile", json={"blocks": []})
        assert answer.status_code == 403, answer.text


def test_a_profile_is_picked_up_by_a_running_server(bare: Server) -> None:
    store = connect(bare.db)
    try:
        with bare.client(bare.key("later")) as http:
            assert http.post("/v1/sessions", json={"session_id": "l1"}).is_success
            assert http.get("/v1/sessions/l1/blocks").json()["blocks"] == []
            Profile.from_dict({"blocks": [{"label": "late"}]}).save(store, "later")
            deadline = time.monotonic() + 5
            labels: list[str] = []
            while time.monotonic() < deadline and labels != ["late"]:
                labels = [b["label"] for b in http.get("/v1/sessions/l1/blocks").json()["blocks"]]
                time.sleep(0.2)
            assert labels == ["late"]
    finally:
        store.close()
