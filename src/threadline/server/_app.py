"""``create_app``: the FastAPI application of the HTTP service."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from threadline.errors import ThreadlineError
from threadline.manager import SessionManager
from threadline.server import _errors
from threadline.server._auth import Authenticate
from threadline.server._docs import install_docs, offline_assets
from threadline.server._events import EventHub
from threadline.server._freshness import HEADER as READ_AFTER_HEADER
from threadline.server._freshness import ReadAfter
from threadline.server._limits import DEFAULT_MAX_BODY, BodyLimit
from threadline.server._models import HealthOut
from threadline.server._paths import RawPaths
from threadline.server._redact import redact_server_logs
from threadline.server._tenancy import Forbidden, NotFound, Tenants
from threadline.store import PostgresStore, Store, connect

_log = logging.getLogger("threadline.server")

STATIC = Path(__file__).parent / "static"

NO_AUTH_WARNING = (
    "threadline: AUTHENTICATION IS OFF (--no-auth): anyone who reaches this server reads and "
    "writes every app (named by the X-Threadline-App header). Never expose it beyond localhost."
)


def _error(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse(_errors.body(kind, message), status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "malformed request"


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ThreadlineError)
    async def library_error(request: Request, exc: ThreadlineError) -> JSONResponse:
        status = _errors.status_of(exc)
        if status >= 500:
            _log.warning("threadline: storage error on %s: %s", request.url.path, exc)
        return _error(status, type(exc).__name__, _errors.message_of(exc))

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden) -> JSONResponse:
        return _error(403, "Forbidden", str(exc))

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> JSONResponse:
        return _error(404, "NotFound", str(exc))

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "ValidationError", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, _errors.http_name(exc.status_code), str(exc.detail))

    @app.exception_handler(Exception)
    async def defect(request: Request, exc: Exception) -> JSONResponse:
        _log.error("threadline: unexpected error on %s", request.url.path, exc_info=exc)
        return _error(500, "InternalServerError", "unexpected server error (logged)")


def create_app(
    store: Store | str,
    *,
    configure: Callable[[SessionManager], SessionManager | None] | None = None,
    auth: bool = True,
    max_body_bytes: int = DEFAULT_MAX_BODY,
    cors_origins: tuple[str, ...] | list[str] = (),
    poll_interval: float = 0.5,
    key_cache_ttl: float = 1.0,
    app: str | None = None,
    user: str | None = None,
    allow_models: Mapping[str, tuple[str, str | None]] | None = None,
) -> FastAPI:
    """The HTTP service over a store (or a store URL, opened here and closed at shutdown).

    ``configure`` receives the ``SessionManager`` built for each app and returns it configured
    (blocks, compaction, summariser). With ``auth=False`` the app is named by the
    ``X-Threadline-App`` header (default ``"default"``) and no key is asked for. A key found
    live is remembered by the worker for ``key_cache_ttl`` seconds (0: looked up on every
    request), so a revoked key is refused within that time. ``app`` (and ``user``) narrow the
    service to one app (and one user): other apps' keys (and keys bound to other users) are
    401, an app-wide key acts as bound to ``user``, and without auth every request is that
    app's (and user's). Every app is configured from its stored profile (``configure``
    composes on top); ``allow_models`` (``name -> (base_url, api_key_env)``) are the model
    endpoints a profile written over HTTP may name (api.md clarification 27).

    >>> from fastapi.testclient import TestClient
    >>> app = create_app(":memory:", auth=False)
    >>> with TestClient(app) as client:
    ...     client.post("/v1/sessions", json={"session_id": "s1"}).status_code
    ...     client.get("/v1/sessions/nope").json()["error"]["type"]
    201
    'SessionNotFoundError'
    """
    owned = isinstance(store, str)
    opened: Store = connect(store) if isinstance(store, str) else store
    pg_dsn = opened.dsn if isinstance(opened, PostgresStore) else None
    hub = EventHub(opened, pg_dsn, poll_interval)
    tenants = Tenants(
        opened, configure, auth, key_cache_ttl, app=app, user=user, allowed_models=allow_models
    )
    if not auth:
        _log.warning(NO_AUTH_WARNING)
    redact_server_logs()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()
            if owned:
                opened.close()

    assets = offline_assets()
    docs = {} if assets is None else {"docs_url": None, "redoc_url": None}
    service = FastAPI(
        **docs,  # type: ignore[arg-type]
        title="threadline",
        summary="Durable, branching, searchable conversation memory for LLM agents",
        version=_version(),
        lifespan=lifespan,
    )
    service.state.tenants = tenants
    service.state.hub = hub
    service.state.store = opened
    _install_error_handlers(service)
    _include_routes(service)
    if assets is not None:
        install_docs(service, assets)
    if STATIC.is_dir():
        service.mount("/ui", StaticFiles(directory=STATIC, html=True), name="ui")
    # Outermost last: paths are fixed first, then CORS answers (preflights need no key), then
    # the key is checked (before the body is read), then the body is capped.
    service.add_middleware(ReadAfter)
    service.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    service.add_middleware(Authenticate, tenants=tenants)
    if cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        service.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=[READ_AFTER_HEADER],
        )
    service.add_middleware(RawPaths)
    return service


def _include_routes(app: FastAPI) -> None:
    from threadline.server import (
        _routes_data,
        _routes_events,
        _routes_memory,
        _routes_messages,
        _routes_profile,
        _routes_search,
        _routes_sessions,
        _routes_turns,
    )

    @app.get("/healthz", response_model=HealthOut, tags=["service"])
    def healthz() -> Any:
        """Liveness (no key needed)."""
        return {"status": "ok"}

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/" if STATIC.is_dir() else "/docs")

    for module in (
        _routes_sessions,
        _routes_messages,
        _routes_memory,
        _routes_search,
        _routes_events,
        _routes_data,
        _routes_profile,
        _routes_turns,
    ):
        app.include_router(module.routes)


def _version() -> str:
    from threadline import __version__

    return __version__
