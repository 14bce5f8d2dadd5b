"""Fixtures of the CLI tests: the ``threadline`` command run in-process on real stores."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from threadline.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Run = Callable[..., Result]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run("show", db, "trip", "--app", "demo")`` → exit code, stdout, stderr; the
    environment never leaks THREADLINE_DB / THREADLINE_APP into a test that did not set them."""
    monkeypatch.delenv("THREADLINE_DB", raising=False)
    monkeypatch.delenv("THREADLINE_APP", raising=False)
    monkeypatch.setenv("COLUMNS", "80")

    def call(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    assert main(["demo", "--db", str(path), "--json"]) == 0
    return path


@pytest.fixture
def demo_db(demo_template: Path, tmp_path: Path) -> str:
    """A fresh copy of the store ``threadline demo`` writes (app ``demo``)."""
    path = tmp_path / "demo.db"
    shutil.copy(demo_template, path)
    for suffix in ("-wal", "-shm"):
        side = demo_template.with_name(demo_template.name + suffix)
        if side.exists():
            shutil.copy(side, path.with_name(path.name + suffix))
    return str(path)
