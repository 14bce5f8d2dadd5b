"""examples/adk_agent.py: ADK's Runner persists through threadline and resumes in a new process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "adk_agent.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def run_example(db: Path) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_adk_example_resumes_a_session_in_a_fresh_process(tmp_path: Path) -> None:
    db = tmp_path / "adk.db"
    first = run_example(db)
    assert "new session 'trip-planning'" in first
    assert "planner> calls get_weather({'city': 'Lisbon'})" in first
    assert "planner> The forecast says light rain, 12 °C." in first
    assert "events stored: 8;" in first

    second = run_example(db)
    assert "resumed session 'trip-planning' with 8 events" in second
    assert "stored user: I am going to Lisbon in May." in second
    assert "planner> You told me: 'I am going to Lisbon in May.'" in second
    assert "events stored: 10;" in second
    assert "'user:home': 'Bergen'" in second
