"""The ground layer of :class:`~threadline.Session`: its identity, its settings and its
backend (a ``Store`` view or a custom ``SessionProvider``), which every layer above reads and
writes through. Each layer adds one concern: ``_session_state`` (skills and state),
``_session_blocks`` (blocks and the frozen prompt), ``_session_tree`` (messages and the tree),
``_session_compaction`` (overlays and automatic compaction); ``threadline.session`` adds the
builder and the lifecycle.

>>> from threadline import Session
>>> Session.create(":memory:").for_session("chat").session_id
'chat'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from threadline._session_provider import ProviderBackend, SessionProvider, is_store
from threadline._settings import SessionSettings
from threadline.context import ContextBlocks, ContextConfig
from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.store import connect
from threadline.store._handle import SessionStore
from threadline.store.base import Store

__all__ = ["SessionCore", "check_name", "store_handle"]


class SessionCore:
    """Identity, settings and backend of a session (``threadline.Session`` is built on it).

    >>> from threadline import Session
    >>> isinstance(Session.create(":memory:"), SessionCore)
    True
    """

    def __init__(
        self,
        store: Store | SessionProvider | str,
        *,
        session_id: str = "default",
        user_id: str | None = None,
        app_name: str = "default",
        context: Sequence[ContextConfig] = (),
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        self._owns_store = isinstance(store, str)
        source: object = connect(store) if isinstance(store, str) else store
        self._source = source
        self._session_id = check_name("session_id", session_id)
        self._user_id = user_id
        self._app_name = check_name("app_name", app_name)
        self._settings = SessionSettings(context=list(context))
        self._settings.limit_size(size_policy, max_message_bytes)
        self._temp: dict[str, Any] = {}
        # Set by the first read or write of storage: from then on the identity (app, session,
        # user) is fixed, and for_* return a new Session instead of re-pointing this one.
        self._used = False
        # The generation a manager saw when it built this session (None: found on first use).
        self._generation_seen: int | None = None
        self._reset_runtime()

    def _reset_runtime(self) -> None:
        """Drop everything derived from the builder settings; rebuilt lazily on next use."""
        self._backend_obj: SessionStore | ProviderBackend | None = None
        self._blocks_obj: ContextBlocks | None = None
        self._frozen: str | None = None
        self._loaded: set[str] | None = None

    def _forget_generation(self, generation: int) -> None:
        """Unbind from ``generation`` (seen in a transaction that rolled back)."""
        if self._generation_seen == generation:
            self._generation_seen = None
        backend = self._backend_obj
        if isinstance(backend, SessionStore) and backend.generation == generation:
            backend.generation = None

    def _generation(self) -> int | None:
        """The generation of the session this object acts on (``None``: not bound yet)."""
        backend = self._backend_obj
        if isinstance(backend, SessionStore):
            return backend.generation
        return self._generation_seen

    # -- identity and lifecycle --------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        """This session's id.

        >>> from threadline import Session
        >>> Session.create(":memory:").for_session("chat-1").session_id
        'chat-1'
        """
        return self._session_id

    @property
    def user_id(self) -> str | None:
        """The user this session belongs to, if any.

        >>> from threadline import Session
        >>> Session.create(":memory:").user_id is None
        True
        >>> Session.create(":memory:").for_user("ana").user_id
        'ana'
        """
        return self._user_id

    @property
    def app_name(self) -> str:
        """The app namespace (``"default"`` unless set).

        >>> from threadline import Session
        >>> Session.create(":memory:").app_name
        'default'
        """
        return self._app_name

    @property
    def store(self) -> Store | None:
        """The backing Store (``None`` with a custom SessionProvider).

        >>> from threadline import Session
        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> Session.create(store).store is store
        True
        """
        return cast(Store, self._source) if is_store(self._source) else None

    @property
    def _backend(self) -> SessionStore | ProviderBackend:
        self._used = True
        if self._backend_obj is None:
            if is_store(self._source):
                # Built here rather than by store.session(): a wrapper around a store
                # (instrumentation, a proxy) then sees every call.
                self._backend_obj = SessionStore(
                    cast(Store, self._source),
                    self._app_name,
                    self._session_id,
                    user_id=self._user_id,
                    size_policy=self._settings.size_policy,
                    max_message_bytes=self._settings.max_message_bytes,
                    generation=self._generation_seen,
                )
                self._backend_obj._takes_normalised = True  # normalised here, once
            elif isinstance(self._source, SessionProvider):
                self._backend_obj = ProviderBackend(self._source)
            else:
                raise InvalidArgumentError(
                    "Session needs a threadline Store, a store URL or a SessionProvider, "
                    f"got {type(self._source).__name__}"
                )
        return self._backend_obj

    def _store_handle(self, feature: str) -> SessionStore:
        """The session's view of its Store, bound to the session's generation like every
        other storage call (a custom provider has none: ``ThreadlineError``)."""
        self._require_store(feature)
        return cast(SessionStore, self._backend)

    def _require_store(self, feature: str) -> Store:
        self._used = True
        store = self.store
        if store is None:
            raise ThreadlineError(f"{feature} needs a threadline Store, not a custom provider")
        return store


def check_name(what: str, value: object) -> str:
    """``value`` if it is a usable identity part (a non-empty string), else raise.

    >>> check_name("session_id", "chat")
    'chat'
    """
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty string, got {value!r}")
    return value


def store_handle(session: SessionCore, feature: str) -> SessionStore:
    """The session's view of its Store (``store.session(app, session_id)``), bound to the
    session's generation like every other storage call of it — for an adapter that writes
    beside the session; ``feature`` names it in the error a custom provider gets.

    >>> from threadline import Session
    >>> s = Session(":memory:", session_id="s1")
    >>> store_handle(s, "an adapter").session_id
    's1'
    """
    return session._store_handle(feature)
