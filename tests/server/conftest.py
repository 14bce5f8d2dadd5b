"""Fixtures of the HTTP tests: one real uvicorn process per test module and backend."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # served.py, server_config.py

from served import BACKENDS, Server, backend_db, start_server


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per module and backend (tests use their own session ids and apps)."""
    tmp = tmp_path_factory.mktemp("served")
    running = start_server(backend_db(request, request.param, tmp), tmp)
    try:
        yield running
    finally:
        running.stop()
