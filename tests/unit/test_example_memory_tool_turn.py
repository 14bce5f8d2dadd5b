"""The tool-calling turn example: the model's ``set_context`` call edits the memory block, the
run is stored as one invocation, and the next run's system prompt carries the edit."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory_tool_turn.py"


def test_the_turn_edits_the_memory_block(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out.splitlines()
    assert "tool calls: [('set_context', 'append')]" in out
    assert next(line for line in out if line.startswith("tool answer:")).startswith(
        "tool answer: Written to memory."
    )
    block = out.index("memory block: The user's name is Ana.")
    assert out[block + 1] == "The user lives in Lisbon."  # appended, the old fact kept
    assert "stored: ['user', 'assistant', 'assistant'] in 1 invocation" in out
    assert out[-1] == "next run: You live in Lisbon."  # read from the refreshed prompt
