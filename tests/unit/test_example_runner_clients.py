"""The OpenAI and Anthropic model functions of examples/runner_clients.py drive a whole Runner
turn through the official clients (offline: fake HTTP transports answering like the APIs)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runner_clients.py"


def test_both_clients_complete_a_tool_calling_turn(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE)])
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    for provider in ("openai", "anthropic"):  # the tool ran, the answer came after it
        assert f"{provider}: Saved: your name is Bob. | memory: The user's name is Bob." in out
