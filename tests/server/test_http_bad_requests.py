"""Bad requests get 4xx JSON errors of one shape, never a 500; bodies over the cap get 413."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from served import Server, start_server


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("capped")
    running = start_server(f"sqlite:///{(tmp / 'c.db').as_posix()}", tmp, max_body=10_000)
    try:
        yield running
    finally:
        running.stop()


def _is_error(answer: httpx.Response, status: int) -> None:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}


def test_malformed_requests_are_4xx_json(server: Server) -> None:
    with server.client(server.key("bad")) as http:
        _is_error(http.post("/v1/sessions", content=b"{not json"), 422)
        _is_error(http.post("/v1/sessions", json=[1, 2]), 422)
        _is_error(http.post("/v1/sessions", json={"bogus": 1}), 422)
        _is_error(http.post("/v1/sessions/s/messages", json={"role": 7}), 400)
        _is_error(http.post("/v1/sessions/s/messages", json={"messages": "nope"}), 400)
        _is_error(http.get("/v1/sessions", params={"limit": 0}), 422)
        _is_error(http.get("/v1/sessions", params={"cursor": "garbage"}), 400)
        _is_error(
            http.post("/v1/sessions/s/usage", json={"input_tokens": -1, "output_tokens": 0}), 422
        )
        _is_error(http.get("/v1/nowhere"), 404)
        _is_error(http.put("/v1/sessions"), 405)
        _is_error(
            http.post(
                "/v1/sessions/s/messages",
                content=b"\xff\xfe",
                headers={"content-type": "application/json"},
            ),
            422,
        )
        _is_error(http.post("/v1/sessions", json={"session_id": "x" * 100_000}), 400)
        ndjson = {"content-type": "application/x-ndjson"}
        for deep in (b"[" * 100_000, b'{"a": ' * 100_000):  # json.loads: RecursionError
            _is_error(http.post("/v1/import", content=deep + b"\n", headers=ndjson), 400)


def test_bodies_over_the_cap_get_413_even_without_a_content_length(capped: Server) -> None:
    with capped.client(capped.key("cap")) as http:
        small = http.post("/v1/sessions/s/messages", json={"role": "user", "content": "hi"})
        assert small.status_code == 201
        big = {"role": "user", "content": "x" * 20_000}
        _is_error(http.post("/v1/sessions/s/messages", json=big), 413)

        def chunks() -> Iterator[bytes]:  # chunked transfer: no Content-Length to trust
            yield b'{"role": "user", "content": "'
            for _ in range(30):
                yield b"y" * 1000
            yield b'"}'

        streamed = http.post(
            "/v1/sessions/s/messages",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        _is_error(streamed, 413)
        assert http.get("/v1/sessions/s").json()["message_count"] == 1


def test_logs_hold_no_traceback(server: Server) -> None:
    text = Path(server.log).read_text(errors="replace")
    assert "Traceback" not in text and "unexpected error" not in text
