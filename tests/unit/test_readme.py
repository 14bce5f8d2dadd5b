"""The README's Python snippets run as written (in order, in a scratch directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "packing.md").write_text("# Packing list\n- passport\n")
    namespace: dict[str, object] = {}
    blocks = snippets()
    assert len(blocks) >= 4
    for block in blocks:
        # A PostgreSQL URL needs a server; every other line runs for real.
        code = "\n".join(
            line
            for line in block.splitlines()
            if not line.startswith('store = threadline.connect("postgresql')
        )
        exec(compile(code, str(README), "exec"), namespace)
    session = namespace["session"]
    assert session.get_context_block("memory") is not None  # type: ignore[attr-defined]


def test_the_quickstart_opens_with_an_agent_turn_and_each_framework_has_its_switch() -> None:
    headings = re.findall(r"^(#{2,3}) (.+)$", README.read_text(encoding="utf-8"), re.M)
    titles = [title for _, title in headings]
    quickstart = titles.index("Quickstart")
    assert titles[quickstart + 1] == "Run an agent turn"  # what users come for, first
    assert "OpenAI Agents SDK: switch from `SQLiteSession` in one line" in titles
    assert "Google ADK: switch from DatabaseSessionService in one line" in titles
