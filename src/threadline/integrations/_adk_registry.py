"""The ``threadline`` URI schemes of ADK's service registry (``adk web``, ``adk api_server``).

ADK builds its services from ``--session_service_uri``, ``--memory_service_uri`` and
``--artifact_service_uri`` through ``google.adk.cli.service_registry``; an agents directory
adds schemes with a ``services.py`` (or ``services.yaml``) that ADK imports before it builds
them. The factories here map a ``threadline`` URI onto a threadline store URL (pure, no I/O:
the store opens at the service's first storage call, in a worker thread):

* ``threadline:///rel.db`` -> ``sqlite:///rel.db`` (relative to the server's working
  directory), ``threadline:////abs/path.db`` -> the absolute path (SQLAlchemy's convention,
  as ADK's own ``sqlite://`` scheme), ``threadline://`` -> ``:memory:``; a query string
  (``?synchronous=full``) is kept.
* ``threadline+postgresql://...`` (and ``threadline+postgres://``, ``threadline+sqlite://``)
  -> the URL after ``threadline+``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from threadline.errors import InvalidArgumentError
from threadline.integrations._adk_memory import ThreadlineMemoryService
from threadline.integrations._adk_sessions import ThreadlineSessionService

SCHEMES = ("threadline", "threadline+sqlite", "threadline+postgresql", "threadline+postgres")
# What ADK passes every factory besides the URI: the agents directory (unused here).
_ADK_KWARGS = frozenset({"agents_dir"})


def store_url(uri: str, **kwargs: Any) -> str:
    """The threadline store URL a ``threadline`` service URI names.

    ``kwargs`` are what ADK passes a factory: ``agents_dir`` is ignored; any other (the
    ``session_db_kwargs`` of ADK's ``get_fast_api_app``) is an ``InvalidArgumentError``
    naming it, as is an unknown scheme or a host in a ``threadline://`` URI (it names a
    local SQLite file).

    >>> store_url("threadline:///adk.db"), store_url("threadline:////var/lib/adk.db")
    ('sqlite:///adk.db', 'sqlite:////var/lib/adk.db')
    >>> store_url("threadline+postgresql://u@db/agents", agents_dir="/srv/agents")
    'postgresql://u@db/agents'
    >>> store_url("threadline://")
    ':memory:'
    """
    extra = sorted(set(kwargs) - _ADK_KWARGS)
    if extra:
        raise InvalidArgumentError(
            f"threadline's ADK services take no options besides the URI; got {extra}"
        )
    scheme, _, rest = uri.partition(":")
    scheme = scheme.lower()
    if scheme not in SCHEMES:
        raise InvalidArgumentError(
            f"not a threadline service URI: {uri!r} (schemes: {', '.join(SCHEMES)})"
        )
    if scheme != "threadline":
        return scheme.removeprefix("threadline+") + ":" + rest
    parts = urlsplit(uri)
    if parts.netloc:
        raise InvalidArgumentError(
            f"threadline:// names a local SQLite file, not a host ({parts.netloc!r} in {uri!r}): "
            "use threadline:///relative.db, threadline:////absolute.db or threadline+postgresql://"
        )
    if not parts.path:
        return ":memory:"
    return "sqlite:" + rest


def session_service(uri: str, **kwargs: Any) -> ThreadlineSessionService:
    """ADK's session-service factory for the ``threadline`` schemes.

    >>> session_service("threadline://", agents_dir=".").store
    LazyStore(':memory:', not opened)
    """
    return ThreadlineSessionService(store_url(uri, **kwargs))


def memory_service(uri: str, **kwargs: Any) -> ThreadlineMemoryService:
    """ADK's memory-service factory for the ``threadline`` schemes.

    >>> memory_service("threadline://", agents_dir=".").store
    LazyStore(':memory:', not opened)
    """
    return ThreadlineMemoryService(store_url(uri, **kwargs))


def artifact_factory(find: Callable[[], Any]) -> Callable[..., Any]:
    """ADK's artifact-service factory for the ``threadline`` schemes: ``find()`` returns the
    artifact service class (or ``None`` when this threadline has none), looked up when ADK
    builds the service, so a missing class is a clear ``InvalidArgumentError`` (a
    ``ValueError``: ``adk`` reports it as a usage error) rather than an import failure.

    >>> factory = artifact_factory(lambda: None)
    >>> factory("threadline:///adk.db")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: this threadline has no ThreadlineArtifactService...
    """

    def factory(uri: str, **kwargs: Any) -> Any:
        url = store_url(uri, **kwargs)
        cls = find()
        if cls is None:
            raise InvalidArgumentError(
                "this threadline has no ThreadlineArtifactService "
                "(threadline.integrations.adk): --artifact_service_uri threadline:... is "
                "not available; use memory:// or file://<dir> for artifacts"
            )
        return cls(url)

    return factory


def register(registry: Any, find_artifact_service: Callable[[], Any]) -> None:
    """Register every ``threadline`` scheme for sessions, memory and artifacts on an ADK
    ``ServiceRegistry`` (``registry``; ``None`` for ADK's own). Registering twice replaces
    the same factories.

    >>> from google.adk.cli.service_registry import ServiceRegistry
    >>> registry = ServiceRegistry()
    >>> register(registry, lambda: None)
    >>> type(registry.create_session_service("threadline:///adk.db")).__name__
    'ThreadlineSessionService'
    """
    if registry is None:
        from google.adk.cli.service_registry import get_service_registry

        registry = get_service_registry()
    artifacts = artifact_factory(find_artifact_service)
    for scheme in SCHEMES:
        registry.register_session_service(scheme, session_service)
        registry.register_memory_service(scheme, memory_service)
        registry.register_artifact_service(scheme, artifacts)
