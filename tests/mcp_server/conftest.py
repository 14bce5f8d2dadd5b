"""Fixtures of the ``threadline mcp`` tests: a store (SQLite file or PostgreSQL) holding an app
whose stored profile has memory blocks of each kind, and ways to reach a real ``threadline
mcp`` process with the ``mcp`` SDK's own client — spawned over stdio, or a uvicorn process
over streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import threadline
from threadline.profile import Profile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # mcp_served.py

from mcp_served import APP, PROFILE, env, free_port


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite-file", id="sqlite-file"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ],
)
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with the app's profile, a skill, an FAQ entry and one session of user bob."""
    if request.param == "postgres":
        url: str = request.getfixturevalue("module_pg_dsn")
    else:
        url = f"sqlite:///{(tmp_path_factory.mktemp('mcp') / 'mcp.db').as_posix()}"
    with threadline.connect(url) as store:
        Profile.from_dict(PROFILE).save(store, APP)
        manager = threadline.SessionManager.from_profile(store, APP)
        seed = manager.get_session("seed")
        seed.write_context_entry("skills", "Always answer in French.", title="French")
        seed.write_context_entry("faq", "Check-in starts at 3 pm.", title="checkin")
        manager.append("bob-1", {"role": "user", "content": "bob's secret plan"}, user_id="bob")
    return url


@pytest.fixture(scope="module")
def http_mcp(db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``threadline mcp --transport http`` in a uvicorn process; yields the ``/mcp`` URL."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcplog") / "mcp.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "threadline", "mcp", "--db", db, "--app", APP,
             "--transport", "http", "--port", str(port)],
            env=env(), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url, timeout=2)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log.read_text()) from None
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
