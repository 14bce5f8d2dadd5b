"""What the agent-turn route tests store as an app's profile: a ``model`` naming the scripted
LLM endpoint (``fake_openai``) and the ``runner`` defaults. The server runs with
``server_config``'s hook (blocks, compaction) composed on top of each app's stored profile,
and with the fake endpoint in its ``--allow-model`` list, so a test stores the profile through
``PUT /v1/profile`` as a tenant would."""

from __future__ import annotations

from typing import Any

import httpx

RUNNER = {"runs": 3, "max_context_tokens": None, "max_steps": 4}
LLM_KEY = "sk-turns-test-9f8e7d6c5b4a"  # the server's THREADLINE_TEST_LLM_KEY
KEY_ENV = "THREADLINE_TEST_LLM_KEY"
UNSET_ENV = "THREADLINE_TEST_UNSET_KEY"  # allowed, but not set on the server


def allow_models(url: str) -> list[str]:
    """The server's ``--allow-model`` list for the fake endpoint at ``url``."""
    return [f"fake={url},{KEY_ENV}", f"fake-nokey={url},{UNSET_ENV}"]


def profile_doc(url: str, key_env: str = KEY_ENV) -> dict[str, Any]:
    """A profile naming the fake endpoint as the app's model, with :data:`RUNNER`."""
    return {
        "model": {"type": "openai", "base_url": url, "model": "fake-model", "api_key_env": key_env},
        "runner": dict(RUNNER),
    }


def store_profile(http: httpx.Client, url: str, key_env: str = KEY_ENV) -> None:
    """``PUT /v1/profile`` with :func:`profile_doc` (an app-wide key)."""
    answer = http.put("/v1/profile", json=profile_doc(url, key_env))
    assert answer.status_code == 200, answer.text
