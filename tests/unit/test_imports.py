"""The library core imports nothing outside the standard library.

Drivers, frameworks and the server come in through extras and are imported only where used;
``rich``/``typer`` are imported only by the CLI. Each check runs in a fresh interpreter so that
modules imported by the test run itself cannot hide a stray import.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import threadline

# Modules allowed to import third-party packages (at import time or lazily).
NOT_CORE = (
    "threadline.cli",
    "threadline.__main__",  # python -m threadline: the CLI
    "threadline.server",
    "threadline.client",
    "threadline.integrations",
)


def _core_modules() -> list[str]:
    names = ["threadline"]
    for info in pkgutil.walk_packages(threadline.__path__, prefix="threadline."):
        if not info.name.startswith(NOT_CORE):
            names.append(info.name)
    return sorted(names)


def _third_party_imports(module: str) -> list[str]:
    script = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "std = sys.stdlib_module_names\n"
        "names = {m.split('.')[0] for m in sys.modules}\n"
        "print(json.dumps(sorted(n for n in names if n not in std and n != 'threadline'"
        " and not n.startswith('_'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_core_module_list_is_not_empty() -> None:
    modules = _core_modules()
    assert "threadline.session" in modules and "threadline.store.sqlite" in modules


@pytest.mark.parametrize("module", _core_modules())
def test_core_module_imports_only_the_standard_library(module: str) -> None:
    assert _third_party_imports(module) == []
