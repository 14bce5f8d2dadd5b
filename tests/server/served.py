"""Helpers of the HTTP tests: start a real uvicorn process (``threadline.server.serve``) and talk
to it with httpx. ``Server.client(key)`` sends the key as bearer token; keys are made with
``threadline.server.create_key`` on the same database, as ``threadline keys create`` does.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from threadline.server import create_key

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

# The backends every HTTP test module runs on (here, not in conftest.py: a test module's
# ``from conftest import`` would get whichever conftest.py was imported first).
BACKENDS = [
    pytest.param("sqlite-file", id="sqlite-file"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]


def backend_db(request: pytest.FixtureRequest, backend: str, tmp: Path) -> str:
    if backend == "sqlite-file":
        return f"sqlite:///{(tmp / 'served.db').as_posix()}"
    dsn: str = request.getfixturevalue("module_pg_dsn")
    return dsn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running ``threadline.server.serve`` process."""

    url: str
    db: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self, key: str | None = None, **headers: str) -> httpx.Client:
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def key(self, app: str, user: str | None = None) -> str:
        return create_key(self.db, app, user)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_server(
    db: str,
    log_dir: Path,
    *,
    workers: int = 1,
    auth: bool = True,
    max_body: int | None = None,
    env_extra: dict[str, str] | None = None,
    serve_args: str = "",
    config: str | None = "server_config:configure",
) -> Server:
    port = free_port()
    env = {**os.environ, **(env_extra or {})}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(HERE), env.get("PYTHONPATH", "")])
    code = (
        "import sys; from threadline.server import serve; "
        f"serve(sys.argv[1], port={port}, workers={workers}, "
        f"config={config!r}, auth={auth}{serve_args})"
    )
    if max_body is not None:  # serve() has no cap option: run create_app with one
        code = (
            "import sys, uvicorn; from threadline.server import create_app; "
            "from server_config import configure; "
            f"uvicorn.run(create_app(sys.argv[1], configure=configure, max_body_bytes={max_body}),"
            f" host='127.0.0.1', port={port}, log_level='warning')"
        )
    log = log_dir / f"server-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", code, db], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    server = Server(f"http://127.0.0.1:{port}", db, process, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"server did not start:\n{log.read_text(errors='replace')}")
