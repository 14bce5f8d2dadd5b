"""``--no-auth``: the app comes from ``X-Threadline-App`` (default ``"default"``), and the
server says so loudly at start; CORS origins are answered when configured."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from served import start_server

from threadline.server import create_app


def test_no_auth_serves_the_app_named_by_the_header_and_warns(tmp_path: Path) -> None:
    db = f"sqlite:///{(tmp_path / 'open.db').as_posix()}"
    server = start_server(db, tmp_path, auth=False)
    try:
        with server.client() as http:
            made = http.post("/v1/sessions", json={"session_id": "s1"})
            assert made.status_code == 201 and made.json()["app_name"] == "default"
            other = http.post(
                "/v1/sessions", json={"session_id": "s1"}, headers={"X-Threadline-App": "travel"}
            )
            assert other.status_code == 201 and other.json()["app_name"] == "travel"
            missing = http.get("/v1/sessions/s1", headers={"X-Threadline-App": "shop"})
            assert missing.status_code == 404
            # The header's bytes are UTF-8 (they were read as Latin-1: "é" became "Ã©").
            utf8 = {"X-Threadline-App": "café".encode()}
            accented = http.post("/v1/sessions", json={"session_id": "s1"}, headers=utf8)
            assert accented.status_code == 201 and accented.json()["app_name"] == "café"
            bad = http.get("/v1/sessions", headers={"X-Threadline-App": b"caf\xe9"})
            assert bad.status_code == 400 and "UTF-8" in bad.json()["error"]["message"]
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    assert "AUTHENTICATION IS OFF" in log


def test_cors_origins_are_answered_only_when_configured() -> None:
    open_app = create_app(":memory:", auth=False, cors_origins=("https://viewer.example",))
    with TestClient(open_app) as http:
        preflight = http.options(
            "/v1/sessions",
            headers={
                "Origin": "https://viewer.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization",
            },
        )
        assert preflight.headers["access-control-allow-origin"] == "https://viewer.example"
    with TestClient(create_app(":memory:", auth=False)) as http:
        answer = http.get("/healthz", headers={"Origin": "https://viewer.example"})
        assert "access-control-allow-origin" not in answer.headers
