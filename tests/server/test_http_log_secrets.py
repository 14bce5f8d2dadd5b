"""Secrets are never logged (api.md amendment 17).

A real ``serve`` process; requests carry a live key in ``?access_token=`` spelled every way
the server (or a confused client) may spell it — percent-encoded names, repeats, other
cases, double encoding, a missing ``=`` — and in ``Authorization`` headers, including on a
request too malformed to parse. The server's whole log output must hold neither the key nor
its secret part, nor any ``Authorization`` header, while the access lines are still there.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from served import Server, start_server

from threadline.server._redact import redact_target


@pytest.fixture(scope="module")
def logged_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("logs")
    running = start_server(f"sqlite:///{(tmp / 'logs.db').as_posix()}", tmp)
    try:
        yield running
    finally:
        running.stop()


def _spellings(key: str) -> list[str]:
    encoded = key.replace("_", "%5F")
    return [
        f"access_token={key}",
        f"access%5Ftoken={key}",
        f"access%5ftoken={key}",
        f"%61ccess_token={key}",
        f"access%255Ftoken={key}",
        f"ACCESS_TOKEN={key}",
        f"Access_Token={key}",
        f"access_token={encoded}",
        f"access_token={key}&access_token={key}",
        f"limit=5&access%5Ftoken={key}&access_token={key}",
        f"x=1;access_token={key}",
        f"access_token%3D{key}",
        f"access+token={key}",
        f"other={key}",
        key,
    ]


def test_keys_and_authorization_never_reach_the_log(logged_server: Server) -> None:
    key = logged_server.key("logs")
    secret = key.split("_", 2)[2]
    with logged_server.client(key) as http:
        assert http.post("/v1/sessions/s/messages", json={"role": "user", "content": "x"})
    statuses = []
    for query in _spellings(key):
        url = f"{logged_server.url}/v1/sessions/s/events?{query}"
        with httpx.stream("GET", url, timeout=10) as response:
            statuses.append(response.status_code)
    assert 200 in statuses  # the key was live, and accepted under some of these spellings
    with logged_server.client(key, authorization=f"Bearer {key}") as http:
        http.get("/v1/sessions")
    with socket.create_connection(("127.0.0.1", int(logged_server.url.rsplit(":", 1)[1]))) as s:
        s.sendall(
            f"GET /v1/sessions HTTP/1.1\r\nAuthorization: Bearer {key}\r\nbad\r\n\r\n".encode()
        )
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 400")
    time.sleep(0.5)  # the access lines are written after the responses
    log = logged_server.log.read_text(errors="replace")
    assert "/v1/sessions/s/events?access_token=***" in log
    assert secret not in log and key not in log
    for forbidden in ("Authorization", "authorization", "Bearer", "bearer"):
        assert forbidden not in log


@pytest.mark.parametrize(
    ("target", "logged"),
    [
        ("/e?access%5Ftoken=tl_0a_s3", "/e?access_token=***"),
        ("/e?access_token=a&ACCESS%5FTOKEN=b", "/e?access_token=***&access_token=***"),
        ("/e?api%2Dkey=k&limit=5", "/e?api-key=***&limit=5"),
        ("/e?access_token%3Dtl_0a_s3&limit=5", "/e?***&limit=5"),
        ("/e?q=tl%5F0a%5Fs3", "/e?q=tl_***"),
        ("/v1/sessions/tl_0a_s3/events", "/v1/sessions/tl_***/events"),
        ("/v1/sessions?limit=5&offset=10", "/v1/sessions?limit=5&offset=10"),
    ],
)
def test_redacted_targets(target: str, logged: str) -> None:
    assert redact_target(target) == logged
