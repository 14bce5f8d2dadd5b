"""``/docs`` (Swagger UI) and ``/redoc`` render in Chromium with every request outside the
server refused: their scripts and styles are served by the service (fastapi-offline's files).
The one outside request left is ReDoc's "API docs by Redocly" logo image, built into its
bundle: refused, the page is whole without it."""

from __future__ import annotations

from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails) with the reason
    expect = None

Server = Any  # conftest.Server

pytestmark = pytest.mark.timeout(180)


def offline(page: Any, server: Server) -> list[tuple[str, str]]:
    """Refuse every request that does not go to the server; return the refused ones as
    (resource type, URL)."""
    refused: list[tuple[str, str]] = []

    def gate(route: Any) -> None:
        if route.request.url.startswith(server.base):
            route.continue_()
        else:
            refused.append((route.request.resource_type, route.request.url))
            route.abort()

    page.route("**/*", gate)
    return refused


@pytest.mark.parametrize(
    ("path", "ready"),
    [("/docs", ".swagger-ui .info .title"), ("/redoc", "h1")],
    ids=["swagger", "redoc"],
)
def test_api_docs_render_offline(
    page: Any, server: Server, artifacts: Any, path: str, ready: str
) -> None:
    pytest.importorskip("fastapi_offline", reason="the server extra's fastapi-offline")
    refused = offline(page, server)
    page.goto(f"{server.base}{path}")
    expect(page.locator(ready).first).to_contain_text("threadline", timeout=30_000)
    expect(page.get_by_text("/v1/sessions/{session_id}/path").first).to_be_attached()
    page.screenshot(path=str(artifacts / f"40-api{path.replace('/', '-')}.png"))
    assert [kind for kind, _ in refused if kind != "image"] == [], refused
