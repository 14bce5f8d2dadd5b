"""What the studio needs of the service, on SQLite and PostgreSQL against a real uvicorn:
``GET .../path`` (one root→leaf path a page at a time, for big sessions), ``GET /v1/key``
(what the key may write) and ``/docs`` / ``/redoc`` served with their own assets."""

from __future__ import annotations

import importlib.util
import uuid
from typing import Any

import pytest
from served import Server


def msg(mid: str) -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": mid}]}


def test_pages_back_from_the_head_with_children_and_branch_leaves(server: Server) -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app)) as http:
        base = "/v1/sessions/big"
        chain = [msg(f"m{i}") for i in range(1, 11)]
        assert http.post(f"{base}/messages", json={"messages": chain}).status_code == 201
        # A branch off m3 (b1 → b2), then the head goes back to m10.
        branch = {"messages": [msg("b1"), msg("b2")], "parent_id": "m3"}
        assert http.post(f"{base}/messages", json=branch).status_code == 201
        assert http.put(f"{base}/head", json={"leaf_id": "m10"}).status_code == 200

        first = http.get(f"{base}/path", params={"limit": 4}).json()
        assert first["head_id"] == "m10" and first["leaf_id"] == "m10"
        assert [n["message"]["id"] for n in first["nodes"]] == ["m7", "m8", "m9", "m10"]
        assert [n["depth"] for n in first["nodes"]] == [7, 8, 9, 10]
        assert first["nodes"][0]["parent_id"] == "m6" and first["has_more"] is True
        assert first["nodes"][-1]["children"] == []

        older = http.get(f"{base}/path", params={"limit": 4, "before": "m7"}).json()
        assert [n["message"]["id"] for n in older["nodes"]] == ["m3", "m4", "m5", "m6"]
        assert older["nodes"][0]["children"] == ["m4", "b1"]  # where the branch forks
        assert older["nodes"][0]["parent_id"] == "m2"
        oldest = http.get(f"{base}/path", params={"limit": 4, "before": "m3"}).json()
        assert [n["message"]["id"] for n in oldest["nodes"]] == ["m1", "m2"]
        assert oldest["has_more"] is False and oldest["nodes"][0]["parent_id"] is None

        # A branch opens at its own leaf: descend from its first message.
        down = http.get(f"{base}/path", params={"descend": "b1", "limit": 3}).json()
        assert down["leaf_id"] == "b2"
        assert [n["message"]["id"] for n in down["nodes"]] == ["m3", "b1", "b2"]
        to = http.get(f"{base}/path", params={"leaf_id": "m2"}).json()
        assert [n["message"]["id"] for n in to["nodes"]] == ["m1", "m2"]

        empty = http.post("/v1/sessions", json={"session_id": "empty"})
        assert empty.status_code == 201
        nothing = http.get("/v1/sessions/empty/path").json()
        assert nothing == {"head_id": None, "leaf_id": None, "nodes": [], "has_more": False}
        missing = http.get(f"{base}/path", params={"before": "nope"})
        assert missing.status_code == 404
        assert http.get(f"{base}/path", params={"descend": "nope"}).status_code == 404
        assert http.get(f"{base}/path", params={"limit": 0}).status_code in (400, 422)


def test_the_key_says_what_it_reaches(server: Server) -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app)) as http:
        assert http.get("/v1/key").json() == {"app": app, "user": None}
    with server.client(server.key(app, "ana")) as http:
        assert http.get("/v1/key").json() == {"app": app, "user": "ana"}
    with server.client("tl_nothere_wrong") as http:
        assert http.get("/v1/key").status_code == 401


def test_the_api_docs_need_no_cdn(server: Server) -> None:
    if importlib.util.find_spec("fastapi_offline") is None:
        pytest.skip("fastapi-offline (the server extra) is not installed")
    with server.client() as anonymous:
        for page, assets in (
            ("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")),
            ("/redoc", ("redoc.standalone.js",)),
        ):
            html = anonymous.get(page)
            assert html.status_code == 200
            assert "cdn." not in html.text and "fonts.googleapis" not in html.text
            for asset in assets:
                assert f"/docs-assets/{asset}" in html.text
                served = anonymous.get(f"/docs-assets/{asset}")
                assert served.status_code == 200 and len(served.content) > 100_000
