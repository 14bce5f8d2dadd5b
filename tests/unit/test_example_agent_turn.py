"""The Runner example (RadarOS "My name is Bob") runs end to end with its scripted model."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_turn.py"


def test_the_agent_turn_example_remembers_the_name(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "run 2: Your name is Bob." in out  # answered from the memory block the tool wrote
    assert "visits: 2" in out  # hook state persisted between runs
