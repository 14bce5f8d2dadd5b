"""Factories that hand the OpenAI Agents SDK's own session tests a ``ThreadlineSession``
(``../shared/peer-suites/run.sh oa tests/peer/oa_factory.py:make_session``).

``db_path=None`` means "a private store" (the SDK's in-memory default); two sessions built with
the same ``db_path`` share one store. On PostgreSQL (``make_pg_session``) there is one server, so
each ``db_path`` maps to its own app instead: sessions of the same path share it, others never
meet.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import Any

from threadline.integrations.openai_agents import ThreadlineSession


def make_session(session_id: str, db_path: str | None, session_settings: Any = None) -> Any:
    store = "sqlite:///" + db_path if db_path is not None else ":memory:"
    return ThreadlineSession(session_id, store, session_settings=session_settings)


def make_pg_session(session_id: str, db_path: str | None, session_settings: Any = None) -> Any:
    dsn = os.environ["THREADLINE_TEST_PG_DSN"]
    key = db_path if db_path is not None else uuid.uuid4().hex
    app = "oa-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return ThreadlineSession(session_id, dsn, app_name=app, session_settings=session_settings)
