"""What every :class:`~threadline.SessionManager` is built on: its settings (the builder
methods), its cache of ``Session`` objects and the ownership check of a session it hands out.

The manager's verbs (``threadline.manager``) build on this; the builder settings apply to
every session it hands out afterwards.

>>> from threadline import SessionManager
>>> m = SessionManager(":memory:").with_context("memory")
>>> m.get_session("s1", user_id="ana") is m.get_session("s1", user_id="ana")
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

from threadline._ownership import not_found, visible_to
from threadline._settings import Compactor, ErrorHandler, SessionSettings
from threadline._state import check_user_keys, split_delta, validate_delta
from threadline._validate import check_int
from threadline.context import ContextConfig
from threadline.errors import InvalidArgumentError
from threadline.messages import new_id
from threadline.session import Session
from threadline.store import connect
from threadline.store.base import Store
from threadline.tools import SEARCH_RESULT_LIMIT, format_search_hits
from threadline.types import Scope, SessionInfo

__all__ = ["ManagerBase"]

# The manager a builder was called on, returned for chaining: what `Self` says, spelled as
# the class users hold (a signature reads `-> SessionManager` as before, and its async twin's
# `-> AsyncSessionManager`).
SessionManager = TypeVar("SessionManager", bound="ManagerBase")


class ManagerBase:
    """Settings, ``Session`` cache and ownership check of a manager (see ``SessionManager``).

    >>> from threadline import SessionManager
    >>> "ManagerBase" in [c.__name__ for c in SessionManager.__mro__]  # by name: see registry
    True
    """

    def __init__(
        self,
        store: Store | str,
        app_name: str = "default",
        *,
        max_messages: int | None = None,
        max_cached_sessions: int = 1024,
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> None:
        # RadarOS maxMessages: append_all reports overflow, get_history's limit defaults to it.
        self.max_messages = (
            None if max_messages is None else check_int("max_messages", max_messages, minimum=1)
        )
        self._owns_store = isinstance(store, str)
        self.store: Store = connect(store) if isinstance(store, str) else store
        if not isinstance(app_name, str) or not app_name:
            raise InvalidArgumentError("app_name must be a non-empty string")
        self.app_name = app_name
        self._settings = SessionSettings()  # every session built gets a copy, whole
        self._settings.limit_size(size_policy, max_message_bytes)
        # Keyed by (session id, the user_id the caller named): a caller naming a user never
        # gets a Session object built for another caller's view of the same id.
        # Bounded, least recently used first out (a Session evicted loses only its temp: state).
        self._sessions: OrderedDict[tuple[str, str | None], Session] = OrderedDict()
        self._max_cached = check_int("max_cached_sessions", max_cached_sessions, minimum=1)
        self._lock = threading.Lock()
        self._epoch = 0  # settings changes so far (builder calls, a new profile version)

    # -- builder -----------------------------------------------------------------------------------
    def with_context(
        self: SessionManager,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> SessionManager:
        """Add a block template for every session (auto-wired blocks are per session/user/app).

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").with_context("memory", max_tokens=100)
        >>> _ = m.get_session("s1").replace_context_block("memory", "Likes tea.")
        >>> m.get_session("s1").get_context_block("memory").content
        'Likes tea.'
        >>> m.get_session("s2").get_context_block("memory").content  # its own block
        ''
        """
        self._settings.add_context(ContextConfig(label, description, max_tokens, provider, scope))
        return self._changed()

    def with_cached_prompt(self: SessionManager, provider: Any = None) -> SessionManager:
        """Persist every session's frozen system prompt.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").with_context("memory").with_cached_prompt()
        >>> prompt = m.get_session("s1").freeze_system_prompt()
        >>> m.store.get_prompt("default", "s1") == prompt
        True
        """
        self._settings.cache_prompt(provider)
        return self._changed()

    def on_compaction(self: SessionManager, fn: Compactor) -> SessionManager:
        """Compaction function for every session.

        >>> from threadline import CompactResult
        >>> def summarize(history):
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Small talk.")
        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").on_compaction(summarize)
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.get_session("s1").compact().summary
        'Small talk.'
        """
        self._settings.use_compactor(fn)
        return self._changed()

    def compact_after(
        self: SessionManager,
        token_threshold: int,
        *,
        token_counter: Callable[..., int] | None = None,
    ) -> SessionManager:
        """Automatic compaction threshold for every session.

        >>> from threadline import CompactResult
        >>> def summarize(history):  # everything but the newest message
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "Earlier turns.")
        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").on_compaction(summarize).compact_after(5)
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
        >>> len(m.get_compactions("s1"))
        1
        """
        self._settings.compact_after(token_threshold, token_counter)
        return self._changed()

    def compact_when(
        self: SessionManager, min_messages: int = 50, keep: int = 20
    ) -> SessionManager:
        """Count-based automatic compaction for every session (``Session.compact_when``):
        above ``min_messages`` visible messages, all but the last ``keep`` are summarised.

        >>> from threadline import CompactResult
        >>> def summarize(history):
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Earlier turns.")
        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").on_compaction(summarize).compact_when(3, keep=1)
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in "abcd"])
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['Earlier turns.', 'd']
        """
        self._settings.compact_when(min_messages, keep)
        return self._changed()

    def on_compaction_error(self: SessionManager, handler: ErrorHandler) -> SessionManager:
        """Handler for automatic compaction failures in every session.

        >>> def fail(history):
        ...     raise RuntimeError("summariser down")
        >>> errors = []
        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").on_compaction(fail).compact_after(1)
        >>> m = m.on_compaction_error(errors.append)
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})  # the append succeeds
        >>> errors
        [RuntimeError('summariser down')]
        """
        self._settings.error_handler = handler
        return self._changed()

    def with_searchable_history(
        self: SessionManager, label: str = "history", *, scope: Scope = "user"
    ) -> SessionManager:
        """Add a read-only search block over past sessions (cross-session recall).

        ``scope="user"`` (the default) keeps it private: a session with a user searches only
        that user's sessions, a session without a user only sessions without one.
        ``scope="app"`` searches every session of the app.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").with_searchable_history("history")
        >>> _ = m.append("old", {"role": "user", "content": "Book a hotel"}, user_id="ana")
        >>> s = m.get_session("new", user_id="ana")
        >>> s.get_context_block("history").content
        '1 session available for search.'
        >>> s.search_context_block("history", "hotel")
        '[user] Book a hotel'
        """
        if scope not in ("user", "app"):
            raise InvalidArgumentError(f'scope must be "user" or "app", got {scope!r}')
        return self.with_context(label, provider=_HistorySearch(self, scope))

    def _current_settings(self) -> SessionSettings:
        """The settings sessions built now get (a manager following a profile lays its
        builder's calls over the stored profile's)."""
        return self._settings

    def _changed(self: SessionManager) -> SessionManager:
        with self._lock:
            self._epoch += 1  # a Session being built from the old settings is not cached
            self._sessions.clear()  # sessions handed out later pick up the new settings
        return self

    def close(self) -> None:
        """Close the store if the manager opened it from a URL.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")  # opened from a URL: the manager owns the store
        >>> _ = m.create("chat")
        >>> m.close()
        >>> with SessionManager(":memory:") as m:  # or close on leaving the block
        ...     _ = m.create("chat")
        """
        if self._owns_store:
            self.store.close()

    def __enter__(self: SessionManager) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _forget_cached(self, doomed: Callable[[str, Session], bool]) -> None:
        with self._lock:
            for key in [k for k, s in self._sessions.items() if doomed(k[0], s)]:
                del self._sessions[key]

    # -- sessions ----------------------------------------------------------------------------------
    def get_session(self, session_id: str, *, user_id: str | None = None) -> Session:
        """The ``Session`` object for an id, configured by this manager; cached, creates no row.

        With ``user_id``, a session another user owns is missing (``SessionNotFoundError``),
        and a session that does not exist yet will be created owned by ``user_id``.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:").with_context("memory")
        >>> s = m.get_session("s1", user_id="ana")
        >>> s.user_id, s is m.get_session("s1", user_id="ana"), m.get("s1")
        ('ana', True, None)
        """
        # One registry read per use, cached or not: a session deleted and created again (by
        # any process) is a new generation, and a Session bound to the old one is dropped
        # here instead of showing the new session its old owner's blocks (Amendment 11).
        info = self.store.get_session(self.app_name, session_id)
        if info is not None:
            self._check_visible(info, user_id)
        return self._session_for(session_id, user_id, info)

    def _session_for(
        self, session_id: str, user_id: str | None, info: SessionInfo | None
    ) -> Session:
        """The cached ``Session`` for ``info`` (the registry row just read, visible to
        ``user_id``), or a new one bound to its generation."""
        key = (session_id, user_id)
        owner = info.user_id if info else user_id
        self._current_settings()  # a new profile version drops the cached sessions first
        with self._lock:
            epoch = self._epoch
            cached = self._sessions.get(key)
            if cached is not None and _current(cached, info, owner):
                self._sessions.move_to_end(key)
                return cached
        # Identity fixed before anyone sees it: for_session() on it returns a new Session, so
        # no caller can re-point the object the manager hands to the next one.
        session = self._build(session_id, owner, info.generation if info else None)
        with self._lock:
            present = self._sessions.get(key)
            if present is not None and _current(present, info, owner):
                session = present  # another thread built it first
            if epoch != self._epoch:  # settings changed while it was built: hand it out once
                return session
            self._sessions[key] = session
            self._sessions.move_to_end(key)
            while len(self._sessions) > self._max_cached:
                self._sessions.popitem(last=False)
            return session

    def _build(
        self, session_id: str, user_id: str | None, generation: int | None = None
    ) -> Session:
        return Session._built(
            self.store,
            session_id=session_id,
            user_id=user_id,
            app_name=self.app_name,
            settings=self._current_settings(),
            generation=generation or None,
        )

    # -- registry rows -----------------------------------------------------------------------------
    def _create(
        self,
        name: str | None,
        *,
        session_id: str | None,
        user_id: str | None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """``SessionManager.create``'s work (its arguments checked)."""
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgumentError(f"metadata must be a mapping, got {type(metadata).__name__}")
        stored_state: dict[str, Any] = {}
        temp: dict[str, Any] = {}
        if state is not None:
            stored_state, temp = split_delta(validate_delta(state))
            check_user_keys(stored_state, user_id)  # fail before the registry row exists
        sid = session_id if session_id is not None else new_id()
        info = self.store.create_session(
            self.app_name,
            sid,
            user_id=user_id,
            name=name,
            parent_session_id=parent_session_id,
            model=model,
            source=source,
            metadata=metadata,
        )
        if stored_state:
            self.store.update_state(self.app_name, sid, user_id, stored_state)
            info = self._visible(sid, None) or info  # the state write moved updated_at
        if temp:
            self.get_session(sid).update_state(temp)
        return info

    def _child_of(self, source: SessionInfo, name: str | None) -> SessionInfo:
        """A new session continuing ``source``: same user, model and source; named after it."""
        return self._create(
            name if name is not None else source.name,
            session_id=None,
            user_id=source.user_id,
            parent_session_id=source.id,
            model=source.model,
            source=source.source,
        )

    def _visible(self, session_id: str, user_id: str | None) -> SessionInfo | None:
        """The registry row of a session if it exists and ``user_id`` sees it (the
        library's rule, ``_ownership.visible_to``), else ``None``."""
        info = self.store.get_session(self.app_name, session_id)
        return info if info is not None and visible_to(info.user_id, user_id) else None

    def _require(self, session_id: str, user_id: str | None = None) -> SessionInfo:
        info = self._visible(session_id, user_id)
        if info is None:
            raise not_found(session_id, self.app_name)
        return info

    def _check_visible(self, info: SessionInfo, user_id: str | None) -> SessionInfo:
        if not visible_to(info.user_id, user_id):
            raise not_found(info.id, self.app_name)
        return info


def _current(session: Session, info: SessionInfo | None, owner: str | None) -> bool:
    """Whether a cached Session still stands for the session the registry now holds
    (``info``): bound to its generation, or not bound yet and built for its owner."""
    bound = session._generation()
    if bound is None:
        return session.user_id == owner
    return info is not None and (info.generation in (0, bound))


class _HistorySearch:
    """Read-only search block over past sessions of the manager's app.

    ``scope="user"``: bound to a session (``for_session``) it covers that session's user's
    sessions, or the sessions without a user; ``scope="app"``: every session of the app.
    Unbound (used on its own) it covers only sessions without a user.
    """

    def __init__(self, manager: ManagerBase, scope: Scope, user_id: str | None = None) -> None:
        self._manager = manager
        self._scope = scope
        self._user_id = user_id

    def for_session(self, app_name: str, session_id: str, user_id: str | None) -> _HistorySearch:
        return _HistorySearch(self._manager, self._scope, user_id)

    def _owner(self) -> dict[str, Any]:
        if self._scope == "app":
            return {}
        if self._user_id is None:
            return {"without_user": True}
        return {"user_id": self._user_id}

    def get(self) -> str:
        manager = self._manager
        count = manager.store.count_sessions(manager.app_name, **self._owner())
        return f"{count} session{'' if count == 1 else 's'} available for search."

    def search(self, query: str) -> str | None:
        manager = self._manager
        if not isinstance(query, str):
            return None
        hits = manager.store.search_messages(
            manager.app_name, query, limit=SEARCH_RESULT_LIMIT, **self._owner()
        )
        return format_search_hits(hits)
