"""docs/agent-turns.md: its Python snippets run as written (in order, in a scratch directory)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-turns.md"


def test_the_agent_turns_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    manager: Any = namespace["manager"]
    assert manager.get_history("s") == []  # the run "Book the 9:40 train" undone
    bob = manager.get_history("bob")  # the first snippet's run, stored
    assert [m["role"] for m in bob] == ["user", "assistant"]
    assert bob[-1]["parts"][0]["text"] == "Hello!"
