"""The README's command-line block runs as written, after its Python quickstart, in a
scratch directory: each command exits 0 and prints something (it used to show nothing:
``history agent.db chat-42 --app travel`` read an app the quickstart never wrote)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .conftest import Run

README = Path(__file__).resolve().parents[2] / "README.md"


def _cli_block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Command line") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_cli_block_runs(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "packing.md").write_text("# Packing list\n- passport\n")
    namespace: dict[str, object] = {}
    for snippet in re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        code = "\n".join(
            line for line in snippet.splitlines() if "connect(\"postgresql" not in line
        )
        exec(compile(code, str(README), "exec"), namespace)
    lines = _cli_block()
    assert len(lines) >= 10
    for line in lines:
        words = shlex.split(line)
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            monkeypatch.setenv(name, value)
            continue
        assert words[0] == "threadline", line
        if words[1] == "serve":  # runs until stopped: tests/cli/test_service_commands.py
            continue
        result = run(*words[1:])
        assert result.code == 0, (line, result.err)
        assert result.out.strip(), line
