"""A real uvicorn process serving ``threadline.server.create_app`` for the client tests, on a
SQLite file and on PostgreSQL (a fresh schema), with an API key of app ``travel``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import threadline

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # served_app: imported here and by the uvicorn process

from served_app import APP, DB_ENV, Served  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"uvicorn did not start in 60 s: {log.read_text()}")


@pytest.fixture
def served(file_store_url: str, tmp_path: Path) -> Iterator[Served]:
    """uvicorn on a free port serving the store at ``file_store_url`` (sqlite-file, postgres)."""
    from threadline.server import create_key

    with threadline.connect(file_store_url) as store:  # schema and key before the server
        key = create_key(store, APP)
    port = _free_port()
    log = tmp_path / "uvicorn.log"
    env = {**os.environ, DB_ENV: file_store_url}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "uvicorn", "--factory", "served_app:make"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, process, log)
        yield Served(url, key, file_store_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
