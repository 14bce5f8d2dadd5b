"""``threadline keys`` and ``threadline serve`` with the real server (the ``server`` extra):
keys made by the command authenticate against a real uvicorn started by the command."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from .conftest import Run  # noqa: E402


def test_keys_create_list_revoke(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    made = run("keys", "create", db, "--app", "travel", "--user", "ana", "--json").json()
    assert made["key"].startswith("tl_") and made["app"] == "travel" and made["user"] == "ana"
    plain = run("keys", "create", db, "--app", "demo")
    assert plain.code == 0 and plain.out.startswith("tl_")
    listed = run("keys", "list", db, "--json").json()["keys"]
    assert [k["app"] for k in listed] == ["travel", "demo"]
    assert "key" not in listed[0]  # never the key itself
    assert [
        k["id"] for k in run("keys", "list", db, "--app", "travel", "--json").json()["keys"]
    ] == [made["id"]]
    assert run("keys", "revoke", db, made["id"], "--json").json() == {"revoked": made["id"]}
    again = run("keys", "revoke", db, made["id"])
    assert again.code == 1 and "no active key" in again.err
    table = run("keys", "list", db).out
    assert made["id"] in table and "yes" in table
    missing = run("keys", "list", str(tmp_path / "missing.db"))
    assert missing.code == 1 and not (tmp_path / "missing.db").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited early: {process.communicate()}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError("serve did not come up")


def test_serve_runs_the_service_with_keys_from_the_command(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "served.db")
    assert run("demo", "--db", db, "--json").code == 0
    key = run("keys", "create", db, "--app", "demo", "--json").json()["key"]
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "threadline.cli", "serve", db, "--port", str(port), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(f"{base}/healthz", process)
        auth = {"Authorization": f"Bearer {key}"}
        sessions = httpx.get(f"{base}/v1/sessions", headers=auth, timeout=10).json()["sessions"]
        assert "trip" in {s["id"] for s in sessions}
        assert httpx.get(f"{base}/v1/sessions", timeout=10).status_code == 401
        assert httpx.get(f"{base}/ui/", timeout=10).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    announced, _ = json.JSONDecoder().raw_decode(out)  # what serve printed before starting
    assert announced["viewer"] == f"{base}/ui"


def test_serve_without_the_store_argument_is_an_error(run: Run) -> None:
    result = run("serve")
    assert result.code == 1 and "no store given" in result.err
