"""Tenancy and auth against a real server: a key reaches only its app (and its user), and
every other tenant's data is missing (404) — sessions, messages, search hits, blocks, state,
also through cross-session search; missing, unknown and revoked keys get 401."""

from __future__ import annotations

import uuid

import pytest
from served import Server

from threadline.server import key_id_of, revoke_key

SECRET = "kumquatsecret"


def _routes(s: str) -> list[tuple[str, str, dict[str, object] | None]]:
    """Every route that names a session, with a plausible body."""
    m = "m1"
    return [
        ("GET", f"/v1/sessions/{s}", None),
        ("PATCH", f"/v1/sessions/{s}", {"name": "stolen"}),
        ("DELETE", f"/v1/sessions/{s}", None),
        ("POST", f"/v1/sessions/{s}/fork", {}),
        ("POST", f"/v1/sessions/{s}/rewind", {"before_message_id": m}),
        ("GET", f"/v1/sessions/{s}/messages", None),
        ("DELETE", f"/v1/sessions/{s}/messages", None),
        ("GET", f"/v1/sessions/{s}/tree", None),
        ("GET", f"/v1/sessions/{s}/messages/{m}", None),
        ("PUT", f"/v1/sessions/{s}/messages/{m}", {"role": "user", "content": "x"}),
        ("DELETE", f"/v1/sessions/{s}/messages/{m}", None),
        ("GET", f"/v1/sessions/{s}/messages/{m}/branches", None),
        ("GET", f"/v1/sessions/{s}/head", None),
        ("PUT", f"/v1/sessions/{s}/head", {"leaf_id": m}),
        ("GET", f"/v1/sessions/{s}/search?q={SECRET}", None),
        ("GET", f"/v1/sessions/{s}/blocks", None),
        ("GET", f"/v1/sessions/{s}/blocks/memory", None),
        ("GET", f"/v1/sessions/{s}/prompt", None),
        ("POST", f"/v1/sessions/{s}/prompt/refresh", None),
        ("GET", f"/v1/sessions/{s}/tools", None),
        ("POST", f"/v1/sessions/{s}/tools/set_context", {"label": "memory", "content": "x"}),
        ("POST", f"/v1/sessions/{s}/compact", {}),
        ("GET", f"/v1/sessions/{s}/compactions", None),
        ("GET", f"/v1/sessions/{s}/state", None),
        ("GET", f"/v1/sessions/{s}/attachments/sha256:{'0' * 64}", None),
        ("GET", f"/v1/sessions/{s}/events", None),
    ]


def _victim(server: Server, app: str, session: str, user: str | None) -> None:
    with server.client(server.key(app)) as http:
        http.post("/v1/sessions", json={"session_id": session, "user_id": user})
        http.post(
            f"/v1/sessions/{session}/messages",
            json={"id": "m1", "role": "user", "content": f"the {SECRET} is here"},
        )
        http.put(f"/v1/sessions/{session}/blocks/memory", json={"content": "private"})
        http.patch(f"/v1/sessions/{session}/state", json={"pin": "1234"})


def _assert_untouched(server: Server, app: str, session: str) -> None:
    with server.client(server.key(app)) as http:
        info = http.get(f"/v1/sessions/{session}").json()
        assert info["name"] is None and info["message_count"] == 1
        assert http.get(f"/v1/sessions/{session}/head").json()["head_id"] == "m1"
        block = http.get(f"/v1/sessions/{session}/blocks/memory").json()
        assert block["content"] == "private"


def test_a_key_of_another_app_gets_404_everywhere(server: Server) -> None:
    app_a, app_b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    session = f"s-{uuid.uuid4().hex[:8]}"
    _victim(server, app_b, session, None)
    with server.client(server.key(app_a)) as http:
        for method, path, body in _routes(session):
            answer = http.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json()["error"]["type"].endswith("NotFoundError"), (method, path)
        assert http.get("/v1/search", params={"q": SECRET}).json() == {"hits": []}
        assert http.get("/v1/sessions").json()["sessions"] == []
    _assert_untouched(server, app_b, session)


def test_a_user_bound_key_reaches_only_its_users_sessions(server: Server) -> None:
    app = f"u-{uuid.uuid4().hex[:8]}"
    session = f"s-{uuid.uuid4().hex[:8]}"
    _victim(server, app, session, "bob")
    with server.client(server.key(app, user="ana")) as http:
        for method, path, body in _routes(session):
            answer = http.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        assert http.get("/v1/search", params={"q": SECRET}).json() == {"hits": []}
        assert http.get("/v1/search", params={"q": SECRET, "user_id": "bob"}).json() == {"hits": []}
        assert http.get("/v1/sessions", params={"user_id": "bob"}).json()["sessions"] == []
        assert http.delete("/v1/users/bob").status_code == 404
        # writing to bob's session id is refused too (it is not ana's to create or append to)
        post = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "content": "x"})
        assert post.status_code == 404
        # ana's own sessions work, and are hers whatever the body says
        mine = http.post("/v1/sessions", json={"session_id": f"{session}-ana"})
        assert mine.status_code == 201 and mine.json()["user_id"] == "ana"
        assert http.post("/v1/sessions", json={"user_id": "bob"}).status_code == 400
        listed = http.get("/v1/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [f"{session}-ana"]
    _assert_untouched(server, app, session)
    with server.client(server.key(app)) as admin:  # an app-wide key sees both
        assert {
            h["session_id"] for h in admin.get("/v1/search", params={"q": SECRET}).json()["hits"]
        } == {session}


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer"])
def test_missing_or_unknown_keys_get_401(server: Server, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    with server.client(**headers) as http:
        answer = http.get("/v1/sessions")
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "Unauthorized"
        assert http.get("/v1/sessions/x/events", params={"access_token": "nope"}).status_code == 401


def test_a_revoked_key_gets_401_at_once(server: Server) -> None:
    key = server.key(f"r-{uuid.uuid4().hex[:8]}")
    with server.client(key) as http:
        assert http.get("/v1/sessions").status_code == 200
        assert revoke_key(server.db, key_id_of(key)) is True
        answer = http.get("/v1/sessions")
        assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]


def test_the_events_route_takes_the_key_as_access_token(server: Server) -> None:
    key = server.key("tokens")
    with server.client(key) as http:
        http.post("/v1/sessions", json={"session_id": "ev"})
    with (
        server.client() as anonymous,
        anonymous.stream("GET", "/v1/sessions/ev/events", params={"access_token": key}) as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    log = server.log.read_text(errors="replace")
    assert "access_token=***" in log and key not in log  # the access log hides the key
