"""Fixtures of the HTTP tests: one real uvicorn process per test module and backend."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # served.py, server_config.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))  # fake_openai.py

from fake_openai import FakeOpenAI
from served import BACKENDS, Server, backend_db, start_server
from turns_config import LLM_KEY, allow_models


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


@pytest.fixture(scope="module")
def llm_endpoint() -> Iterator[FakeOpenAI]:
    """A scripted OpenAI-compatible endpoint (a fake of the external LLM) for a module."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def llm(llm_endpoint: FakeOpenAI) -> FakeOpenAI:
    """The module's fake LLM with an empty script and no recorded requests."""
    with llm_endpoint._lock:
        llm_endpoint.script.clear()
        llm_endpoint.requests.clear()
    return llm_endpoint


@pytest.fixture(scope="module", params=BACKENDS)
def turns_server(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    llm_endpoint: FakeOpenAI,
) -> Iterator[Server]:
    """A server that allows the fake LLM as a model endpoint (``turns_config``) and knows
    its key; ``server_config``'s hook composes on top of each app's stored profile."""
    tmp = tmp_path_factory.mktemp("turns")
    running = start_server(
        backend_db(request, request.param, tmp),
        tmp,
        env_extra={"THREADLINE_TEST_LLM_KEY": LLM_KEY},
        serve_args=f", allow_models={allow_models(llm_endpoint.url)!r}",
    )
    try:
        yield running
    finally:
        running.stop()
