"""The ``threadline mcp`` command itself: its help, and a bad transport as a one-line error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mcp_served import env


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadline", "mcp", *args],
        env=env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_help_names_the_options() -> None:
    done = _run("--help")
    assert done.returncode == 0
    for option in ("--app", "--user", "--session", "--transport", "--host", "--port"):
        assert option in done.stdout


def test_a_bad_transport_is_an_error_and_nothing_on_stdout(tmp_path: Path) -> None:
    done = _run("--db", str(tmp_path / "x.db"), "--app", "a", "--transport", "smoke")
    assert done.returncode == 1
    assert "--transport must be stdio or http" in done.stderr and done.stdout == ""
