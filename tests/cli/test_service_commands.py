"""``threadline keys`` and ``threadline serve`` with the real server (the ``server`` extra):
keys made by the command authenticate against a real uvicorn started by the command."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
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


@contextlib.contextmanager
def _serving(db: str, *options: str) -> Iterator[tuple[str, list[str]]]:
    """``threadline serve DB OPTIONS --json`` in a process: its base URL, and (after the
    block) what it printed in ``printed[0]``."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    command = [sys.executable, "-m", "threadline.cli", "serve", db, "--port", str(port)]
    process = subprocess.Popen(
        [*command, *options, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    printed: list[str] = []
    try:
        _wait(f"{base}/healthz", process)
        yield base, printed
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        printed.append(out)


def test_serve_runs_the_service_with_keys_from_the_command(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "served.db")
    assert run("demo", "--db", db, "--json").code == 0
    key = run("keys", "create", db, "--app", "demo", "--json").json()["key"]
    with _serving(db) as (base, printed):
        auth = {"Authorization": f"Bearer {key}"}
        sessions = httpx.get(f"{base}/v1/sessions", headers=auth, timeout=10).json()["sessions"]
        assert "trip" in {s["id"] for s in sessions}
        assert httpx.get(f"{base}/v1/sessions", timeout=10).status_code == 401
        assert httpx.get(f"{base}/ui/", timeout=10).status_code == 200
    announced, _ = json.JSONDecoder().raw_decode(printed[0])  # printed before starting
    assert announced["viewer"] == f"{base}/ui" and announced["app"] is None


def test_serve_app_and_user_narrow_the_service(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "narrow.db")
    assert run("demo", "--db", db, "--app", "travel", "--user", "ana", "--json").code == 0
    app_wide = run("keys", "create", db, "--app", "travel", "--json").json()["key"]
    ben = run("keys", "create", db, "--app", "travel", "--user", "ben", "--json").json()["key"]
    other_app = run("keys", "create", db, "--app", "shop", "--json").json()["key"]

    def get(base: str, path: str, key: str | None = None, **headers: str) -> httpx.Response:
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.get(f"{base}{path}", headers=headers, timeout=10)

    with _serving(db, "--app", "travel", "--user", "ana") as (base, printed):
        listed = get(base, "/v1/sessions", app_wide).json()["sessions"]
        # an app-wide key acts as ana: her sessions, not ben's (nor owner-less ones)
        assert listed and {s["user_id"] for s in listed} == {"ana"}
        assert get(base, "/v1/sessions/madrid", app_wide).status_code == 404
        refused = get(base, "/v1/sessions", ben)
        assert refused.status_code == 401 and "user 'ana' only" in refused.text
        assert get(base, "/v1/sessions", other_app).status_code == 401
    announced, _ = json.JSONDecoder().raw_decode(printed[0])
    assert (announced["app"], announced["user"]) == ("travel", "ana")

    with _serving(db, "--no-auth", "--app", "travel") as (base, _):
        ids = {s["id"] for s in get(base, "/v1/sessions").json()["sessions"]}
        assert {"trip", "madrid"} <= ids  # the app without a header, every user's
        named = get(base, "/v1/sessions", **{"X-Threadline-App": "shop"})
        assert named.status_code == 400 and "app 'travel' only" in named.text


def test_serve_takes_cors_origins_and_the_body_cap(run: Run, tmp_path: Path) -> None:
    """``create_app`` had CORS and a body cap, ``threadline serve`` no way to set them."""
    db = str(tmp_path / "cors.db")
    key = run("keys", "create", db, "--app", "web", "--json").json()["key"]
    origins = ("--cors-origin", "https://a.example", "--cors-origin", "https://b.example")
    options = ("--workers", "2", "--max-body-bytes", "2000", *origins)
    with _serving(db, *options) as (base, _):
        auth = {"Authorization": f"Bearer {key}"}
        for _ in range(4):  # whichever worker answers
            for origin, allowed in (("https://a.example", True), ("https://b.example", True),
                                    ("https://evil.example", False)):  # fmt: skip
                preflight = httpx.options(
                    f"{base}/v1/sessions",
                    headers={"Origin": origin, "Access-Control-Request-Method": "POST"},
                    timeout=10,
                )
                got = preflight.headers.get("access-control-allow-origin")
                assert (got == origin) is allowed, (origin, preflight.status_code, got)
            small = {"role": "user", "content": "x" * 100}
            made = httpx.post(f"{base}/v1/sessions/s/messages", json=small, headers=auth)
            assert made.status_code == 201, made.text
            big = {"role": "user", "content": "x" * 3000}
            refused = httpx.post(f"{base}/v1/sessions/s/messages", json=big, headers=auth)
            assert refused.status_code == 413, refused.text
    assert run("serve", db, "--max-body-bytes", "0").code == 2  # a usage error


def test_serve_takes_the_slow_client_limits(run: Run, tmp_path: Path) -> None:
    """``--head-timeout`` reaches every worker: a connection that never sends a whole request
    head is closed after it (the default is 10 s)."""
    db = str(tmp_path / "slow.db")
    with _serving(db, "--workers", "2", "--head-timeout", "1", "--keep-alive-timeout", "1") as (
        base,
        _,
    ):
        port = int(base.rsplit(":", 1)[1])
        for _ in range(3):  # whichever worker takes the connection
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
                start = time.monotonic()
                sock.settimeout(6)
                assert sock.recv(4096).startswith(b"HTTP/1.1 408")
                assert time.monotonic() - start < 5
    assert run("serve", db, "--head-timeout", "0").code == 2  # a usage error


def test_keys_revoke_checks_app_and_user_when_given(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    made = run("keys", "create", db, "--app", "travel", "--user", "ana", "--json").json()
    wrong_app = run("keys", "revoke", db, made["id"], "--app", "shop")
    assert wrong_app.code == 1 and "nothing was revoked" in wrong_app.err
    wrong_user = run("keys", "revoke", db, made["id"], "--user", "ben")
    assert wrong_user.code == 1 and "user 'ben'" in wrong_user.err
    assert not run("keys", "list", db, "--json").json()["keys"][0]["revoked"]
    done = run("keys", "revoke", db, made["id"], "--app", "travel", "--user", "ana", "--json")
    assert done.json() == {"revoked": made["id"]}


def test_serve_without_the_store_argument_is_an_error(run: Run) -> None:
    result = run("serve")
    assert result.code == 1 and "no store given" in result.err
