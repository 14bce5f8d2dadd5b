"""The ``configure`` hook the test servers run with (``--config server_config:configure``)."""

from __future__ import annotations

from typing import Any

from threadline import CompactResult, SessionManager


def summarize(history: list[dict[str, Any]]) -> CompactResult | None:
    """Summarise everything but the newest message (declines below three messages)."""
    if len(history) < 3:
        return None
    return CompactResult(history[0]["id"], history[-2]["id"], "Summary of the earlier turns.")


def configure(manager: SessionManager) -> SessionManager:
    """A writable ``memory`` block, a read-only ``soul``, an app-wide ``rules`` block, a
    compaction function."""
    return (
        manager.with_context("soul", provider="You are a careful assistant.")
        .with_context("memory", description="Learned facts", max_tokens=200)
        .with_context("rules", description="Rules of the whole app", scope="app")
        .on_compaction(summarize)
    )
