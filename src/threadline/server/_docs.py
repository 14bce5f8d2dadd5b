"""``/docs`` (Swagger UI) and ``/redoc`` served with no CDN: their scripts and styles come from
the ``fastapi-offline`` package (a dependency of the ``server`` extra), mounted at
``/docs-assets``. Without that package the pages fall back to FastAPI's own (CDN) ones."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def offline_assets() -> Path | None:
    """The folder holding ``swagger-ui-bundle.js``, ``swagger-ui.css`` and
    ``redoc.standalone.js``, or None when ``fastapi-offline`` is not installed.

    >>> found = offline_assets()
    >>> found is None or (found / "redoc.standalone.js").is_file()
    True
    """
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


def install_docs(app: FastAPI, assets: Path) -> None:
    """Serve ``/docs`` and ``/redoc`` on ``app`` from ``assets`` (the app was made with
    ``docs_url=None, redoc_url=None``).

    >>> from fastapi.testclient import TestClient
    >>> folder = offline_assets()
    >>> app = FastAPI(docs_url=None, redoc_url=None)
    >>> if folder is not None:
    ...     install_docs(app, folder)
    ...     page = TestClient(app).get("/docs").text
    ...     assert "/docs-assets/swagger-ui-bundle.js" in page and "cdn" not in page
    """
    app.mount(ASSETS, StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
