"""``SessionManager``: many sessions per app and user — registry, fork, usage, search, state.

>>> import threadline
>>> manager = threadline.SessionManager(":memory:", app_name="demo")
>>> info = manager.create("First chat", user_id="u1")
>>> _ = manager.append(info.id, {"role": "user", "content": "hello"})
>>> [s.name for s in manager.list(user_id="u1").sessions]
['First chat']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from threadline._checks import API_RULES, check_every_public_method
from threadline._settings import Compactor, ErrorHandler, SessionSettings
from threadline._state import check_user_keys, split_delta, validate_delta
from threadline._validate import check_int
from threadline.context import ContextConfig
from threadline.errors import (
    InvalidArgumentError,
    MessageNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
)
from threadline.messages import fold_role, new_id
from threadline.session import Session
from threadline.store import connect
from threadline.store.base import Store
from threadline.tools import (
    SEARCH_RESULT_LIMIT,
    Toolset,
    format_search_hits,
    make_session_search_tool,
)
from threadline.types import (
    AUTO,
    AppendResult,
    AutoType,
    Compaction,
    Message,
    Scope,
    SearchHit,
    SessionInfo,
    SessionPage,
)

__all__ = ["SessionManager"]

SPLIT_PREFIX = "[Context from previous session]"

# Aliases: inside SessionManager the name ``list`` is the method, not the builtin.
_Messages = list[Message]
_Hits = list[SearchHit]
_Compactions = list[Compaction]


class SessionManager:
    """Registry and factory for the sessions of one app.

    Builder settings (blocks, cached prompt, compaction) apply to every session it hands out;
    auto-wired blocks are namespaced by session (or user/app per ``scope``).

    >>> m = SessionManager(":memory:")
    >>> m.get_or_create("s1").id
    's1'
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

    # -- builder -----------------------------------------------------------------------------------
    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> SessionManager:
        """Add a block template for every session (auto-wired blocks are per session/user/app).

        >>> m = SessionManager(":memory:").with_context("memory", max_tokens=100)
        >>> _ = m.get_session("s1").replace_context_block("memory", "Likes tea.")
        >>> m.get_session("s1").get_context_block("memory").content
        'Likes tea.'
        >>> m.get_session("s2").get_context_block("memory").content  # its own block
        ''
        """
        self._settings.add_context(ContextConfig(label, description, max_tokens, provider, scope))
        return self._changed()

    def with_cached_prompt(self, provider: Any = None) -> SessionManager:
        """Persist every session's frozen system prompt.

        >>> m = SessionManager(":memory:").with_context("memory").with_cached_prompt()
        >>> prompt = m.get_session("s1").freeze_system_prompt()
        >>> m.store.get_prompt("default", "s1") == prompt
        True
        """
        self._settings.cache_prompt(provider)
        return self._changed()

    def on_compaction(self, fn: Compactor) -> SessionManager:
        """Compaction function for every session.

        >>> from threadline import CompactResult
        >>> def summarize(history):
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Small talk.")
        >>> m = SessionManager(":memory:").on_compaction(summarize)
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.get_session("s1").compact().summary
        'Small talk.'
        """
        self._settings.use_compactor(fn)
        return self._changed()

    def compact_after(
        self, token_threshold: int, *, token_counter: Callable[..., int] | None = None
    ) -> SessionManager:
        """Automatic compaction threshold for every session.

        >>> from threadline import CompactResult
        >>> def summarize(history):  # everything but the newest message
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "Earlier turns.")
        >>> m = SessionManager(":memory:").on_compaction(summarize).compact_after(5)
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
        >>> len(m.get_compactions("s1"))
        1
        """
        self._settings.compact_after(token_threshold, token_counter)
        return self._changed()

    def compact_when(self, min_messages: int = 50, keep: int = 20) -> SessionManager:
        """Count-based automatic compaction for every session (``Session.compact_when``):
        above ``min_messages`` visible messages, all but the last ``keep`` are summarised.

        >>> from threadline import CompactResult
        >>> def summarize(history):
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Earlier turns.")
        >>> m = SessionManager(":memory:").on_compaction(summarize).compact_when(3, keep=1)
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in "abcd"])
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['Earlier turns.', 'd']
        """
        self._settings.compact_when(min_messages, keep)
        return self._changed()

    def on_compaction_error(self, handler: ErrorHandler) -> SessionManager:
        """Handler for automatic compaction failures in every session.

        >>> def fail(history):
        ...     raise RuntimeError("summariser down")
        >>> errors = []
        >>> m = SessionManager(":memory:").on_compaction(fail).compact_after(1)
        >>> m = m.on_compaction_error(errors.append)
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})  # the append succeeds
        >>> errors
        [RuntimeError('summariser down')]
        """
        self._settings.error_handler = handler
        return self._changed()

    def with_searchable_history(
        self, label: str = "history", *, scope: Scope = "user"
    ) -> SessionManager:
        """Add a read-only search block over past sessions (cross-session recall).

        ``scope="user"`` (the default) keeps it private: a session with a user searches only
        that user's sessions, a session without a user only sessions without one.
        ``scope="app"`` searches every session of the app.

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

    def _changed(self) -> SessionManager:
        with self._lock:
            self._sessions.clear()  # sessions handed out later pick up the new settings
        return self

    def close(self) -> None:
        """Close the store if the manager opened it from a URL.

        >>> m = SessionManager(":memory:")  # opened from a URL: the manager owns the store
        >>> _ = m.create("chat")
        >>> m.close()
        >>> with SessionManager(":memory:") as m:  # or close on leaving the block
        ...     _ = m.create("chat")
        """
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- registry ----------------------------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Create a session (id generated unless given; an existing id: SessionExistsError).

        >>> m = SessionManager(":memory:", app_name="travel")
        >>> info = m.create("Lisbon trip", user_id="ana", state={"topic": "hotels"})
        >>> info.name, info.user_id, m.get_state(info.id)
        ('Lisbon trip', 'ana', {'topic': 'hotels'})
        >>> m.create(session_id="s1").id
        's1'
        """
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
            info = self.get(sid) or info  # the state write moved updated_at
        if temp:
            self.get_session(sid).update_state(temp)
        return info

    def get(self, session_id: str, *, user_id: str | None = None) -> SessionInfo | None:
        """The registry row of a session, or ``None`` (also when ``user_id`` is given and
        another user owns it).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create("Trip", session_id="s1", user_id="ana")
        >>> m.get("s1").name, m.get("s1", user_id="bob"), m.get("nope")
        ('Trip', None, None)
        """
        info = self.store.get_session(self.app_name, session_id)
        return info if info is not None and _visible_to(info, user_id) else None

    def get_or_create(
        self, session_id: str, *, user_id: str | None = None, **fields: Any
    ) -> SessionInfo:
        """Return the session if it exists (unchanged), else create it with these fields.

        >>> m = SessionManager(":memory:")
        >>> m.get_or_create("s1", name="Trip").name
        'Trip'
        >>> m.get_or_create("s1", name="Other").name  # exists: returned unchanged
        'Trip'
        """
        existing = self.store.get_session(self.app_name, session_id)
        if existing is not None:
            return self._check_visible(existing, user_id)
        try:
            return self.create(session_id=session_id, user_id=user_id, **fields)
        except SessionExistsError:
            again = self.get(session_id, user_id=user_id)  # another process created it first
            if again is None:
                raise
            return again

    def list(
        self, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest ``updated_at`` first; pass ``next_cursor`` back for the following page.

        >>> m = SessionManager(":memory:")
        >>> for sid in ("a", "b", "c"):
        ...     _ = m.create(session_id=sid, user_id="ana")
        >>> page = m.list(user_id="ana", limit=2)
        >>> len(page.sessions), len(m.list(user_id="ana", cursor=page.next_cursor).sessions)
        (2, 1)
        """
        return self.store.list_sessions(self.app_name, user_id=user_id, limit=limit, cursor=cursor)

    def rename(self, session_id: str, name: str, *, user_id: str | None = None) -> SessionInfo:
        """Rename a session (``SessionNotFoundError`` if unknown).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create("Draft", session_id="s1")
        >>> m.rename("s1", "Lisbon trip").name
        'Lisbon trip'
        """
        self._require(session_id, user_id)
        return self.store.update_session(self.app_name, session_id, name=name)

    def delete(self, session_id: str, *, user_id: str | None = None) -> None:
        """Delete a session and everything of it (messages, overlays, blocks, prompt, state).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.delete("s1")
        >>> m.get("s1") is None
        True
        """
        self._require(session_id, user_id)
        if not self.store.delete_session(self.app_name, session_id):
            raise SessionNotFoundError(f"session {session_id!r} not found in app {self.app_name!r}")
        self._forget_cached(lambda sid, _: sid == session_id)

    def forget_user(self, user_id: str) -> int:
        """Delete everything of a user in this app, in one transaction: their sessions (with
        messages, overlays, blocks, prompts and state), user-scoped blocks and ``user:`` state.
        Returns the number of sessions deleted.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> m.forget_user("ana"), m.get("s1")
        (1, None)
        """
        if not isinstance(user_id, str) or not user_id:
            raise InvalidArgumentError("user_id must be a non-empty string")
        count = self.store.forget_user(self.app_name, user_id)
        self._forget_cached(lambda _, session: session.user_id == user_id)
        return count

    def _forget_cached(self, doomed: Callable[[str, Session], bool]) -> None:
        with self._lock:
            for key in [k for k, s in self._sessions.items() if doomed(k[0], s)]:
                del self._sessions[key]

    def purge(self, *, older_than: datetime | timedelta, user_id: str | None = None) -> int:
        """Delete this app's sessions not updated since ``older_than``; returns how many.

        >>> from datetime import UTC, datetime, timedelta
        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.purge(older_than=timedelta(days=90))  # s1 was just updated: kept
        0
        >>> m.purge(older_than=datetime(2100, 1, 1, tzinfo=UTC)), m.get("s1")
        (1, None)
        """
        if isinstance(older_than, timedelta):
            try:
                before = self.store.now() - older_than
            except OverflowError:
                raise InvalidArgumentError("older_than reaches before the year 1") from None
        elif isinstance(older_than, datetime):
            before = older_than if older_than.tzinfo else older_than.replace(tzinfo=UTC)
        else:
            raise InvalidArgumentError("older_than must be a datetime or a timedelta")
        with self._lock:
            cached = {key[0] for key in self._sessions}
        # Forget only the purged sessions: the others keep their live temp: state.
        doomed = {sid for sid in cached if _purged_by(self.get(sid), before, user_id)}
        count = self.store.purge_sessions(self.app_name, before=before, user_id=user_id)
        self._forget_cached(lambda sid, _: sid in doomed)
        return count

    # -- sessions ----------------------------------------------------------------------------------
    def get_session(self, session_id: str, *, user_id: str | None = None) -> Session:
        """The ``Session`` object for an id, configured by this manager; cached, creates no row.

        With ``user_id``, a session another user owns is missing (``SessionNotFoundError``),
        and a session that does not exist yet will be created owned by ``user_id``.

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
        with self._lock:
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
            settings=self._settings,
            generation=generation or None,
        )

    def append(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Message:
        """Append a message to a session (creating its registry row if needed, owned by
        ``user_id`` when given).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> m.get("s1").user_id, m.get_message_count("s1")
        ('ana', 1)
        """
        return self.get_session(session_id, user_id=user_id).append_message(
            message, parent_id, state_delta=state_delta
        )

    def upsert(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> Message:
        """Update the message if its id exists in the session, else append it.

        >>> m = SessionManager(":memory:")
        >>> _ = m.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hel"})  # streaming
        >>> _ = m.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hello!"})
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['Hello!']
        """
        session = self.get_session(session_id, user_id=user_id)
        mid = message.get("id") if isinstance(message, Mapping) else None
        if isinstance(mid, str):
            try:  # update_message reads the stored message itself: no separate existence check
                return session.update_message(message)
            except MessageNotFoundError:
                pass
        return session.append_message(message, parent_id)

    def append_all(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> AppendResult:
        """Append several messages in one transaction (attached to the head by default).

        Returns an :class:`~threadline.types.AppendResult`: the stored messages, as a list,
        whose ``overflow`` holds the messages this append pushed out of the last
        ``max_messages`` of the active path, oldest first — including appended ones that do
        not fit, and those automatic compaction summarised (``compact_when``) — as
        ``get_history`` shows it (empty without ``max_messages``; nothing is deleted).

        >>> m = SessionManager(":memory:", max_messages=2)
        >>> msgs = m.append_all("s1", [{"role": "user", "content": "hi"},
        ...                            {"role": "assistant", "content": "hello"}])
        >>> [msg["role"] for msg in msgs], msgs.overflow, m.get_message_count("s1")
        (['user', 'assistant'], [], 2)
        >>> more = m.append_all("s1", [{"role": "user", "content": "bye"}])
        >>> [msg["parts"][0]["text"] for msg in more.overflow], m.get_message_count("s1")
        (['hi'], 3)
        """
        session = self.get_session(session_id, user_id=user_id)
        keep = self.max_messages
        if keep is None:
            return AppendResult(session.append_messages(messages, parent_id))
        # RadarOS: overflow = (the window before + what was appended) - the window after.
        window = [m["id"] for m in session.get_history(limit=keep, attachments="ref")]
        stored = session.append_messages(messages, parent_id)
        window.extend(m["id"] for m in stored)
        # What left the window sits right before it: the last keep + len(stored) suffice,
        # unless automatic compaction summarised some of it (those are read one by one).
        after = session.get_history(limit=keep + len(stored)) if stored else []
        left = {m["id"]: m for m in after[:-keep]}
        kept = {m["id"] for m in after[-keep:]}
        gone = [mid for mid in window if mid not in kept and mid not in left]
        # Gone from the history: off the active path now (an append that branches), or
        # inside a summary on it (compact_when); only the latter overflowed.
        on_path = set(session._backend.get_path_ids()) if gone else set()
        overflow = [
            left[mid] if mid in left else session.get_message(mid)
            for mid in window
            if mid in left or (mid in on_path and mid not in kept)
        ]
        return AppendResult(stored, [m for m in overflow if m is not None])

    def get_history(
        self,
        session_id: str,
        leaf_id: str | None = None,
        *,
        user_id: str | None = None,
        **options: Any,
    ) -> _Messages:
        """History of a session (see ``Session.get_history`` for ``runs``, ``limit``,
        ``max_tokens``, ``after``, ``branch``).

        With ``max_messages``, ``limit`` defaults to it: the last ``max_messages`` messages
        come back unless ``limit`` is given (``limit=None`` for the whole path).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("a", "b", "c")])
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1", limit=2)]
        ['b', 'c']
        >>> capped = SessionManager(m.store, max_messages=1)
        >>> len(capped.get_history("s1")), len(capped.get_history("s1", limit=None))
        (1, 3)
        """
        if self.max_messages is not None and "limit" not in options:
            options["limit"] = self.max_messages
        return self.get_session(session_id, user_id=user_id).get_history(leaf_id, **options)

    def get_message_count(self, session_id: str, *, user_id: str | None = None) -> int:
        """Messages on the head path of a session (raw, overlays not applied).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("a", "b")])
        >>> m.get_message_count("s1")
        2
        """
        return self.get_session(session_id, user_id=user_id).get_path_length()

    def clear_messages(self, session_id: str, *, user_id: str | None = None) -> None:
        """Delete every message and overlay of a session.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.clear_messages("s1")
        >>> m.get_history("s1"), m.get("s1") is not None  # the session itself stays
        ([], True)
        """
        self.get_session(session_id, user_id=user_id).clear_messages()

    def delete_messages(
        self, session_id: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> int:
        """Delete some messages of a session.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> m.delete_messages("s1", ["m2"]), m.get_message_count("s1")
        (1, 1)
        """
        return self.get_session(session_id, user_id=user_id).delete_messages(ids)

    def get_branches(
        self, session_id: str, message_id: str, *, user_id: str | None = None
    ) -> _Messages:
        """Children of a message in a session, oldest first.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = m.append("s1", assistant("hey", id="a2"), parent_id="q")  # regenerated
        >>> [msg["id"] for msg in m.get_branches("s1", "q")]
        ['a1', 'a2']
        """
        return self.get_session(session_id, user_id=user_id).get_branches(message_id)

    def add_compaction(
        self,
        session_id: str,
        summary: str,
        from_message_id: str,
        to_message_id: str,
        *,
        user_id: str | None = None,
    ) -> Compaction:
        """Store a summary overlay in a session.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> _ = m.add_compaction("s1", "They greeted each other.", "m1", "m2")
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['They greeted each other.', 'bye']
        """
        session = self.get_session(session_id, user_id=user_id)
        return session.add_compaction(summary, from_message_id, to_message_id)

    def get_compactions(self, session_id: str, *, user_id: str | None = None) -> _Compactions:
        """Overlays of a session, oldest first.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = m.add_compaction("s1", "Greetings.", "m1", "m2")
        >>> [c.summary for c in m.get_compactions("s1")]
        ['Greetings.']
        """
        return self.get_session(session_id, user_id=user_id).get_compactions()

    # -- fork, split, usage ------------------------------------------------------------------------
    def fork(
        self,
        session_id: str,
        at_message_id: str,
        name: str | None = None,
        *,
        user_id: str | None = None,
    ) -> SessionInfo:
        """New session whose history is the path to ``at_message_id`` (overlays materialised).

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> child = m.fork("s1", "m2", name="Take two")
        >>> child.parent_session_id, child.name, m.get_message_count(child.id)
        ('s1', 'Take two', 2)
        """
        source = self._require(session_id, user_id)
        history = self._session_for(session_id, None, source).get_history(at_message_id)
        # Copies take what an append takes: roles older releases stored from other APIs are
        # mapped as the converters map them (clarification 25).
        copies = [fold_role({**m, "id": new_id()}) for m in history]

        def create_and_copy() -> SessionInfo:
            child = self._child_of(source, name)
            if copies:
                self.store.append_messages(
                    self.app_name, child.id, copies, None, user_id=source.user_id
                )
            return child

        # One transaction: a refused copy leaves no empty child behind.
        transaction = getattr(self.store, "transaction", None)
        child = transaction(create_and_copy) if transaction is not None else create_and_copy()
        return self.get(child.id) or child

    def compact_and_split(
        self,
        session_id: str,
        summary: str,
        name: str | None = None,
        *,
        user_id: str | None = None,
    ) -> SessionInfo:
        """End a session (``end_reason="compaction"``) and start a child seeded with ``summary``.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel in Lisbon"})
        >>> child = m.compact_and_split("s1", "Ana wants a hotel in Lisbon.")
        >>> m.get("s1").end_reason, child.parent_session_id
        ('compaction', 's1')
        >>> print(m.get_history(child.id)[0]["parts"][0]["text"])
        [Context from previous session]
        Ana wants a hotel in Lisbon.
        """
        source = self._require(session_id, user_id)
        self.store.update_session(self.app_name, session_id, end_reason="compaction")
        child = self._child_of(source, name)
        text = f"{SPLIT_PREFIX}\n{summary}"
        self.append(child.id, {"role": "user", "content": text}, user_id=source.user_id)
        return self.get(child.id) or child

    def _child_of(self, source: SessionInfo, name: str | None) -> SessionInfo:
        """A new session continuing ``source``: same user, model and source; named after it."""
        return self.create(
            name if name is not None else source.name,
            user_id=source.user_id,
            parent_session_id=source.id,
            model=source.model,
            source=source.source,
        )

    def add_usage(
        self,
        session_id: str,
        input_tokens: int,
        output_tokens: int,
        cost: float = 0.0,
        *,
        user_id: str | None = None,
    ) -> None:
        """Atomically add token and cost counters to a session.

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.add_usage("s1", input_tokens=1200, output_tokens=300, cost=0.004)
        >>> m.add_usage("s1", 100, 50)
        >>> info = m.get("s1")
        >>> info.input_tokens, info.output_tokens, info.estimated_cost
        (1300, 350, 0.004)
        """
        for what, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{what} must be a non-negative integer")
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0:
            raise InvalidArgumentError("cost must be a non-negative number")
        if user_id is not None:
            self._require(session_id, user_id)
        self.store.add_usage(self.app_name, session_id, input_tokens, output_tokens, float(cost))

    def _require(self, session_id: str, user_id: str | None = None) -> SessionInfo:
        info = self.get(session_id, user_id=user_id)
        if info is None:
            raise SessionNotFoundError(f"session {session_id!r} not found in app {self.app_name!r}")
        return info

    def _check_visible(self, info: SessionInfo, user_id: str | None) -> SessionInfo:
        if not _visible_to(info, user_id):
            raise SessionNotFoundError(f"session {info.id!r} not found in app {self.app_name!r}")
        return info

    # -- search and tools --------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20, user_id: str | None = None) -> _Hits:
        """Full-text search across this app's sessions (optionally one user's).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> _ = m.append("s2", {"role": "user", "content": "Hotel in Porto?"}, user_id="bob")
        >>> [hit.session_id for hit in m.search("hotel", user_id="ana")]
        ['s1']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        return self.store.search_messages(self.app_name, query, user_id=user_id, limit=limit)

    def tools(self, *, user_id: str | None = None) -> Toolset:
        """Tools for the model: ``session_search`` across this app's sessions, only
        ``user_id``'s when given (give it whenever the model acts for one user).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> tools = m.tools(user_id="ana")
        >>> list(tools)
        ['session_search']
        >>> tools.execute("session_search", {"query": "hotel"})
        '[user] Find me a hotel'
        """

        def search(query: str) -> _Hits:
            return self.search(query, limit=SEARCH_RESULT_LIMIT, user_id=user_id)

        return Toolset([make_session_search_tool(search)])

    # -- state -------------------------------------------------------------------------------------
    def get_state(self, session_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """Merged state of a session (``app:``, ``user:``, session and live ``temp:`` keys).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.update_state("s1", {"app:currency": "EUR", "topic": "hotels"})
        >>> m.get_state("s1") == {"app:currency": "EUR", "topic": "hotels"}
        True
        """
        return dict(self.get_session(session_id, user_id=user_id).state)

    def update_state(
        self, session_id: str, delta: Mapping[str, Any], *, user_id: str | None = None
    ) -> None:
        """Apply a state delta to a session (``None`` deletes).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1", user_id="ana")
        >>> m.update_state("s1", {"user:lang": "pt", "draft": "hi"})
        >>> m.update_state("s1", {"draft": None})  # None deletes
        >>> m.get_state("s1")
        {'user:lang': 'pt'}
        """
        self.get_session(session_id, user_id=user_id).update_state(delta)

    def rewind(
        self,
        session_id: str,
        before_message_id: str | None = None,
        *,
        before_invocation_id: str | None = None,
        user_id: str | None = None,
    ) -> None:
        """Move the head before a message and undo its session-state changes (nothing deleted).

        Give exactly one of ``before_message_id`` or ``before_invocation_id``; the latter
        (ADK-TS ``rewindBeforeInvocationId``) rewinds to before the first message of the active
        path whose ``metadata.invocationId`` is that id (``MessageNotFoundError`` if none is).

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = m.append("s1", user("book it", id="m3"), state_delta={"booked": True})
        >>> m.rewind("s1", before_message_id="m3")
        >>> m.get_state("s1"), m.get_history("s1")[-1]["id"], m.get_message_count("s1")
        ({}, 'm2', 2)
        >>> run = {"invocationId": "inv-2"}
        >>> _ = m.append_all("s1", [{**user("again", id="m4"), "metadata": run},
        ...                         {**assistant("done", id="m5"), "metadata": run}])
        >>> m.rewind("s1", before_invocation_id="inv-2")
        >>> m.get_history("s1")[-1]["id"]
        'm2'
        """
        if (before_message_id is None) == (before_invocation_id is None):
            raise InvalidArgumentError(
                "rewind needs exactly one of before_message_id or before_invocation_id"
            )
        if user_id is not None:
            self._require(session_id, user_id)
        if before_invocation_id is not None:
            before_message_id = self._first_of_invocation(session_id, before_invocation_id)
        assert before_message_id is not None
        # The store raises MessageNotFoundError for an id not in the session (Store contract).
        self.store.rewind(self.app_name, session_id, before_message_id)

    def _first_of_invocation(self, session_id: str, invocation_id: str) -> str:
        """Id of the first message of the active path tagged ``metadata.invocationId``."""
        for message in self.store.get_path(self.app_name, session_id, attachments="ref"):
            metadata = message.get("metadata")
            if isinstance(metadata, dict) and metadata.get("invocationId") == invocation_id:
                return str(message["id"])
        raise MessageNotFoundError(
            f"no message of invocation {invocation_id!r} on the active path of {session_id!r}"
        )


check_every_public_method(SessionManager, API_RULES)


def _current(session: Session, info: SessionInfo | None, owner: str | None) -> bool:
    """Whether a cached Session still stands for the session the registry now holds
    (``info``): bound to its generation, or not bound yet and built for its owner."""
    bound = session._generation()
    if bound is None:
        return session.user_id == owner
    return info is not None and (info.generation in (0, bound))


def _visible_to(info: SessionInfo, user_id: str | None) -> bool:
    """A caller naming ``user_id`` sees sessions of that user and sessions without a user."""
    return user_id is None or info.user_id is None or info.user_id == user_id


def _purged_by(info: SessionInfo | None, before: datetime, user_id: str | None) -> bool:
    """Whether ``purge(before, user_id)`` deletes the session with this registry row."""
    if info is None or info.updated_at >= before:
        return False
    return user_id is None or info.user_id == user_id


class _HistorySearch:
    """Read-only search block over past sessions of the manager's app.

    ``scope="user"``: bound to a session (``for_session``) it covers that session's user's
    sessions, or the sessions without a user; ``scope="app"``: every session of the app.
    Unbound (used on its own) it covers only sessions without a user.
    """

    def __init__(self, manager: SessionManager, scope: Scope, user_id: str | None = None) -> None:
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
