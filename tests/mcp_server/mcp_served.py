"""Helpers of the ``threadline mcp`` tests (here, not in conftest.py: a test module's
``from conftest import`` would get whichever conftest.py was imported first)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = "mcpdemo"
PROFILE = {
    "format": 1,
    "blocks": [
        {"label": "persona", "kind": "readonly", "text": "You are a concise assistant."},
        {"label": "memory", "kind": "writable", "scope": "user", "description": "Facts"},
        {"label": "notes", "kind": "writable", "scope": "session"},
        {"label": "team_rules", "kind": "writable", "scope": "app"},
        {"label": "faq", "kind": "search", "store": True, "description": "Answers"},
        {"label": "skills", "kind": "skill", "store": True},
    ],
}


def env() -> dict[str, str]:
    """The environment of a spawned ``python -m threadline``: this checkout's sources."""
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
