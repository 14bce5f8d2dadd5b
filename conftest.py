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


def _client_example(item: pytest.Item) -> bool:
    test = getattr(item, "dtest", None)
    return test is not None and str(test.globs.get("__name__", "")).startswith("threadline.client")


@pytest.fixture(autouse=True)
def _server_for_client_doctests(
    request: pytest.FixtureRequest, doctest_namespace: dict[str, Any]
) -> Iterator[None]:
    """Examples of ``threadline.client`` get ``client`` (a ``Client``), ``key`` and
    ``aio_http`` (an ``httpx.AsyncClient`` for ``AsyncClient``) talking to a fresh app served
    in-process, as the module docstring of ``threadline.client`` builds them."""
    if not _client_example(request.node):
        yield
        return
    import httpx
    from starlette.testclient import TestClient

    import threadline
    from threadline.client import Client
    from threadline.server import create_app, create_key

    store = threadline.connect(":memory:")
    app = create_app(store)
    key = create_key(store, "travel")
    with TestClient(app) as http:
        doctest_namespace["key"] = key
        doctest_namespace["client"] = Client("http://testserver", key, http_client=http)
        doctest_namespace["aio_http"] = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
        try:
            yield
        finally:
            store.close()
