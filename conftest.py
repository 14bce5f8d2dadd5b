"""Doctests of ``src/``: examples that need PostgreSQL get ``pg_url`` or are skipped.

pytest runs every ``>>>`` example in the library (``--doctest-modules``, see pyproject.toml).
An example that names ``pg_url`` runs against a fresh schema of the server named by
``THREADLINE_TEST_PG_DSN`` (``scripts/test`` starts one) and is skipped without it, unless
``THREADLINE_REQUIRE_PG=1`` promised a server, in which case it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest


def _needs_postgres(item: pytest.Item) -> bool:
    test = getattr(item, "dtest", None)  # set on doctest items only
    return test is not None and any("pg_url" in example.source for example in test.examples)


@pytest.fixture(autouse=True)
def _postgres_for_doctests(
    request: pytest.FixtureRequest, doctest_namespace: dict[str, Any]
) -> Iterator[None]:
    if not _needs_postgres(request.node):
        yield
        return
    base = os.environ.get("THREADLINE_TEST_PG_DSN", "")
    if not base:
        if os.environ.get("THREADLINE_REQUIRE_PG") == "1":
            pytest.fail("THREADLINE_REQUIRE_PG=1 but THREADLINE_TEST_PG_DSN is not set")
        pytest.skip("this example needs PostgreSQL (THREADLINE_TEST_PG_DSN)")
    import psycopg

    schema = f"doc_{uuid.uuid4().hex}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in base else "?"
    options = quote(f"-csearch_path={schema},public", safe="")
    doctest_namespace["pg_url"] = f"{base}{separator}options={options}&application_name={schema}"
    try:
        yield
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s AND pid <> pg_backend_pid()",
                [schema],
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
