"""The app the client tests serve with uvicorn (``--factory served_app:make``), and the
configuration both sides of a comparison share (the in-process manager gets the same one)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import threadline
from threadline import CompactResult, SessionManager
from threadline.types import Message

APP = "travel"
DB_ENV = "THREADLINE_CLIENT_TEST_DB"


def summarize(history: list[Message]) -> CompactResult | None:
    """A deterministic compaction function: everything but the last two messages."""
    if len(history) < 3:
        return None
    return CompactResult(history[0]["id"], history[-3]["id"], f"{len(history) - 2} earlier turns.")


def configure(manager: SessionManager) -> SessionManager:
    """Blocks and compaction, identical in-process and behind the server."""
    return manager.with_context("memory", max_tokens=200).on_compaction(summarize)


def make() -> object:
    """The ASGI app on the store named by ``THREADLINE_CLIENT_TEST_DB``."""
    from threadline.server import create_app

    return create_app(threadline.connect(os.environ[DB_ENV]), configure=configure)


@dataclass(frozen=True)
class Served:
    """A running server: its URL, a key of app ``travel`` and the store URL behind it."""

    url: str
    key: str
    store_url: str

    def new_key(self, user: str | None = None, app: str = APP) -> str:
        """Another key on the same store (created directly in the database)."""
        from threadline.server import create_key

        with threadline.connect(self.store_url) as store:
            return create_key(store, app, user)
