"""Factories that hand the OpenAI Agents SDK's own session tests a ``ThreadlineSession``
(``../shared/peer-suites/run.sh oa tests/peer/oa_factory.py:make_session``).

``db_path=None`` means "a private store" (the SDK's in-memory default); two sessions built with
the same ``db_path`` share one store. On PostgreSQL (``make_pg_session``) there is one server, so
each ``db_path`` maps to its own app instead: sessions of the same path share it, others never
meet.
"""

from __future__ import annotations

import functools
import hashlib
import os
import uuid
from typing import Any
from urllib.parse import quote

from threadline.integrations.openai_agents import ThreadlineSession


def make_session(session_id: str, db_path: str | None, session_settings: Any = None) -> Any:
    store = "sqlite:///" + db_path if db_path is not None else ":memory:"
    return ThreadlineSession(session_id, store, session_settings=session_settings)


_PG_SCHEMA = "threadline_oa_peer"


@functools.cache
def _pg_dsn() -> str:
    """The test server's DSN with a schema of its own first on the search path (created
    afresh once per run), so the suite's tables never land in ``public``."""
    import psycopg

    base = os.environ["THREADLINE_TEST_PG_DSN"]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {_PG_SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {_PG_SCHEMA}")
    options = quote(f"-csearch_path={_PG_SCHEMA},public", safe="")
    return f"{base}{'&' if '?' in base else '?'}options={options}"


def make_pg_session(session_id: str, db_path: str | None, session_settings: Any = None) -> Any:
    dsn = _pg_dsn()
    key = db_path if db_path is not None else uuid.uuid4().hex
    app = "oa-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return ThreadlineSession(session_id, dsn, app_name=app, session_settings=session_settings)
