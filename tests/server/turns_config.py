"""The ``configure`` hook of the agent-turn route tests (``--config turns_config:configure``):
``server_config``'s blocks and compaction, plus what a stored profile gives the turn routes —
a ``model`` and the ``runner`` defaults — for apps whose name starts with ``llm-`` (the model
endpoint: ``THREADLINE_TEST_LLM_URL``, its key in ``THREADLINE_TEST_LLM_KEY``; an app named
``llm-nokey-...`` names a key variable that is not set). Other apps have no model."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from server_config import configure as configure_base

from threadline import SessionManager

RUNNER = {"runs": 3, "max_context_tokens": None, "max_steps": 4}
LLM_KEY = "sk-turns-test-9f8e7d6c5b4a"  # the server's THREADLINE_TEST_LLM_KEY


def model_spec(app: str) -> dict[str, Any] | None:
    """The profile's ``model`` for ``app`` (``None``: no model)."""
    if not app.startswith("llm-"):
        return None
    key_env = (
        "THREADLINE_TEST_UNSET_KEY" if app.startswith("llm-nokey-") else "THREADLINE_TEST_LLM_KEY"
    )
    return {
        "type": "openai",
        "base_url": os.environ.get("THREADLINE_TEST_LLM_URL", "http://127.0.0.1:9/v1"),
        "model": "fake-model",
        "api_key_env": key_env,
    }


def configure(manager: SessionManager) -> SessionManager:
    configured = configure_base(manager)
    # What a stored profile carries for the turn routes (until profiles are stored).
    configured.profile = SimpleNamespace(  # type: ignore[attr-defined]
        model=model_spec(manager.app_name), runner=dict(RUNNER)
    )
    return configured
