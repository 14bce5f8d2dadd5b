"""Idle and slow connections time out (api.md amendment 16; docs/server.md "Limits").

A real ``serve`` process with short limits (keep-alive 1 s, head 1.5 s, body pause 1.5 s),
spoken to over raw sockets: a connection that sends nothing, trickles a request head, goes
silent after a response or stalls in a body is closed; a body that keeps coming and an
event stream that stays open longer than those limits are not cut.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from served import Server, start_server

KEEP_ALIVE, HEAD, BODY = 1.0, 1.5, 1.5
SLACK = 2.5  # seconds of scheduling slack on a loaded machine


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("slow")
    running = start_server(
        f"sqlite:///{(tmp / 'slow.db').as_posix()}",
        tmp,
        serve_args=f", keep_alive_timeout={KEEP_ALIVE}, head_timeout={HEAD}, body_timeout={BODY}",
    )
    try:
        yield running
    finally:
        running.stop()


def _connect(server: Server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _closed_after(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the server closes ``sock`` (reading everything it sends) and the bytes."""
    start = time.monotonic()
    received = b""
    sock.settimeout(limit)
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise AssertionError(f"still open after {limit}s; got {received[:200]!r}") from None
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return time.monotonic() - start, received
        received += chunk


def test_a_connection_that_sends_nothing_is_closed(slow_server: Server) -> None:
    with _connect(slow_server) as sock:
        elapsed, received = _closed_after(sock, HEAD + SLACK)
    assert elapsed >= HEAD - 0.3 and received == b""


def test_a_trickled_request_head_is_cut_off(slow_server: Server) -> None:
    with _connect(slow_server) as sock:
        sock.sendall(b"POST /v1/sessions/s/messages HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        received = b""
        closed = False
        while time.monotonic() - start < HEAD + SLACK:
            try:
                sock.sendall(b"X-a: b\r\n")  # a header line now and then: never complete
            except OSError:
                closed = True
                break
            sock.settimeout(0.3)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except ConnectionResetError:
                closed = True
                break
            received += chunk
            if not chunk:
                closed = True
                break
        assert closed, "the server kept a request head open that never completed"
    assert received == b"" or received.startswith(b"HTTP/1.1 408"), received[:100]


def test_a_kept_alive_connection_that_goes_silent_is_closed(slow_server: Server) -> None:
    with _connect(slow_server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        elapsed, received = _closed_after(sock, KEEP_ALIVE + SLACK)
    assert received.startswith(b"HTTP/1.1 200")
    assert elapsed < KEEP_ALIVE + SLACK


def test_a_body_that_stalls_is_cut_off(slow_server: Server) -> None:
    key = slow_server.key("slow")
    with _connect(slow_server) as sock:
        sock.sendall(
            b"POST /v1/sessions/stall/messages HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n".encode()
            + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"role"'
        )
        elapsed, _ = _closed_after(sock, BODY + SLACK)
    assert elapsed >= BODY - 0.3
    with slow_server.client(key) as http:
        assert http.get("/v1/sessions/stall").status_code == 404  # nothing half-stored


def test_a_slow_but_steady_body_and_head_are_served(slow_server: Server) -> None:
    # Each pause is under the limits; the whole request takes longer than any of them.
    key = slow_server.key("slow")
    payload = json.dumps({"role": "user", "content": "arrived slowly"}).encode()
    head = (
        b"POST /v1/sessions/steady/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + f"Authorization: Bearer {key}\r\n".encode()
        + f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
    )
    with _connect(slow_server) as sock:
        sock.sendall(head)
        pieces = [payload[i : i + 8] for i in range(0, len(payload), 8)]
        for piece in pieces:
            time.sleep(max(2 * BODY, HEAD) / len(pieces))
            sock.sendall(piece)
        _, received = _closed_after(sock, 10)
    assert received.startswith(b"HTTP/1.1 201"), received[:200]


def test_an_event_stream_outlives_the_limits(slow_server: Server) -> None:
    key = slow_server.key("slow")
    with slow_server.client(key) as http:
        assert http.post(
            "/v1/sessions/ev/messages", json={"role": "user", "content": "x"}
        ).is_success
    with _connect(slow_server) as sock:
        sock.sendall(
            b"GET /v1/sessions/ev/events HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {key}\r\n\r\n".encode()
        )
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        deadline = time.monotonic() + max(KEEP_ALIVE, HEAD, BODY) + 1.5
        while time.monotonic() < deadline:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            with contextlib.suppress(TimeoutError):
                assert sock.recv(65536) != b"", "the event stream was closed"


def test_serve_refuses_a_bad_limit(tmp_path: Path) -> None:
    from threadline.errors import InvalidArgumentError
    from threadline.server import serve

    with pytest.raises(InvalidArgumentError, match="head_timeout"):
        serve(str(tmp_path / "x.db"), head_timeout=0)
