"""``threadline serve --replica URL --workers 2``: every worker reads through the standby, a
write answers with ``X-Threadline-Read-After``, and reads sending it back see the write
whichever worker answers, while the standby's replay is paused."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

import threadline  # noqa: E402
from threadline.server import create_key  # noqa: E402

pytestmark = [pytest.mark.postgres]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_with_a_replica_reads_after_the_echoed_position(pg_pair: Any) -> None:
    with threadline.connect(pg_pair.primary) as store:
        key = create_key(store, "app")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    command = [sys.executable, "-m", "threadline.cli", "serve", pg_pair.primary]
    options = ["--port", str(port), "--workers", "2", "--replica", pg_pair.replica]
    process = subprocess.Popen(
        [*command, *options], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {key}"}
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "threadline serve did not start"
            time.sleep(0.2)
        pg_pair.caught_up()
        pg_pair.pause()
        made = httpx.post(
            f"{base}/v1/sessions/s1/messages",
            json={"role": "user", "content": "hello"},
            headers=auth,
            timeout=10,
        )
        assert made.status_code == 201, made.text
        position = made.headers["x-threadline-read-after"]
        for _ in range(6):  # whichever worker answers
            listed = httpx.get(
                f"{base}/v1/sessions",
                headers={**auth, "X-Threadline-Read-After": position},
                timeout=10,
            ).json()["sessions"]
            assert [s["id"] for s in listed] == ["s1"]
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
