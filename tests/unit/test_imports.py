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
from typing import Any

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


def _printed_json(script: str) -> Any:
    """What ``script``, run in a fresh interpreter, prints as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return json.loads(done.stdout)


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
    found: list[str] = _printed_json(script)
    return found


def test_core_module_list_is_not_empty() -> None:
    modules = _core_modules()
    assert "threadline.session" in modules and "threadline.store.sqlite" in modules


@pytest.mark.parametrize("module", _core_modules())
def test_core_module_imports_only_the_standard_library(module: str) -> None:
    assert _third_party_imports(module) == []


def test_each_framework_adapter_is_an_extra_pinned_to_its_suite_version() -> None:
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert extras["openai-agents"] == ["openai-agents==0.24.0"]  # integrations.md §14
    assert extras["adk"] == ["google-adk==2.13.0"]


def test_importing_threadline_and_its_async_api_loads_no_framework() -> None:
    script = (
        "import json, sys, threadline, threadline.aio, threadline.integrations\n"
        "from threadline import AsyncSession, AsyncSessionManager\n"
        "from threadline.aio import AsyncRunner\n"
        "print(json.dumps([n for n in ('agents', 'google', 'openai', 'anthropic')"
        " if n in sys.modules]))\n"
    )
    assert _printed_json(script) == []
