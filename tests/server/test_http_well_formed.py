"""Amendment 13 over HTTP: a message the library refuses is a 400 (never stored), a forged
attachment reference is refused on a server whose store does not attach (``?size_policy=error``),
and a hostile import is a 400 with the JSON error shape that stores nothing — never a 500,
and the next request works."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from served import BACKENDS, Server, backend_db, start_server

import threadline


def _is_error(answer: httpx.Response, status: int, fragment: str) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert fragment in body["error"]["message"], body


@pytest.fixture(scope="module", params=BACKENDS)
def not_attaching(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server whose store stores messages whole (``?size_policy=error``), holding u's
    image, written while the store attached long strings."""
    tmp = tmp_path_factory.mktemp("not-attaching")
    db = backend_db(request, request.param, tmp)
    with threadline.connect(db) as store:
        payload = base64.b64encode(b"U-PRIVATE" * 30_000).decode()
        image = {
            "type": "file",
            "mediaType": "image/png",
            "url": f"data:image/png;base64,{payload}",
        }
        store.append_messages(
            "appA", "su", [{"id": "u1", "role": "user", "parts": [image]}], user_id="u"
        )
    running = start_server(db + ("&" if "?" in db else "?") + "size_policy=error", tmp)
    running.sha = hashlib.sha256(payload.encode()).hexdigest()  # type: ignore[attr-defined]
    try:
        yield running
    finally:
        running.stop()


def test_a_message_append_would_refuse_is_a_400(server: Server) -> None:
    with server.client(server.key("wellformed")) as http:
        for bad in (
            {"role": "robot", "content": "beep"},
            {"role": "user", "parts": [{"type": "text", "text": None}]},
            {"messages": [{"role": "user", "content": "ok"}, {"role": "model", "parts": []}]},
        ):
            _is_error(http.post("/v1/sessions/s/messages", json=bad), 400, "")
        assert http.get("/v1/sessions/s").status_code == 404  # nothing stored
        created = http.post(
            "/v1/sessions/s/messages", json={"id": "m1", "role": "user", "content": "hi"}
        )
        assert created.status_code == 201 and created.json()["createdAt"].endswith("Z")
        robot = {"role": "robot", "parts": [{"type": "text", "text": "x"}]}
        _is_error(http.put("/v1/sessions/s/messages/m1", json=robot), 400, "robot")
        assert http.get("/v1/sessions/s/messages/m1").json()["role"] == "user"


def test_a_forged_reference_is_refused_when_the_store_does_not_attach(
    not_attaching: Server,
) -> None:
    sha = not_attaching.sha  # type: ignore[attr-defined]
    forged = {"$threadline.attachment": sha, "kind": "bytes", "bytes": 1}
    with not_attaching.client(not_attaching.key("appA", user="v")) as http:
        message = {"id": "v1", "role": "user", "content": "hi", "metadata": {"x": forged}}
        _is_error(http.post("/v1/sessions/sv/messages", json=message), 400, "reserved")
        assert http.get("/v1/sessions/sv/messages/v1").status_code == 404
        assert (
            http.post("/v1/sessions/sv/messages", json={**message, "metadata": {}}).status_code
            == 201
        )
        _is_error(http.put("/v1/sessions/sv/messages/v1", json=message), 400, "reserved")
        assert "U-PRIVATE" not in http.get("/v1/export").text


def _base_record(http: httpx.Client) -> dict[str, Any]:
    http.post("/v1/sessions/base/messages", json={"id": "m1", "role": "user", "content": "hi"})
    record: dict[str, Any] = json.loads(http.get("/v1/export").text.splitlines()[0])
    assert http.delete("/v1/sessions/base").status_code == 204
    overlay = {"id": "o1", "summary": "S", "from_message_id": "m1", "to_message_id": "m1"}
    record["compactions"] = [{**overlay, "created_at": "2026-01-01T00:00:00Z"}]
    return record


def _with(record: dict[str, Any], session_id: str, **changes: Any) -> dict[str, Any]:
    copied = json.loads(json.dumps(record))
    copied["session"]["id"] = session_id
    for key, value in changes.items():
        if key == "created_at":
            copied["session"]["created_at"] = value
        elif key == "role":
            copied["messages"][0]["message"]["role"] = value
        else:
            copied[key] = value
    return copied


def test_a_hostile_import_is_a_400_that_stores_nothing(server: Server) -> None:
    ndjson = {"content-type": "application/x-ndjson"}
    with server.client(server.key("imports")) as http:
        record = _base_record(http)
        good = _with(record, "good")
        hostile = {
            "years": _with(record, "y", created_at="9999-12-31T23:59:59-14:00"),
            "2**53": _with(record, "seq", last_seq=2**63 - 1),
            "twice": _with(record, "dup", compactions=record["compactions"] * 2),
            "role": _with(record, "robot", role=5),  # a role string is folded (clarification 25)
        }
        for fragment, bad in hostile.items():
            body = "\n".join(json.dumps(r) for r in (good, bad)) + "\n"
            _is_error(http.post("/v1/import", content=body, headers=ndjson), 400, fragment)
            assert http.get("/v1/sessions").json()["sessions"] == []
        legacy = _with(record, "legacy", role="developer")
        body = "\n".join(json.dumps(r) for r in (good, legacy)) + "\n"
        assert http.post("/v1/import", content=body, headers=ndjson).status_code == 201
        stored = http.get("/v1/sessions/legacy/messages/m1").json()
        assert stored["role"] == "system"
        assert stored["providerMetadata"] == {"openai": {"role": "developer"}}
        assert (
            http.post(
                "/v1/sessions/good/messages", json={"role": "user", "content": "next"}
            ).status_code
            == 201
        )


def test_logs_hold_no_traceback(server: Server) -> None:
    text = Path(server.log).read_text(errors="replace")
    assert "Traceback" not in text and "unexpected error" not in text
