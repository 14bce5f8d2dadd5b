"""Every resource of the HTTP service against a real uvicorn process, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from served import Server


def sid() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


def user(text: str, mid: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": text}]}
    if mid:
        message["id"] = mid
    return message


def test_sessions_create_list_read_rename_usage_fork_delete(server: Server) -> None:
    app = f"app-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(app)) as http:
        made = http.post(
            "/v1/sessions",
            json={"name": "Trip", "session_id": "trip", "user_id": "ana", "state": {"k": 1}},
        )
        assert made.status_code == 201, made.text
        info = made.json()
        assert (info["id"], info["app_name"], info["user_id"], info["name"]) == (
            "trip", app, "ana", "Trip",
        )  # fmt: skip
        assert info["created_at"].endswith("Z") and info["updated_at"].endswith("Z")
        assert http.post("/v1/sessions", json={"session_id": "trip"}).status_code == 409
        generated = http.post("/v1/sessions", json={}).json()["id"]
        page = http.get("/v1/sessions", params={"limit": 1}).json()
        assert len(page["sessions"]) == 1 and page["next_cursor"]
        rest = http.get("/v1/sessions", params={"cursor": page["next_cursor"]}).json()
        assert {s["id"] for s in page["sessions"] + rest["sessions"]} == {"trip", generated}
        mine = http.get("/v1/sessions", params={"user_id": "ana"}).json()["sessions"]
        assert [s["id"] for s in mine] == ["trip"]
        renamed = http.patch("/v1/sessions/trip", json={"name": "Lisbon"}).json()
        assert renamed["name"] == "Lisbon"
        usage = http.post("/v1/sessions/trip/usage", json={"input_tokens": 10, "output_tokens": 2})
        assert (usage.json()["input_tokens"], usage.json()["output_tokens"]) == (10, 2)
        http.post("/v1/sessions/trip/messages", json=user("hello", "m1"))
        http.post("/v1/sessions/trip/messages", json=user("again", "m2"))
        fork = http.post("/v1/sessions/trip/fork", json={"at_message_id": "m1", "name": "Alt"})
        assert fork.status_code == 201
        child = fork.json()
        assert (child["parent_session_id"], child["message_count"]) == ("trip", 1)
        assert http.delete(f"/v1/sessions/{child['id']}").status_code == 204
        assert http.get(f"/v1/sessions/{child['id']}").status_code == 404
        assert http.delete(f"/v1/sessions/{child['id']}").status_code == 404


def test_messages_history_tree_branches_head_update_delete(server: Server) -> None:
    s = sid()
    with server.client(server.key("msgs")) as http:
        one = http.post(f"/v1/sessions/{s}/messages", json=user("Deploy on Friday?", "q1"))
        assert one.status_code == 201 and one.json()["id"] == "q1"
        batch = http.post(
            f"/v1/sessions/{s}/messages",
            json={"messages": [{"id": "a1", "role": "assistant", "content": "Yes"}, user("ok")]},
        )
        assert batch.status_code == 201 and len(batch.json()["messages"]) == 2
        branch = http.post(
            f"/v1/sessions/{s}/messages",
            params={"parent_id": "q1"},
            json={"id": "a2", "role": "assistant", "content": "No"},
        )
        assert branch.status_code == 201
        history = http.get(f"/v1/sessions/{s}/messages").json()["messages"]
        assert [m["id"] for m in history] == ["q1", "a2"]  # the head followed the branch
        assert [
            m["id"] for m in http.get(f"/v1/sessions/{s}/messages/q1/branches").json()["messages"]
        ] == ["a1", "a2"]
        tree = http.get(f"/v1/sessions/{s}/tree").json()
        assert tree["head_id"] == "a2" and tree["next_after_seq"] is None
        assert [(n["message"]["id"], n["parent_id"]) for n in tree["nodes"]][:2] == [
            ("q1", None), ("a1", "q1"),
        ]  # fmt: skip
        leaf = tree["nodes"][2]["message"]["id"]
        assert http.put(f"/v1/sessions/{s}/head", json={"leaf_id": leaf}).json() == {
            "head_id": leaf
        }
        assert http.get(f"/v1/sessions/{s}/head").json()["head_id"] == leaf
        assert (
            len(http.get(f"/v1/sessions/{s}/messages", params={"limit": 2}).json()["messages"]) == 2
        )
        got = http.get(f"/v1/sessions/{s}/messages/a1").json()
        assert got["parts"] == [{"type": "text", "text": "Yes"}]
        put = http.put(f"/v1/sessions/{s}/messages/a1", json={"role": "assistant", "content": "Y"})
        assert put.status_code == 200 and put.json()["parts"][0]["text"] == "Y"
        assert http.get(f"/v1/sessions/{s}/messages/nope").status_code == 404
        assert http.delete(f"/v1/sessions/{s}/messages/a2").status_code == 204
        assert http.delete(f"/v1/sessions/{s}/messages/a2").status_code == 404
        rewound = http.post(f"/v1/sessions/{s}/rewind", json={"before_message_id": "a1"})
        assert rewound.json()["head_id"] == "q1"
        assert http.delete(f"/v1/sessions/{s}/messages").status_code == 204
        assert http.get(f"/v1/sessions/{s}/messages").json() == {"messages": []}


def test_search_one_session_and_across_the_app(server: Server) -> None:
    a, b = sid(), sid()
    with server.client(server.key("searching")) as http:
        http.post(f"/v1/sessions/{a}/messages", json=user("The zebrafish tank needs cleaning"))
        http.post(f"/v1/sessions/{b}/messages", json=user("A zebrafish joke"))
        hits = http.get(f"/v1/sessions/{a}/search", params={"q": "zebrafish"}).json()["hits"]
        assert [h["session_id"] for h in hits] == [a]
        both = http.get("/v1/search", params={"q": "zebrafish"}).json()["hits"]
        assert {h["session_id"] for h in both} == {a, b}
        assert http.get("/v1/search", params={"q": "(unbalanced AND"}).status_code == 200


def test_blocks_prompt_tools_compaction_state_attachments(server: Server) -> None:
    s = sid()
    with server.client(server.key("memory")) as http:
        for i in range(4):
            http.post(f"/v1/sessions/{s}/messages", json=user(f"turn {i}", f"t{i}"))
        blocks = http.get(f"/v1/sessions/{s}/blocks").json()["blocks"]
        assert {b["label"] for b in blocks} == {"soul", "memory", "rules"}
        put = http.put(f"/v1/sessions/{s}/blocks/memory", json={"content": "Likes tea."})
        assert put.json()["content"] == "Likes tea."
        more = http.post(f"/v1/sessions/{s}/blocks/memory", json={"content": "Hates rain."})
        assert "Hates rain." in more.json()["content"]
        assert http.get(f"/v1/sessions/{s}/blocks/memory").json()["writable"] is True
        assert http.get(f"/v1/sessions/{s}/blocks/nope").status_code == 404
        readonly = http.put(f"/v1/sessions/{s}/blocks/soul", json={"content": "x"})
        assert readonly.status_code == 400
        assert readonly.json()["error"]["type"] == "ReadOnlyBlockError"
        too_big = http.put(f"/v1/sessions/{s}/blocks/memory", json={"content": "word " * 5000})
        assert too_big.json()["error"]["type"] == "BlockTooLargeError"
        prompt = http.get(f"/v1/sessions/{s}/prompt").json()["prompt"]
        assert "careful assistant" in prompt and "Likes tea." in prompt
        assert "Likes tea." in http.post(f"/v1/sessions/{s}/prompt/refresh").json()["prompt"]
        for fmt in ("openai", "anthropic", "mcp"):
            tools = http.get(f"/v1/sessions/{s}/tools", params={"format": fmt}).json()["tools"]
            assert tools, fmt
        result = http.post(
            f"/v1/sessions/{s}/tools/set_context", json={"label": "memory", "content": "Tea."}
        ).json()["result"]
        assert result.startswith("Written to memory")
        bad = http.post(f"/v1/sessions/{s}/tools/set_context", json={"label": "nope"})
        assert bad.json()["result"].startswith("Error")
        assert http.post(f"/v1/sessions/{s}/tools/nope", json={}).status_code == 404
        compacted = http.post(f"/v1/sessions/{s}/compact", json={}).json()["result"]
        assert compacted["summary"] == "Summary of the earlier turns."
        overlays = http.get(f"/v1/sessions/{s}/compactions").json()["compactions"]
        assert len(overlays) == 1 and overlays[0]["created_at"].endswith("Z")
        history = http.get(f"/v1/sessions/{s}/messages").json()["messages"]
        assert history[0]["id"].startswith("compaction_") and history[-1]["id"] == "t3"
        state = http.patch(f"/v1/sessions/{s}/state", json={"topic": "tea", "app:v": 2}).json()
        assert state["state"] == {"topic": "tea", "app:v": 2}
        http.patch(f"/v1/sessions/{s}/state", json={"topic": None})
        assert http.get(f"/v1/sessions/{s}/state").json()["state"] == {"app:v": 2}
        blob = bytes(range(256)) * 2048
        image = "data:image/png;base64," + base64.b64encode(blob).decode()
        part = {"type": "file", "mediaType": "image/png", "url": image}
        http.post(f"/v1/sessions/{s}/messages", json={"role": "user", "parts": [part]})
        refs = http.get(f"/v1/sessions/{s}/messages", params={"attachments": "ref"}).json()
        url = refs["messages"][-1]["parts"][0]["url"]
        assert url["kind"] == "bytes"
        got = http.get(f"/v1/sessions/{s}/attachments/sha256:{url['$threadline.attachment']}")
        assert got.status_code == 200, got.text
        assert got.content == blob
        missing = http.get(f"/v1/sessions/{s}/attachments/sha256:{'0' * 64}")
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "AttachmentNotFoundError"
        assert http.get(f"/v1/sessions/{s}/attachments/bogus").status_code == 400
        inline = http.get(f"/v1/sessions/{s}/messages").json()["messages"][-1]
        assert inline["parts"][0]["url"] == image


def test_ids_in_paths_are_url_encoded(server: Server) -> None:
    with server.client(server.key("encoded")) as http:
        odd = "team/chat 1?#%é"
        quoted = httpx_quote(odd)
        made = http.post(f"/v1/sessions/{quoted}/messages", json=user("hi", "m/1"))
        assert made.status_code == 201, made.text
        assert http.get(f"/v1/sessions/{quoted}").json()["id"] == odd
        assert http.get(f"/v1/sessions/{quoted}/messages/{httpx_quote('m/1')}").status_code == 200
        # Escapes that are not UTF-8 were decoded to U+FFFD: %FF and %E9 named one session.
        for bad in ("%FF", "%E9", "caf%E9", "%ED%A0%80"):
            for method, path in (
                ("POST", f"/v1/sessions/{bad}/messages"),
                ("GET", f"/v1/sessions/{bad}"),
                ("GET", f"/v1/sessions/{quoted}/messages/{bad}"),
            ):
                answer = http.request(method, path, json={"role": "user", "content": "x"})
                assert answer.status_code == 400, (method, path, answer.text)
                assert answer.json()["error"]["type"] == "InvalidArgumentError"
        assert http.get(f"/v1/sessions/{httpx_quote(chr(0xFFFD))}").status_code == 404
    with server.client() as anonymous:  # the key is still checked first
        assert anonymous.get("/v1/sessions/%FF").status_code == 401


def test_forget_a_user_and_health_and_docs(server: Server) -> None:
    with server.client(server.key("forget")) as http:
        http.post("/v1/sessions", json={"session_id": "f1", "user_id": "zoe"})
        http.post("/v1/sessions", json={"session_id": "f2", "user_id": "zoe"})
        assert http.delete("/v1/users/zoe").json() == {"sessions_deleted": 2}
        assert http.get("/v1/sessions/f1").status_code == 404
    with server.client() as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}
        spec = anonymous.get("/openapi.json").json()
        assert "/v1/sessions/{session_id}/messages" in spec["paths"]
        assert anonymous.get("/docs").status_code == 200
        assert anonymous.get("/ui/").status_code == 200


def httpx_quote(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def test_export_then_import_into_another_app_gives_the_same_sessions(server: Server) -> None:
    source, target = f"ex-{uuid.uuid4().hex[:8]}", f"im-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(source)) as http:
        http.post("/v1/sessions", json={"session_id": "e1", "user_id": "ana", "name": "Trip"})
        http.post("/v1/sessions/e1/messages", json=user("hello", "m1"))
        http.post("/v1/sessions/e1/messages", json=user("branch", "m2"), params={"parent_id": "m1"})
        http.patch("/v1/sessions/e1/state", json={"k": "v"})
        exported = http.get("/v1/export")
        assert exported.status_code == 200
        assert exported.headers["content-type"].startswith("application/x-ndjson")
        lines = exported.text.splitlines()
        assert len(lines) == 1
        assert http.get("/v1/export", params={"session_id": "nope"}).status_code == 404
        original = http.get("/v1/sessions/e1/tree").json()
    with server.client(server.key(target)) as http:
        ndjson = {"content-type": "application/x-ndjson"}
        done = http.post("/v1/import", content=exported.content, headers=ndjson)
        assert done.status_code == 201 and done.json() == {"session_ids": ["e1"]}
        again = http.post("/v1/import", content=exported.content, headers=ndjson)
        assert again.status_code == 409
        replaced = http.post(
            "/v1/import", content=exported.content, headers=ndjson, params={"replace": True}
        )
        assert replaced.status_code == 201
        assert http.get("/v1/sessions/e1/tree").json() == original
        assert http.get("/v1/sessions/e1/state").json()["state"] == {"k": "v"}
        assert http.post("/v1/import", content=b"[1]\n", headers=ndjson).status_code == 400
        assert http.post("/v1/import", content=b"\xff", headers=ndjson).status_code == 400
        # An app record (a profile, keys' hashes) is the operator's: never a tenant's import.
        app_record = (
            '{"format":"threadline.export/2","type":"app","app":"x","profile":null,'
            '"blocks":{"policy":"Tenant-written."},"keys":[]}\n'
        )
        taken = http.post("/v1/import", content=app_record.encode(), headers=ndjson)
        assert taken.status_code == 400 and "app record" in taken.json()["error"]["message"]
        assert "Tenant-written." not in http.get("/v1/export").text
    with server.client(server.key(target, user="ana")) as bound:
        refused = bound.post("/v1/import", content=exported.content, headers=ndjson)
        assert refused.status_code == 400
        assert len(bound.get("/v1/export").text.splitlines()) == 1  # ana's own session


def test_import_with_a_bad_second_record_writes_nothing(server: Server) -> None:
    import json

    source, target = f"ex-{uuid.uuid4().hex[:8]}", f"im-{uuid.uuid4().hex[:8]}"
    with server.client(server.key(source)) as http:
        for session_id in ("b1", "b2"):
            http.post("/v1/sessions", json={"session_id": session_id})
            http.post(f"/v1/sessions/{session_id}/messages", json=user("hello", "m1"))
            http.post(f"/v1/sessions/{session_id}/messages", json=user("more", "m2"))
        lines = http.get("/v1/export").text.splitlines()
    assert len(lines) == 2
    second = json.loads(lines[1])
    second["messages"][-1]["parent_id"] = "ghost"
    bad = (lines[0] + "\n" + json.dumps(second) + "\n").encode()
    ndjson = {"content-type": "application/x-ndjson"}
    with server.client(server.key(target)) as http:
        refused = http.post("/v1/import", content=bad, headers=ndjson)
        assert refused.status_code == 400
        assert "export record 2" in refused.text
        assert http.get("/v1/sessions").json()["sessions"] == []  # not even record 1
        # a fixed file then imports (no 409 from a half-done first attempt)
        good = ("\n".join(lines) + "\n").encode()
        assert http.post("/v1/import", content=good, headers=ndjson).status_code == 201
        http.post("/v1/sessions/b1/messages", json=user("later", "late"))
        before = http.get("/v1/export").text
        replaced = http.post("/v1/import", content=bad, headers=ndjson, params={"replace": True})
        assert replaced.status_code == 400
        assert http.get("/v1/export").text == before


def test_compactions_mark_the_superseded_ones_per_branch(server: Server) -> None:
    s = sid()
    with server.client(server.key(f"app-{uuid.uuid4().hex[:8]}")) as http:

        def marks() -> dict[str, bool]:
            got = http.get(f"/v1/sessions/{s}/compactions")
            assert got.status_code == 200, got.text
            return {c["to_message_id"]: c["superseded"] for c in got.json()["compactions"]}

        for i in range(4):
            http.post(f"/v1/sessions/{s}/messages", json=user(f"turn {i}", f"t{i}"))
        assert http.post(f"/v1/sessions/{s}/compact", json={}).json()["result"]
        assert marks() == {"t2": False}  # one overlay: t0..t2
        for i in (4, 5):
            http.post(f"/v1/sessions/{s}/messages", json=user(f"turn {i}", f"t{i}"))
        assert http.post(f"/v1/sessions/{s}/compact", json={}).json()["result"]
        assert marks() == {"t2": True, "t4": False}  # extended to t0..t4: the first is gone
        http.put(f"/v1/sessions/{s}/head", json={"leaf_id": "t3"})
        assert marks() == {"t2": False, "t4": False}  # the head's history shows the first
        branch = http.post(f"/v1/sessions/{s}/messages?parent_id=t2", json=user("other", "b3"))
        assert branch.status_code in (200, 201), branch.text
        assert marks() == {"t2": False, "t4": False}  # and so does the new branch from t2
