"""Amendment 11 over HTTP: the server's managers cache a ``Session`` per session; a session
deleted and created again by another process (here: the library on the same database) is a
new session, and the routes act on it — never on the frozen prompt, blocks or messages of
the old one they had cached."""

from __future__ import annotations

import uuid

from served import Server

import threadline


def test_routes_act_on_a_session_created_again_by_another_process(server: Server) -> None:
    app, s = f"gen-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app, user="ana")) as http:
        http.post(f"/v1/sessions/{s}/messages", json={"role": "user", "content": "old words"})
        put = http.put(f"/v1/sessions/{s}/blocks/memory", json={"content": "ana's old notes"})
        assert put.status_code == 200, put.text
        assert "ana's old notes" in http.get(f"/v1/sessions/{s}/prompt").json()["prompt"]

        with threadline.SessionManager(server.db, app_name=app) as other:
            other.delete(s)
            other.create(session_id=s, user_id="ana")
            other.append(s, {"id": "n1", "role": "user", "content": "new words"})

        block = http.get(f"/v1/sessions/{s}/blocks/memory")
        assert block.status_code == 200 and block.json()["content"] == "", block.text
        assert "ana's old notes" not in http.get(f"/v1/sessions/{s}/prompt").json()["prompt"]
        history = http.get(f"/v1/sessions/{s}/messages").json()["messages"]
        assert [m["id"] for m in history] == ["n1"]
        put = http.put(f"/v1/sessions/{s}/blocks/memory", json={"content": "new notes"})
        assert put.status_code == 200, put.text

    with threadline.connect(server.db) as store:
        assert store.get_block(app, "session", s, "memory") == "new notes"


def test_a_session_created_again_for_another_user_is_gone_for_the_first(server: Server) -> None:
    app, s = f"gen-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app)) as admin, server.client(server.key(app, "ana")) as ana:
        ana.post(f"/v1/sessions/{s}/messages", json={"role": "user", "content": "mine"})
        ana.put(f"/v1/sessions/{s}/blocks/memory", json={"content": "ana's notes"})
        assert admin.get(f"/v1/sessions/{s}/blocks/memory").json()["content"] == "ana's notes"
        with threadline.SessionManager(server.db, app_name=app) as other:
            other.delete(s)
            other.create(session_id=s, user_id="bob")
        assert ana.get(f"/v1/sessions/{s}/blocks/memory").status_code == 404
        assert admin.get(f"/v1/sessions/{s}/blocks/memory").json()["content"] == ""
        assert admin.get(f"/v1/sessions/{s}").json()["user_id"] == "bob"


def test_the_session_row_carries_its_generation(server: Server) -> None:
    app, s = f"gen-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app)) as http:
        first = http.post("/v1/sessions", json={"session_id": s}).json()["generation"]
        assert first > 0
        assert http.delete(f"/v1/sessions/{s}").status_code in (200, 204)
        again = http.post("/v1/sessions", json={"session_id": s}).json()
        assert again["generation"] not in (0, first)
        assert http.get(f"/v1/sessions/{s}").json()["generation"] == again["generation"]
