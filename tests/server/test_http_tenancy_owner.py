"""Tenancy beyond "another app, another user" against a real server: a user-bound key reaches
only sessions owned by exactly its user (not the owner-less sessions an app-wide key made),
reads only attachments of the session in the path, may not write app-wide data (``app:`` state,
app-scoped blocks: 403), and an open event stream ends once its key is revoked."""

from __future__ import annotations

import base64
import time
import uuid

import httpx
from served import Server
from test_http_tenancy import SECRET, _assert_untouched, _routes, _victim

from threadline.server import key_id_of, revoke_key


def _app() -> str:
    return f"o-{uuid.uuid4().hex[:8]}"


def test_a_user_bound_key_does_not_reach_owner_less_sessions(server: Server) -> None:
    app, shared = _app(), f"shared-{uuid.uuid4().hex[:8]}"
    _victim(server, app, shared, None)  # made by an app-wide key: no owner
    with server.client(server.key(app, user="ana")) as http:
        for method, path, body in _routes(shared):
            answer = http.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
            assert answer.json()["error"]["type"].endswith("NotFoundError"), (method, path)
        for method, path, body in (
            ("POST", f"/v1/sessions/{shared}/messages", {"role": "user", "content": "x"}),
            ("PUT", f"/v1/sessions/{shared}/blocks/memory", {"content": "stolen"}),
            ("POST", f"/v1/sessions/{shared}/blocks/memory", {"content": "stolen"}),
            ("PATCH", f"/v1/sessions/{shared}/state", {"pin": "0000"}),
            ("POST", f"/v1/sessions/{shared}/usage", {"input_tokens": 1, "output_tokens": 1}),
        ):
            answer = http.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        assert http.get("/v1/export", params={"session_id": shared}).status_code == 404
        assert shared not in http.get("/v1/export").text
        assert http.get("/v1/search", params={"q": SECRET}).json() == {"hits": []}
        assert http.get("/v1/sessions").json()["sessions"] == []
    _assert_untouched(server, app, shared)
    with server.client(server.key(app)) as admin:
        assert admin.get(f"/v1/sessions/{shared}/state").json()["state"] == {"pin": "1234"}


def _with_attachment(http: httpx.Client, session: str, blob: bytes) -> str:
    """Append a message with a file part to ``session``; its attachment's ``sha256:<hex>``."""
    image = "data:image/png;base64," + base64.b64encode(blob).decode()
    part = {"type": "file", "mediaType": "image/png", "url": image}
    made = http.post(f"/v1/sessions/{session}/messages", json={"role": "user", "parts": [part]})
    assert made.status_code == 201, made.text
    refs = http.get(f"/v1/sessions/{session}/messages", params={"attachments": "ref"}).json()
    return f"sha256:{refs['messages'][-1]['parts'][0]['url']['$threadline.attachment']}"


def test_an_attachment_is_served_only_through_a_session_that_refers_to_it(
    server: Server,
) -> None:
    app = _app()
    mine, theirs = f"ana-{uuid.uuid4().hex[:8]}", f"bob-{uuid.uuid4().hex[:8]}"
    ana_blob, bob_blob = bytes(range(256)) * 1024, bytes(reversed(range(256))) * 1024
    with server.client(server.key(app, user="bob")) as bob:
        bob_ref = _with_attachment(bob, theirs, bob_blob)
    with server.client(server.key(app, user="ana")) as ana:
        ana_ref = _with_attachment(ana, mine, ana_blob)
        assert ana.get(f"/v1/sessions/{mine}/attachments/{ana_ref}").content == ana_blob
        stolen = ana.get(f"/v1/sessions/{mine}/attachments/{bob_ref}")
        assert stolen.status_code == 404
        assert stolen.json()["error"]["type"] == "AttachmentNotFoundError"
        assert bob_ref[7:] not in stolen.text
    with server.client(server.key(app)) as admin:  # every key: only through a referring session
        assert admin.get(f"/v1/sessions/{theirs}/attachments/{bob_ref}").content == bob_blob
        assert admin.get(f"/v1/sessions/{theirs}/attachments/{ana_ref}").status_code == 404
        forked = admin.post(f"/v1/sessions/{mine}/fork", json={}).json()["id"]
        assert admin.get(f"/v1/sessions/{forked}/attachments/{ana_ref}").content == ana_blob


def test_a_user_bound_key_may_not_write_app_wide_data(server: Server) -> None:
    app = _app()
    mine = f"ana-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app, user="ana")) as ana:
        ana.post(f"/v1/sessions/{mine}/messages", json={"role": "user", "content": "hi"})
        for method, path, body in (
            ("PATCH", f"/v1/sessions/{mine}/state", {"topic": "x", "app:currency": "XXX"}),
            ("POST", "/v1/sessions", {"session_id": f"{mine}-2", "state": {"app:k": 1}}),
            (
                "POST",
                f"/v1/sessions/{mine}/messages",
                {"messages": [{"role": "user", "content": "x"}], "state_delta": {"app:k": 1}},
            ),
            ("PUT", f"/v1/sessions/{mine}/blocks/rules", {"content": "Everything is free."}),
            ("POST", f"/v1/sessions/{mine}/blocks/rules", {"content": "Everything is free."}),
            (
                "POST",
                f"/v1/sessions/{mine}/tools/set_context",
                {"label": "rules", "content": "Everything is free."},
            ),
        ):
            answer = ana.request(method, path, json=body)
            assert answer.status_code == 403, (method, path, answer.text)
            assert answer.json()["error"]["type"] == "Forbidden", (method, path)
        # nothing of those was written
        assert ana.get(f"/v1/sessions/{mine}/state").json()["state"] == {}
        assert ana.get(f"/v1/sessions/{mine}/head").json()["head_id"] is not None
        assert len(ana.get(f"/v1/sessions/{mine}/messages").json()["messages"]) == 1
        assert ana.get(f"/v1/sessions/{mine}-2").status_code == 404
        assert ana.get(f"/v1/sessions/{mine}/blocks/rules").json()["content"] == ""
        # her own data is hers to write
        own = ana.patch(f"/v1/sessions/{mine}/state", json={"user:lang": "pt", "topic": "x"})
        assert own.status_code == 200 and own.json()["state"] == {"user:lang": "pt", "topic": "x"}
        assert ana.put(f"/v1/sessions/{mine}/blocks/memory", json={"content": "Tea."}).is_success
    with server.client(server.key(app)) as admin:  # an app-wide key writes app-wide data
        assert admin.patch(f"/v1/sessions/{mine}/state", json={"app:currency": "EUR"}).is_success
        put = admin.put(f"/v1/sessions/{mine}/blocks/rules", json={"content": "Be kind."})
        assert put.status_code == 200, put.text
    with server.client(server.key(app, user="ana")) as ana:  # ... which users then read
        assert ana.get(f"/v1/sessions/{mine}/blocks/rules").json()["content"] == "Be kind."
        assert ana.get(f"/v1/sessions/{mine}/state").json()["state"]["app:currency"] == "EUR"


def test_an_open_event_stream_ends_once_its_key_is_revoked(server: Server) -> None:
    app = _app()
    key = server.key(app, user="ana")
    with server.client(key) as http:
        http.post("/v1/sessions", json={"session_id": "watched"})
        with http.stream("GET", "/v1/sessions/watched/events") as stream:
            assert stream.status_code == 200
            lines = stream.iter_lines()
            assert next(lines) == ": subscribed"
            assert revoke_key(server.db, key_id_of(key)) is True
            start = time.monotonic()
            for _ in lines:  # keepalives at most; ends when the server closes the stream
                assert time.monotonic() - start < 20, "the stream outlived its key"
            # the key cache (1 s) plus the stream's recheck interval (5 s), with a margin
            assert time.monotonic() - start < 12
