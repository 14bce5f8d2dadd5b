"""Tenancy and auth against a real server: a key reaches only its app (and its user), and
every other tenant's data is missing (404) — sessions, messages, search hits, blocks, state,
also through cross-session search; missing, unknown and revoked keys get 401."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from served import Server, start_server

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
        ("GET", f"/v1/sessions/{s}/messages/{m}/path_length", None),
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
        assert http.get("/v1/export", params={"session_id": session}).status_code == 404
        assert http.get("/v1/export").text == ""
        # Writes naming the id create app A's own session of that name: B's stays unseen.
        for method, path, body in (
            ("PATCH", f"/v1/sessions/{session}/state", {"pin": "0000"}),
            ("POST", f"/v1/sessions/{session}/usage", {"input_tokens": 1, "output_tokens": 1}),
            ("PUT", f"/v1/sessions/{session}/blocks/memory", {"content": "stolen"}),
            ("POST", f"/v1/sessions/{session}/messages", {"role": "user", "content": "mine"}),
        ):
            answer = http.request(method, path, json=body)
            assert answer.status_code in (200, 201), (method, path, answer.text)
        mine = http.get(f"/v1/sessions/{session}/messages").json()["messages"]
        assert [m["parts"][0]["text"] for m in mine] == ["mine"]
        assert http.get(f"/v1/sessions/{session}/state").json()["state"] == {"pin": "0000"}
        assert http.get("/v1/search", params={"q": SECRET}).json() == {"hits": []}
        assert SECRET not in http.get("/v1/export").text
    _assert_untouched(server, app_b, session)
    with server.client(server.key(app_b)) as owner:
        assert owner.get(f"/v1/sessions/{session}/state").json()["state"] == {"pin": "1234"}
        info = owner.get(f"/v1/sessions/{session}").json()
        assert (info["input_tokens"], info["app_name"]) == (0, app_b)


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


# create_app's default key_cache_ttl: docs/server.md promises a revoked key is refused within
# it; the margin absorbs a loaded machine.
KEY_CACHE_TTL = 1.0
MARGIN = 1.5


def _refused_after(http: httpx.Client, path: str = "/v1/sessions") -> float:
    """Seconds until ``path`` answers 401 (polled every 20 ms, at most 10 s)."""
    start = time.monotonic()
    while time.monotonic() - start < 10:
        answer = http.get(path)
        if answer.status_code == 401:
            assert "revoked" in answer.json()["error"]["message"]
            return time.monotonic() - start
        assert answer.status_code == 200, answer.text
        time.sleep(0.02)
    raise AssertionError("a revoked key was still served after 10 s")


def test_a_revoked_key_gets_401_within_the_key_cache_ttl(server: Server) -> None:
    key = server.key(f"r-{uuid.uuid4().hex[:8]}")
    with server.client(key) as http:
        for _ in range(3):  # the key is now remembered by the worker
            assert http.get("/v1/sessions").status_code == 200
        assert revoke_key(server.db, key_id_of(key)) is True
        assert _refused_after(http) <= KEY_CACHE_TTL + MARGIN
        assert http.get("/v1/sessions").status_code == 401  # and stays refused


@pytest.fixture(scope="module")
def uncached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that looks every key up (``THREADLINE_KEY_CACHE_TTL=0``), two workers."""
    tmp = tmp_path_factory.mktemp("uncached")
    db = f"sqlite:///{(tmp / 'u.db').as_posix()}"
    running = start_server(db, tmp, workers=2, env_extra={"THREADLINE_KEY_CACHE_TTL": "0"})
    try:
        yield running
    finally:
        running.stop()


def test_without_the_key_cache_a_revoked_key_gets_401_at_once(uncached: Server) -> None:
    key = uncached.key("r")
    with uncached.client(key) as http:
        assert http.get("/v1/sessions").status_code == 200
        assert revoke_key(uncached.db, key_id_of(key)) is True
        for _ in range(4):  # whichever worker answers
            answer = http.get("/v1/sessions")
            assert answer.status_code == 401 and "revoked" in answer.json()["error"]["message"]


@pytest.mark.parametrize("header", [None, "Bearer nope"])
def test_without_a_valid_key_nothing_else_of_the_request_is_looked_at(
    server: Server, header: str | None
) -> None:
    """401 comes before body parsing, validation, routing and the body-size cap."""
    headers = {"Authorization": header} if header is not None else {}
    with server.client(**headers) as http:
        for answer in (
            http.post("/v1/sessions", content=b"{not json"),
            http.post("/v1/sessions", json={"bogus": 1}),
            http.post("/v1/sessions/s/usage", json={"input_tokens": -1}),
            http.get("/v1/sessions", params={"limit": "many"}),
            http.get("/v1/sessions/s/messages", params={"runs": -1}),
            http.post("/v1/sessions/s/messages", content=b"x" * (70 * 2**20)),  # over the cap
            http.get("/v1/nowhere"),
            http.put("/v1/sessions"),
        ):
            assert answer.status_code == 401, (answer.request.url, answer.text)
            assert answer.json()["error"]["type"] == "Unauthorized"
            assert answer.headers["www-authenticate"] == "Bearer"
    with server.client(server.key("valid")) as http:  # a valid key gets the usual answers
        assert http.post("/v1/sessions", content=b"{not json").status_code == 422
        assert http.get("/v1/nowhere").status_code == 404
    assert server.client().get("/healthz").status_code == 200  # outside /v1: no key


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
