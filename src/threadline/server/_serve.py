"""``serve``: run the service with uvicorn (one process, or several workers)."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

from threadline.errors import InvalidArgumentError
from threadline.manager import SessionManager
from threadline.server._limits import DEFAULT_MAX_BODY
from threadline.server._protocol import (
    BODY_TIMEOUT,
    ENV_BODY_TIMEOUT,
    ENV_HEAD_TIMEOUT,
    HEAD_TIMEOUT,
)

_ENV_DB = "THREADLINE_SERVE_DB"
_ENV_CONFIG = "THREADLINE_SERVE_CONFIG"
_ENV_AUTH = "THREADLINE_SERVE_AUTH"
_ENV_APP = "THREADLINE_SERVE_APP"
_ENV_USER = "THREADLINE_SERVE_USER"
_ENV_CORS = "THREADLINE_SERVE_CORS"  # origins, one per line
_ENV_MAX_BODY = "THREADLINE_SERVE_MAX_BODY"
_ENV_ALLOW_MODELS = "THREADLINE_SERVE_ALLOW_MODELS"  # NAME=base_url,env, one per line
KEEP_ALIVE_TIMEOUT = 5.0
"""Default seconds a kept-alive connection may stay silent after a response."""
ENV_KEY_CACHE = "THREADLINE_KEY_CACHE_TTL"
"""Seconds a worker remembers a key found live (default 1; 0 looks keys up on every
request): a revoked key is refused within that time."""
ENV_POLL = "THREADLINE_EVENTS_POLL"
"""Seconds between two event polls of a worker (default 0.5): the only cross-worker path on
SQLite, a safety net beside LISTEN/NOTIFY on PostgreSQL."""


def load_configure(spec: str | None) -> Callable[[SessionManager], SessionManager | None] | None:
    """The ``configure`` hook named ``module:function`` (``None`` for none).

    >>> load_configure(None) is None
    True
    >>> load_configure("os.path:basename").__name__
    'basename'
    """
    if not spec:
        return None
    module, _, name = spec.partition(":")
    if not module or not name:
        raise InvalidArgumentError(f"--config must be module:function, got {spec!r}")
    fn: Any = importlib.import_module(module)
    for part in name.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise InvalidArgumentError(f"--config {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


def parse_allow_model(spec: str) -> tuple[str, tuple[str, str | None]]:
    """One ``--allow-model NAME=base_url[,env]``: a model endpoint (and the environment
    variable holding its key) that tenants' profiles may name.

    >>> parse_allow_model("local=http://127.0.0.1:8080/v1,LLM_KEY")
    ('local', ('http://127.0.0.1:8080/v1', 'LLM_KEY'))
    >>> parse_allow_model("local")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: --allow-model must be NAME=base_url[,env], got 'local'
    """
    name, _, rest = spec.partition("=")
    url, _, env = rest.partition(",")
    if not name.strip() or not url.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"--allow-model must be NAME=base_url[,env], got {spec!r}")
    return name.strip(), (url.strip(), env.strip() or None)


def with_replicas(db: str, replicas: Sequence[str]) -> str:
    """``db`` with a ``replica=`` URL parameter per replica (URL-encoded).

    >>> with_replicas("postgresql://p/db", ["postgresql://r1/db"])
    'postgresql://p/db?replica=postgresql%3A%2F%2Fr1%2Fdb'
    >>> with_replicas("agent.db", ["postgresql://r1/db"])
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: --replica needs a postgresql:// database, got 'agent.db'
    """
    if isinstance(replicas, str):
        raise InvalidArgumentError("replicas must be a list of PostgreSQL URLs, not a string")
    if not replicas:
        return db
    if not db.startswith(("postgresql://", "postgres://")):
        raise InvalidArgumentError(f"--replica needs a postgresql:// database, got {db!r}")
    extra = "&".join(f"replica={quote(str(url), safe='')}" for url in replicas)
    return f"{db}{'&' if '?' in db else '?'}{extra}"


def app_from_environment() -> Any:
    """The app of one uvicorn worker, from what :func:`serve` put in the environment."""
    from threadline.server._app import create_app

    return create_app(
        os.environ[_ENV_DB],
        configure=load_configure(os.environ.get(_ENV_CONFIG) or None),
        auth=os.environ.get(_ENV_AUTH, "1") == "1",
        poll_interval=float(os.environ.get(ENV_POLL) or 0.5),
        key_cache_ttl=float(os.environ.get(ENV_KEY_CACHE) or 1.0),
        app=os.environ.get(_ENV_APP) or None,
        user=os.environ.get(_ENV_USER) or None,
        cors_origins=tuple(o for o in os.environ.get(_ENV_CORS, "").splitlines() if o),
        max_body_bytes=int(os.environ.get(_ENV_MAX_BODY) or DEFAULT_MAX_BODY),
        allow_models=dict(
            parse_allow_model(line) for line in os.environ.get(_ENV_ALLOW_MODELS, "").splitlines()
        ),
    )


def serve(
    db: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    config: str | None = None,
    auth: bool = True,
    app: str | None = None,
    user: str | None = None,
    cors_origins: tuple[str, ...] | list[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY,
    keep_alive_timeout: float = KEEP_ALIVE_TIMEOUT,
    head_timeout: float = HEAD_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    replicas: Sequence[str] = (),
    allow_models: Sequence[str] = (),
) -> None:
    """Run the HTTP service on ``db`` with uvicorn until interrupted.

    ``config`` names the ``configure`` hook as ``module:function``; ``workers`` > 1 starts
    that many processes (each with its own store connection; events reach every worker).
    ``app``/``user`` serve one app (one user) only; ``cors_origins`` and ``max_body_bytes``
    are those of :func:`create_app`. Slow clients are cut off (docs/server.md): a
    connection idle after a response for ``keep_alive_timeout`` seconds, a request head not
    complete within ``head_timeout`` seconds, a body that pauses ``body_timeout`` seconds.
    ``replicas`` (PostgreSQL URLs) are read replicas of a PostgreSQL ``db`` (``replica=``
    URL parameters added to it, so every worker gets them): write responses carry
    ``X-Threadline-Read-After`` and reads echoing it see the write on any worker.
    ``allow_models`` (``NAME=base_url,env`` each) are the model endpoints a profile written
    over HTTP may name. Every app is configured from its stored profile; ``config``
    composes on top.

    >>> serve("agent.db", port=8000, workers=4)  # doctest: +SKIP
    """
    import uvicorn

    from threadline.server._app import NO_AUTH_WARNING
    from threadline.server._tenancy import check_served

    load_configure(config)  # fail here, once, rather than in every worker
    if isinstance(allow_models, str):
        raise InvalidArgumentError("allow_models must be a list of NAME=base_url,env")
    for spec in allow_models:
        parse_allow_model(spec)
    os.environ[_ENV_ALLOW_MODELS] = "\n".join(allow_models)
    if workers < 1:
        raise InvalidArgumentError("workers must be at least 1")
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int):
        raise InvalidArgumentError("max_body_bytes must be an integer")
    if max_body_bytes < 1:
        raise InvalidArgumentError("max_body_bytes must be at least 1")
    for name, seconds in (
        ("keep_alive_timeout", keep_alive_timeout),
        ("head_timeout", head_timeout),
        ("body_timeout", body_timeout),
    ):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise InvalidArgumentError(f"{name} must be a positive number of seconds")
    if isinstance(cors_origins, str):
        raise InvalidArgumentError("cors_origins must be a list of origins, not a string")
    for origin in cors_origins:
        if not isinstance(origin, str) or not origin or "\n" in origin:
            raise InvalidArgumentError(f"not a CORS origin: {origin!r}")
    os.environ[_ENV_CORS] = "\n".join(cors_origins)
    os.environ[_ENV_MAX_BODY] = str(max_body_bytes)
    os.environ[ENV_HEAD_TIMEOUT] = str(float(head_timeout))
    os.environ[ENV_BODY_TIMEOUT] = str(float(body_timeout))
    os.environ[_ENV_DB] = with_replicas(db, replicas)
    os.environ[_ENV_CONFIG] = config or ""
    os.environ[_ENV_AUTH] = "1" if auth else "0"
    check_served(app=app, user=user)
    os.environ[_ENV_APP] = app or ""
    os.environ[_ENV_USER] = user or ""
    if not auth:
        print(NO_AUTH_WARNING, file=sys.stderr, flush=True)
    logging.getLogger("threadline").setLevel(logging.INFO)
    uvicorn.run(
        "threadline.server._serve:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        # h11 with deadlines for a slow request head or body (_protocol); a silent
        # keep-alive connection is closed by uvicorn itself.
        http="threadline.server._protocol:TimedH11Protocol",
        timeout_keep_alive=keep_alive_timeout,  # type: ignore[arg-type]  # float works
        # Event streams never end on their own: give them this long, then close them.
        timeout_graceful_shutdown=3,
    )
