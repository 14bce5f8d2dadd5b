"""``Session``: one conversation — its message tree, memory blocks, prompt, compaction and state.

A Session orchestrates: it normalises input, asks the pure modules (overlays, rendering,
compaction planning, state rules) what to do, and asks its backend (a ``Store`` or a custom
``SessionProvider``) to persist it. It holds no SQL.

>>> import threadline
>>> s = threadline.Session.create(":memory:").for_session("chat-1")
>>> _ = s.append_message({"role": "user", "content": "hi"})
>>> [m["role"] for m in s.get_history()]
['user']
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, cast

from threadline._checks import API_RULES, check_every_public_method
from threadline._provider import ProviderBackend, SessionProvider, is_store
from threadline._settings import (
    Compactor,
    ErrorHandler,
    SessionSettings,
)
from threadline._state import StateView, merge_state, scope_of, split_delta, validate_delta
from threadline._windows import Window, window_of
from threadline.compaction.function import keep_boundary
from threadline.compaction.overlays import (
    apply_overlays,
    apply_overlays_encoded,
    earliest_visible_overlay,
    overlays_cross_start,
    visible_overlays,
)
from threadline.context import ContextBlocks, ContextConfig
from threadline.errors import (
    CompactionError,
    InvalidArgumentError,
    InvalidMessageError,
    MessageNotFoundError,
    ThreadlineError,
)
from threadline.messages import (
    OVERLAY_ID_PREFIX,
    decode_message,
    is_overlay_id,
    mark_skill_unloaded,
    normalize_message,
    normalize_messages,
    skill_loads_of,
)
from threadline.store import connect
from threadline.store._handle import SessionStore
from threadline.store.base import Store
from threadline.tokens import default_token_counter
from threadline.tools import Toolset, build_context_tools
from threadline.types import (
    AUTO,
    AutoType,
    CompactContext,
    Compaction,
    CompactResult,
    ContextBlock,
    Message,
    RecentHistory,
    Scope,
    SearchHit,
)

logger = logging.getLogger("threadline")


__all__ = ["Session"]


class Session:
    """One conversation: a branching message history plus memory blocks and state.

    >>> import threadline
    >>> s = threadline.Session(threadline.connect(":memory:"), session_id="s1")
    >>> s.append_message(threadline.messages.user("hello", id="m1"))["id"]
    'm1'
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
        self._session_id = _check_name("session_id", session_id)
        self._user_id = user_id
        self._app_name = _check_name("app_name", app_name)
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

    # -- building ----------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        store: Store | SessionProvider | str,
        *,
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> Session:
        """Start a builder from a Store, a store URL (owned: closed by ``close()``) or a provider.

        ``size_policy`` and ``max_message_bytes`` override the store's for this session's
        writes (``threadline.connect``; docs/attachments.md).

        >>> Session.create(":memory:").for_session("a").session_id
        'a'
        """
        return cls(store, size_policy=size_policy, max_message_bytes=max_message_bytes)

    def for_session(self, session_id: str) -> Session:
        """Use this session id (default ``"default"``).

        Before first use this sets the id in place (the builder chain); on a session that has
        already read or written storage it returns a new Session with the same settings and
        leaves this one as it is.

        >>> s = Session.create(":memory:").for_session("a")
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> other = s.for_session("b")
        >>> (s.session_id, other.session_id, other is s)
        ('a', 'b', False)
        """
        target = self._target()
        target._session_id = _check_name("session_id", session_id)
        target._temp = {}  # temp: state belongs to the session it was set on
        target._reset_runtime()
        return target

    def for_user(self, user_id: str) -> Session:
        """Attach the session to a user: enables ``scope="user"`` blocks and ``user:`` state.
        A session already used gets a new Session instead (see :meth:`for_session`).

        >>> s = Session.create(":memory:").for_session("s1").for_user("ana")
        >>> s.user_id
        'ana'
        """
        target = self._target()
        target._user_id = _check_name("user_id", user_id)
        target._reset_runtime()
        return target

    def for_app(self, app_name: str) -> Session:
        """Namespace everything under this app name (default ``"default"``). A session
        already used gets a new Session instead (see :meth:`for_session`).

        >>> Session.create(":memory:").for_app("travel").app_name
        'travel'
        """
        target = self._target()
        target._app_name = _check_name("app_name", app_name)
        target._temp = {}
        target._reset_runtime()
        return target

    def _target(self) -> Session:
        """Self while the identity may still change, else a fresh copy of the settings."""
        if not self._used:
            return self
        other = Session(
            cast(Any, self._source),
            session_id=self._session_id,
            user_id=self._user_id,
            app_name=self._app_name,
        )
        other._owns_store = False  # the original closes what it opened
        other._settings = self._settings.copy()
        return other

    @classmethod
    def _built(
        cls,
        store: Store,
        *,
        session_id: str,
        user_id: str | None,
        app_name: str,
        settings: SessionSettings,
        generation: int | None = None,
    ) -> Session:
        """A Session with these settings (a copy), its identity fixed: what managers hand out."""
        session = cls(store, session_id=session_id, user_id=user_id, app_name=app_name)
        session._settings = settings.copy()
        session._used = True
        session._generation_seen = generation
        on_rollback = getattr(store, "_on_rollback", None)
        if generation is not None and on_rollback is not None:
            # Seen inside a transaction: perhaps a creation that rolls back with it.
            on_rollback(partial(session._forget_generation, generation))
        return session

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

    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> Session:
        """Register a memory block; without ``provider`` a store-backed writable block is wired.

        >>> s = Session.create(":memory:").with_context("memory", max_tokens=100)
        >>> s.get_context_block("memory").writable
        True
        """
        self._register(ContextConfig(label, description, max_tokens, provider, scope))
        return self

    def _register(self, config: ContextConfig) -> None:
        self._settings.add_context(config)
        if self._blocks_obj is not None:
            self._blocks_obj.add(config)

    def with_cached_prompt(self, provider: Any = None) -> Session:
        """Persist the frozen system prompt (in the store, or in a writable ``provider``).

        >>> s = Session.create(":memory:").with_context("memory").with_cached_prompt()
        >>> prompt = s.freeze_system_prompt()
        >>> s.store.get_prompt("default", "default") == prompt
        True
        """
        self._settings.cache_prompt(provider)
        return self

    def on_compaction(self, fn: Compactor) -> Session:
        """Register the compaction function used by ``compact()`` and ``compact_after``.

        >>> def summarize(history):
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Small talk.")
        >>> s = Session.create(":memory:").on_compaction(summarize)
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> s.compact().summary
        'Small talk.'
        """
        self._settings.use_compactor(fn)
        return self

    def compact_after(
        self, token_threshold: int, *, token_counter: Callable[..., int] | None = None
    ) -> Session:
        """Compact automatically after an append when the estimate exceeds ``token_threshold``.

        ``token_counter`` is called as ``counter(messages=..., system_prompt=..., blocks=...)``.

        >>> def summarize(history):  # everything but the newest message
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "Earlier turns.")
        >>> s = Session.create(":memory:").on_compaction(summarize).compact_after(5)
        >>> _ = s.append_messages([{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
        >>> len(s.get_compactions())
        1
        """
        self._settings.compact_after(token_threshold, token_counter)
        return self

    def compact_when(self, min_messages: int = 50, keep: int = 20) -> Session:
        """Compact automatically after an append when the active path holds more than
        ``min_messages`` visible messages (overlays applied): everything but the last ``keep``
        is offered to the registered compaction function, whose summary becomes an overlay
        (ADK-TS ``EventsCompactionConfig``; nothing is deleted). A call and its results are
        never split: the kept part then starts at the call. The function is told so
        (``context.summarize_all``) and ``create_compact_function`` summarises all it is
        offered. Combines with :meth:`compact_after`; like it, never fails an append.

        >>> from threadline.messages import text_of
        >>> def summarize(history):  # all it is offered
        ...     return CompactResult(history[0]["id"], history[-1]["id"], "Earlier turns.")
        >>> s = Session.create(":memory:").on_compaction(summarize).compact_when(4, keep=2)
        >>> _ = s.append_messages([{"role": "user", "content": w} for w in "abcd"])
        >>> len(s.get_compactions())  # 4 messages: not more than 4
        0
        >>> _ = s.append_message({"role": "user", "content": "e"})
        >>> [text_of(m) for m in s.get_history()]
        ['Earlier turns.', 'd', 'e']
        """
        self._settings.compact_when(min_messages, keep)
        return self

    def on_compaction_error(self, handler: ErrorHandler) -> Session:
        """Receive exceptions raised by automatic compaction (the append still succeeds).

        >>> def fail(history):
        ...     raise RuntimeError("summariser down")
        >>> errors = []
        >>> s = Session.create(":memory:").on_compaction(fail).compact_after(1)
        >>> s = s.on_compaction_error(errors.append)
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> errors
        [RuntimeError('summariser down')]
        """
        self._settings.error_handler = handler
        return self

    # -- identity and lifecycle --------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        """This session's id.

        >>> Session.create(":memory:").for_session("chat-1").session_id
        'chat-1'
        """
        return self._session_id

    @property
    def user_id(self) -> str | None:
        """The user this session belongs to, if any.

        >>> Session.create(":memory:").user_id is None
        True
        >>> Session.create(":memory:").for_user("ana").user_id
        'ana'
        """
        return self._user_id

    @property
    def app_name(self) -> str:
        """The app namespace (``"default"`` unless set).

        >>> Session.create(":memory:").app_name
        'default'
        """
        return self._app_name

    @property
    def store(self) -> Store | None:
        """The backing Store (``None`` with a custom SessionProvider).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> Session.create(store).store is store
        True
        """
        return cast(Store, self._source) if is_store(self._source) else None

    def close(self) -> None:
        """Close the store if this session opened it from a URL.

        >>> s = Session.create(":memory:")  # opened from a URL: the session owns the store
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> s.close()
        >>> with Session.create(":memory:") as s:  # or close on leaving the block
        ...     _ = s.append_message({"role": "user", "content": "hi"})
        """
        store = self.store
        if self._owns_store and store is not None:
            store.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    # -- messages and the tree ---------------------------------------------------------------------
    def append_message(
        self,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
    ) -> Message:
        """Store a message (child of the head by default) and return it normalised.

        >>> s = Session.create(":memory:")
        >>> s.append_message({"id": "m1", "role": "user", "content": "hi"})["parts"]
        [{'type': 'text', 'text': 'hi'}]
        """
        normalised = normalize_message(message)
        stored_delta: dict[str, Any] | None = None
        temp: dict[str, Any] = {}
        if state_delta is not None:
            stored_delta, temp = split_delta(validate_delta(state_delta))
            if stored_delta:
                meta = dict(normalised.get("metadata") or {})
                meta["stateDelta"] = stored_delta
                normalised["metadata"] = meta
        stored = self._backend.append_messages([normalised], parent_id, stored_delta or None)
        self._temp_apply(temp)
        self._note_skill_loads(stored)
        self._after_append()
        return stored[0]

    def append_messages(
        self, messages: Sequence[Mapping[str, Any]], parent_id: str | AutoType | None = AUTO
    ) -> list[Message]:
        """Store several messages in one transaction; each parents the next.

        >>> s = Session.create(":memory:")
        >>> q, a = s.append_messages([{"role": "user", "content": "hi"},
        ...                           {"role": "assistant", "content": "hello"}])
        >>> s.get_latest_leaf()["id"] == a["id"], s.get_path_length()
        (True, 2)
        """
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidMessageError("append_messages needs a list of messages")
        normalised = normalize_messages(messages)
        if not normalised:
            return []
        stored = self._backend.append_messages(normalised, parent_id)
        self._note_skill_loads(stored)
        self._after_append()
        return stored

    def update_message(self, message: Mapping[str, Any]) -> Message:
        """Replace role, parts and metadata of a stored message (``createdAt`` kept if omitted).

        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"id": "m1", "role": "assistant", "content": "helo"})
        >>> s.update_message({"id": "m1", "role": "assistant", "content": "hello"})["parts"]
        [{'type': 'text', 'text': 'hello'}]
        """
        if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
            raise InvalidMessageError("update_message needs a message dict with a string 'id'")
        current = self._backend.get_message(message["id"])
        if current is None:
            raise MessageNotFoundError(f"message {message['id']!r} is not in this session")
        normalised = normalize_message(message, now=current.get("createdAt"))
        return self._backend.update_message(normalised)

    def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete messages by id (children are not re-parented); returns how many were deleted.

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> s.delete_messages(["m2"]), s.get_message("m2")
        (1, None)
        """
        if isinstance(ids, str):
            ids = [ids]
        return self._backend.delete_messages(list(ids))

    def clear_messages(self) -> None:
        """Delete every message, overlay and loaded-skill record; refresh the cached prompt.

        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> s.clear_messages()
        >>> s.get_history()
        []
        """
        self._backend.clear_messages()
        self._loaded = set()
        if self._settings.cached_prompt:
            self.refresh_system_prompt()

    def get_message(self, message_id: str) -> Message | None:
        """One message by id, or ``None``.

        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_message("m1")["role"], s.get_message("nope")
        ('user', None)
        """
        return self._backend.get_message(message_id)

    def get_latest_leaf(self) -> Message | None:
        """The head message (the active leaf), or ``None`` for an empty session.

        >>> s = Session.create(":memory:")
        >>> s.get_latest_leaf() is None
        True
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_latest_leaf()["id"]
        'm1'
        """
        return self._backend.get_head()

    def checkout(self, leaf_id: str) -> None:
        """Move the head to any message of the session (branch navigation).

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = s.append_message(assistant("hey", id="a2"), parent_id="q")  # now the head
        >>> s.checkout("a1")
        >>> s.get_latest_leaf()["id"]
        'a1'
        """
        self._backend.set_head(leaf_id)

    def get_path_length(self, leaf_id: str | None = None) -> int:
        """Number of raw messages on the path to ``leaf_id`` (default: head).

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> s.get_path_length(), s.get_path_length("m1")
        (2, 1)
        """
        return self._backend.get_path_length(leaf_id)

    def get_branches(self, message_id: str) -> list[Message]:
        """Children of a message, oldest first — e.g. the original and regenerated answers.

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = s.append_message(assistant("hey", id="a2"), parent_id="q")  # regenerated
        >>> [m["id"] for m in s.get_branches("q")]
        ['a1', 'a2']
        """
        return self._backend.get_children(message_id)

    def get_history(
        self,
        leaf_id: str | None = None,
        *,
        limit: int | None = None,
        max_tokens: int | None = None,
        after: datetime | str | float | None = None,
        runs: int | None = None,
        branch: str | None = None,
        attachments: Literal["inline", "ref"] = "inline",
    ) -> list[Message]:
        """Root→leaf path with overlays applied, then windowed, in this order:

        - ``branch``: only messages whose ``metadata.branch`` is unset or equal to, or a
          dot-prefix of, ``branch`` (``"root.agent_a"`` sees ``"root"``; ADK-TS branches);
        - ``after``: messages created at or after it (a datetime, an ISO 8601 string or epoch
          seconds);
        - ``runs``: the last N runs — a run starts at a user message and holds everything up
          to the next one (a user message carrying only tool results starts none, so calls and
          results stay whole); a history of N runs or fewer comes back whole, and compaction
          summaries right before the window stay in front of it;
        - ``limit``: the last N messages;
        - ``max_tokens``: oldest messages dropped until the estimate fits (the leaf is kept).

        Without ``after``, ``limit`` and ``runs`` read about as many rows as they return.
        Messages come back exactly as written; ``attachments="ref"`` leaves each string stored
        out of row as its reference instead (read it with :meth:`read_attachment`).

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("a"), assistant("b"), user("c"), assistant("d")])
        >>> len(s.get_history(limit=1)), [m["role"] for m in s.get_history(runs=1)]
        (1, ['user', 'assistant'])
        """
        window = window_of(
            limit=limit, max_tokens=max_tokens, after=after, runs=runs, branch=branch
        )
        if window.tail_only:
            return window.apply(self._history_tail(leaf_id, window, attachments))
        rows, compactions = self._backend.get_history_encoded(leaf_id, attachments=attachments)
        if not rows:
            return []
        return window.apply(apply_overlays_encoded(rows, compactions, decode_message))

    def _history_tail(
        self, leaf_id: str | None, window: Window, attachments: str = "inline"
    ) -> list[Message]:
        """The newest part of the history (overlays applied) that decides ``window``, reading
        about as many rows as it keeps: the read doubles only while an overlay reaches back
        past its start or the window is not decided by it yet."""
        count = window.first_read()
        rows, compactions = self._backend.get_history_tail_encoded(
            count, leaf_id, attachments=attachments
        )
        while True:
            complete = not rows or rows[0][2] == 1
            encoded = [(message_id, data) for message_id, data, _ in rows]
            if complete or not overlays_cross_start(encoded, compactions):
                history = apply_overlays_encoded(encoded, compactions, decode_message)
                if complete or window.decided_by(history):
                    return history
            count *= 2
            rows = self._backend.get_path_tail(count, leaf_id, attachments=attachments)

    def get_recent_history(self, max_bytes: int, min_recent_messages: int = 1) -> RecentHistory:
        """Newest messages of the head path whose stored JSON fits ``max_bytes``.

        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([{"role": "user", "content": t} for t in ("x" * 500, "hi")])
        >>> recent = s.get_recent_history(max_bytes=200)
        >>> [m["parts"][0]["text"] for m in recent.messages], recent.truncated
        (['hi'], True)
        """
        if max_bytes < 0 or min_recent_messages < 0:
            raise InvalidArgumentError("max_bytes and min_recent_messages must be >= 0")
        recent = self._backend.get_recent_path(max_bytes, min_recent_messages)
        messages = recent.messages
        if messages:
            messages = apply_overlays(messages, self._backend.get_compactions())
        return RecentHistory(messages, recent.truncated, recent.total_content_bytes)

    def read_attachment(self, ref: object) -> bytes | str:
        """The content of an attachment of this session's app: ``bytes`` for file data,
        ``str`` for text (``ref`` from ``get_history(attachments="ref")``, or
        ``"sha256:<hex>"``). Needs a threadline Store.

        >>> import threadline
        >>> s = Session.create(":memory:").for_session("s")
        >>> big = "data:image/png;base64," + "AAAA" * 100_000
        >>> _ = s.append_message({"role": "user", "parts": [{"type": "file", "url": big}]})
        >>> ref = s.get_history(attachments="ref")[0]["parts"][0]["url"]
        >>> ref["kind"], len(s.read_attachment(ref))
        ('bytes', 300000)
        """
        store = self._require_store("read_attachment")
        return store.read_attachment(self._app_name, ref)

    def search(self, query: str, *, limit: int = 20) -> list[SearchHit]:
        """Full-text search over this session (stemmed words, phrases, substrings).

        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"role": "user", "content": "Where should I stay in Lisbon?"})
        >>> [hit.content for hit in s.search("lisbon")]
        ['Where should I stay in Lisbon?']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        return self._backend.search(query, limit)

    # -- overlays and compaction -------------------------------------------------------------------
    def add_compaction(self, summary: str, from_message_id: str, to_message_id: str) -> Compaction:
        """Store a summary overlay replacing ``from``..``to`` when history is read.

        >>> from threadline.messages import assistant, text_of, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> _ = s.add_compaction("They greeted each other.", "m1", "m2")
        >>> [text_of(m) for m in s.get_history()]
        ['They greeted each other.', 'bye']
        """
        if not isinstance(summary, str):
            raise InvalidArgumentError("a compaction summary must be a string")
        return self._backend.add_compaction(summary, from_message_id, to_message_id)

    def get_compactions(self) -> list[Compaction]:
        """Every stored overlay of this session, oldest first.

        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = s.add_compaction("Greetings.", "m1", "m2")
        >>> [(c.summary, c.from_message_id, c.to_message_id) for c in s.get_compactions()]
        [('Greetings.', 'm1', 'm2')]
        """
        return self._backend.get_compactions()

    def compact(self, leaf_id: str | None = None) -> CompactResult | None:
        """Summarise part of the history with the registered function and store an overlay.

        Repeated compaction extends the earliest overlay visible on the path, so each branch
        keeps one growing summary. Returns ``None`` when the function declines.

        >>> from threadline.messages import text_of
        >>> def summarize(history):  # everything but the newest message
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "They greeted.")
        >>> s = Session.create(":memory:").on_compaction(summarize)
        >>> _ = s.append_messages([{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
        >>> s.compact().summary, [text_of(m) for m in s.get_history()]
        ('They greeted.', ['They greeted.', 'bye'])
        """
        if self._settings.compact_fn is None:
            raise CompactionError("no compaction function registered: call on_compaction(fn)")
        plan = self._compaction_input(leaf_id)
        return self._store_compaction(plan, self._call_compact_fn(plan.history))

    # The three phases of compact(), shared with the async session (which awaits the middle one).
    def _compaction_input(self, leaf_id: str | None, keep: int = 0) -> _CompactionInput:
        """The raw path, the overlays and the history offered to the compaction function:
        all of it, or all but the last ``keep`` messages (``compact_when``)."""
        raw_path = self._backend.get_path(leaf_id)
        compactions = self._backend.get_compactions()
        history = apply_overlays(raw_path, compactions) if raw_path else []
        if keep:
            history = history[: keep_boundary(history, keep)]
        return _CompactionInput(raw_path, compactions, history)

    def _compaction_context(self, summarize_all: bool = False) -> CompactContext:
        return CompactContext(
            token_counter=self._settings.token_counter, summarize_all=summarize_all
        )

    def _invoke_compact_fn(
        self, fn: Callable[..., Any], history: list[Message], summarize_all: bool = False
    ) -> Any:
        """Call a compaction function with the history (and the context when it takes one);
        what it returns may be awaitable (the async session awaits it)."""
        if _takes_one_argument(fn):
            return fn(history)
        return fn(history, self._compaction_context(summarize_all))

    def _call_compact_fn(
        self, history: list[Message], summarize_all: bool = False
    ) -> CompactResult | None:
        fn = self._settings.compact_fn
        assert fn is not None
        result = self._invoke_compact_fn(fn, history, summarize_all)
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise CompactionError(
                "the compaction function is async; use threadline.aio.AsyncSession"
            )
        return check_compact_result(result)

    def _store_compaction(
        self, plan: _CompactionInput, result: CompactResult | None
    ) -> CompactResult | None:
        ends = _overlay_ends(plan, result)
        if result is None or ends is None:
            return None
        first_id, to_id = ends
        self._backend.add_compaction(result.summary, first_id, to_id)
        if self._settings.cached_prompt or self._frozen is not None:
            self.refresh_system_prompt()
        return CompactResult(first_id, to_id, result.summary)

    def _after_append(self) -> None:
        settings = self._settings
        if settings.compact_fn is None:
            return
        try:
            threshold = settings.compact_threshold
            if threshold is not None and self._estimate_tokens() > threshold:
                self.compact()
            plan = self._count_compaction_input()
            if plan is not None:
                self._store_compaction(plan, self._call_compact_fn(plan.history, True))
        except Exception as exc:  # automatic compaction must never fail the append
            self._report_compaction_error(exc)

    def _count_compaction_input(self) -> _CompactionInput | None:
        """What ``compact_when`` offers the compaction function now, or ``None``: when the
        active path holds more than ``min_messages`` visible messages (summaries count as one
        each), everything but the last ``keep`` — if that holds a message not yet summarised.
        Reads one count, and the path's ids only when the raw path is long enough."""
        minimum = self._settings.compact_min_messages
        if minimum is None or self._backend.get_path_length() <= minimum:
            return None
        ids = self._backend.get_path_ids()
        spans = visible_overlays([{"id": i} for i in ids], self._backend.get_compactions())
        # A span hides end - start + 1 messages and shows one summary in their place.
        if len(ids) - sum(span.end - span.start for span in spans) <= minimum:
            return None
        plan = self._compaction_input(None, keep=self._settings.compact_keep)
        if all(is_overlay_id(m.get("id")) for m in plan.history):
            return None
        return plan

    def _report_compaction_error(self, exc: Exception) -> None:
        if self._settings.error_handler is None:
            logger.warning("automatic compaction failed: %s", exc, exc_info=exc)
            return
        try:
            self._settings.error_handler(exc)
        except Exception:
            logger.exception("on_compaction_error handler raised")

    def _estimate_tokens(self) -> int:
        history = self.get_history()
        prompt = self._current_prompt()
        if self._settings.token_counter is not None:
            blocks = self.get_context_blocks()
            counter = self._settings.token_counter
            return int(counter(messages=history, system_prompt=prompt, blocks=blocks))
        return default_token_counter(messages=history, system_prompt=prompt)

    def _current_prompt(self) -> str:
        """The frozen prompt if there is one (memory or cache), else a fresh render (not saved)."""
        if self._frozen is not None:
            return self._frozen
        if self._settings.cached_prompt:
            stored = self._load_cached_prompt()
            if stored is not None:
                return stored
        return self._blocks.render()

    # -- memory blocks and the system prompt -------------------------------------------------------
    @property
    def _blocks(self) -> ContextBlocks:
        self._used = True
        if self._blocks_obj is None:
            self._blocks_obj = ContextBlocks(
                self._settings.context,
                store=self.store,
                app_name=self._app_name,
                session_id=self._session_id,
                user_id=self._user_id,
                generation=self._generation,
            )
        return self._blocks_obj

    def get_context_block(self, label: str) -> ContextBlock | None:
        """One memory block (providers are loaded on first use), or ``None``.

        >>> s = Session.create(":memory:").with_context("memory", description="Learned facts")
        >>> s.get_context_block("memory").description, s.get_context_block("nope")
        ('Learned facts', None)
        """
        return self._blocks.get(label)

    def get_context_blocks(self) -> list[ContextBlock]:
        """All memory blocks in registration order.

        >>> s = Session.create(":memory:").with_context("soul", provider="Be brief.")
        >>> s = s.with_context("memory")
        >>> [(b.label, b.writable) for b in s.get_context_blocks()]
        [('soul', False), ('memory', True)]
        """
        return self._blocks.all()

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (limits checked; the frozen prompt is unchanged).

        >>> s = Session.create(":memory:").with_context("memory", max_tokens=100)
        >>> s.replace_context_block("memory", "Likes tea.").content
        'Likes tea.'
        """
        return self._blocks.replace(label, content)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Append to a writable block (joined with a newline unless empty / already starting so).

        >>> s = Session.create(":memory:").with_context("memory")
        >>> _ = s.append_context_block("memory", "Likes tea.")
        >>> print(s.append_context_block("memory", "Lives in Porto.").content)
        Likes tea.
        Lives in Porto.
        """
        return self._blocks.append(label, content)

    def add_context(self, label: str, **options: Any) -> ContextBlock | None:
        """Add a block at run time (the frozen prompt is unchanged until refreshed).

        >>> s = Session.create(":memory:")
        >>> block = s.add_context("notes", description="Scratch space")
        >>> block.label, block.writable
        ('notes', True)
        """
        self._register(ContextConfig(label, **options))
        return self._blocks.get(label)

    def remove_context(self, label: str) -> bool:
        """Remove a block at run time; ``False`` if no such block.

        >>> s = Session.create(":memory:").with_context("memory")
        >>> s.remove_context("memory"), s.remove_context("memory")
        (True, False)
        """
        removed = self._settings.remove_context(label)
        if self._blocks_obj is not None:
            self._blocks_obj.remove(label)
        return removed

    def freeze_system_prompt(self) -> str:
        """Render the system prompt once; later calls (and, if cached, new processes) reuse it.

        >>> s = Session.create(":memory:").with_context("soul", provider="You are concise.")
        >>> s = s.with_context("memory")
        >>> prompt = s.freeze_system_prompt()
        >>> _ = s.replace_context_block("memory", "Likes tea.")
        >>> "You are concise." in prompt, s.freeze_system_prompt() == prompt
        (True, True)
        """
        if self._frozen is not None:
            return self._frozen
        if self._settings.cached_prompt:
            stored = self._load_cached_prompt()
            if stored is not None:
                self._frozen = stored
                return stored
        self._frozen = self._blocks.render()
        if self._settings.cached_prompt:
            self._save_cached_prompt(self._frozen)
        return self._frozen

    def refresh_system_prompt(self) -> str:
        """Re-read every provider, re-render, persist (if cached) and return the new prompt.

        >>> s = Session.create(":memory:").with_context("memory")
        >>> _ = s.freeze_system_prompt()
        >>> _ = s.replace_context_block("memory", "Likes tea.")
        >>> "Likes tea." in s.refresh_system_prompt()
        True
        """
        self._blocks.reload()
        self._frozen = self._blocks.render()
        if self._settings.cached_prompt:
            self._save_cached_prompt(self._frozen)
        return self._frozen

    def _load_cached_prompt(self) -> str | None:
        if self._settings.prompt_provider is not None:
            value = self._settings.prompt_provider.get()
            return value if isinstance(value, str) and value != "" else None
        return self._store_handle("with_cached_prompt()").get_prompt()

    def _save_cached_prompt(self, prompt: str) -> None:
        if self._settings.prompt_provider is not None:
            self._settings.prompt_provider.set(prompt)
            return
        self._store_handle("with_cached_prompt()").set_prompt(prompt)

    # -- tools and skills --------------------------------------------------------------------------
    def tools(self) -> Toolset:
        """Tools the model can call to edit its memory, derived from the block kinds.

        >>> s = Session.create(":memory:").with_context("memory")
        >>> tools = s.tools()
        >>> list(tools)
        ['set_context']
        >>> _ = tools.execute("set_context", {"label": "memory", "content": "Likes tea."})
        >>> s.get_context_block("memory").content
        'Likes tea.'
        """
        return build_context_tools(self)

    def write_context_entry(
        self,
        label: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
    ) -> str:
        """Write a keyed entry into a skill or search block; returns its key.

        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("notes", provider=threadline.StoreSearchProvider(s.store))
        >>> s.write_context_entry("notes", "The user drinks green tea.", title="tea")
        'tea'
        """
        return self._blocks.write_entry(label, content, title=title, description=description)

    def load_context_entry(self, label: str, key: str) -> str | None:
        """Load a skill document and remember it as loaded (``"label:key"``).

        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> s.load_context_entry("skills", "pirate"), s.loaded_skills
        ('Talk like a pirate.', {'skills:pirate'})
        """
        content = self._blocks.load(label, key)
        if content is not None:
            self._loaded_set().add(_skill_name(label, key))
        return content

    def search_context_block(self, label: str, query: str) -> str | None:
        """Search a searchable block; ``None`` when nothing is found.

        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("notes", provider=threadline.StoreSearchProvider(s.store))
        >>> _ = s.write_context_entry("notes", "The user drinks green tea.", title="tea")
        >>> print(s.search_context_block("notes", "tea"))
        [tea]
        The user drinks green tea.
        >>> s.search_context_block("notes", "coffee") is None
        True
        """
        return self._blocks.search(label, query)

    @property
    def loaded_skills(self) -> set[str]:
        """Skills currently loaded in history, as ``"label:key"`` (rebuilt from history).

        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> _ = s.load_context_entry("skills", "pirate")
        >>> s.loaded_skills
        {'skills:pirate'}
        """
        return set(self._loaded_set())

    def _loaded_set(self) -> set[str]:
        if self._loaded is None:
            self._loaded = {_skill_name(s.label, s.key) for s in self._backend.get_skill_loads()}
        return self._loaded

    def _note_skill_loads(self, stored: Sequence[Message]) -> None:
        """Keep a built ``loaded_skills`` set in step with ``load_context`` results appended."""
        if self._loaded is not None:
            for message in stored:
                self._loaded.update(_skill_name(lbl, k) for lbl, k, _ in skill_loads_of(message))

    def unload_skill(self, label: str, key: str) -> bool:
        """Rewrite the stored ``load_context`` result to ``[skill unloaded: <key>]``.

        Returns ``False`` if that skill is not currently loaded.

        >>> import threadline
        >>> s = Session.create(":memory:")
        >>> _ = s.with_context("skills", provider=threadline.StoreSkillProvider(s.store))
        >>> _ = s.write_context_entry("skills", "Talk like a pirate.", title="pirate")
        >>> _ = s.load_context_entry("skills", "pirate")
        >>> s.unload_skill("skills", "pirate"), s.unload_skill("skills", "pirate"), s.loaded_skills
        (True, False, set())
        """
        loads = self._backend.get_skill_loads()
        if self._loaded is None:  # first use: build the set from the same read
            self._loaded = {_skill_name(s.label, s.key) for s in loads}
        loaded = self._loaded
        name = _skill_name(label, key)
        records = [s for s in loads if (s.label, s.key) == (label, key)]
        for record in records:
            message = self._backend.get_message(record.message_id)
            if message is not None:
                self._backend.update_message(mark_skill_unloaded(message, label, key))
        if name not in loaded and not records:
            return False
        loaded.discard(name)
        return True

    # -- state -------------------------------------------------------------------------------------
    @property
    def state(self) -> Mapping[str, Any]:
        """Read-only merged view of ``app:``, ``user:``, session and live ``temp:`` keys.

        Over a custom ``SessionProvider`` (no threadline Store) only ``temp:`` keys exist:
        the view holds them alone, and reading or writing a stored key raises.

        >>> s = Session.create(":memory:").for_user("ana")
        >>> s.update_state({"topic": "tea", "user:lang": "pt", "temp:step": 1})
        >>> dict(s.state)
        {'topic': 'tea', 'user:lang': 'pt', 'temp:step': 1}
        """
        return MappingProxyType(merge_state(self._stored_state(), self._temp))

    def get_state(self, key: str, default: Any = None) -> Any:
        """One state value by its (prefixed) key.

        >>> s = Session.create(":memory:")
        >>> s.update_state({"topic": "tea"})
        >>> s.get_state("topic"), s.get_state("missing", "none")
        ('tea', 'none')
        """
        if scope_of(key) != "temp" and self.store is None:
            self._require_store("state")  # raises: stored keys need a Store, as for writes
        return self.state.get(key, default)

    def update_state(self, delta: Mapping[str, Any]) -> None:
        """Apply a delta atomically; a ``None`` value deletes the key; ``temp:`` keys stay local.

        >>> s = Session.create(":memory:").for_user("ana")
        >>> s.update_state({"user:lang": "pt", "draft": "hi"})
        >>> s.update_state({"draft": None})  # None deletes
        >>> dict(s.state)
        {'user:lang': 'pt'}
        """
        stored, temp = split_delta(validate_delta(delta))
        if stored:
            self._store_handle("state").update_state(stored)
        self._temp_apply(temp)

    def state_view(self) -> StateView:
        """The state with a pending delta (ADK-TS ``State``): ``get``, ``set``, ``has``,
        ``has_delta()``, ``delta``, ``to_dict()`` and ``commit()``, which applies the delta
        with :meth:`update_state` (same scopes; ``None`` deletes). Reads current values once,
        when made.

        >>> s = Session.create(":memory:").for_user("ana")
        >>> state = s.state_view()
        >>> state.set("temp:counter", state.get("temp:counter", 0) + 1)
        >>> state.set("user:last_seen", 1767225600)
        >>> dict(s.state), state.has_delta()
        ({}, True)
        >>> state.commit()
        >>> dict(s.state)
        {'user:last_seen': 1767225600, 'temp:counter': 1}
        """
        return StateView(
            self.state, self.update_state, user_id=self._user_id, stored=self.store is not None
        )

    def _stored_state(self) -> dict[str, Any]:
        self._used = True
        if self.store is None:
            return {}
        return self._store_handle("state").get_state()

    def _temp_apply(self, temp: Mapping[str, Any]) -> None:
        for key, value in temp.items():
            if value is None:
                self._temp.pop(key, None)
            else:
                self._temp[key] = value


def _overlay_ends(plan: _CompactionInput, result: CompactResult | None) -> tuple[str, str] | None:
    """The first and last message ids of the overlay ``result`` makes over ``plan``'s path, or
    ``None`` when it makes none."""
    if result is None:
        return None
    raw_path, compactions, history = plan
    # A summary message offered in the history stands for its range: an id of one (as
    # ``history[0]["id"]`` when everything offered is summarised) means that range's ends.
    from_id = _covered_end(result.from_message_id, compactions, first=True)
    to_id = _covered_end(result.to_message_id, compactions, first=False)
    positions = {m["id"]: i for i, m in enumerate(raw_path)}
    start, end = positions.get(from_id), positions.get(to_id)
    if start is None or end is None or start > end:
        return None
    return _extended_start(history, raw_path, compactions, from_id), to_id


def _extended_start(
    history: list[Message],
    raw_path: list[Message],
    compactions: Sequence[Compaction],
    from_id: str,
) -> str:
    """Where a new overlay starts: the earliest visible overlay's start, so one summary grows —
    but only when nothing unsummarised lies between that overlay and ``from_id``."""
    visible = earliest_visible_overlay(raw_path, compactions)
    if visible is None:
        return from_id
    ids = [m["id"] for m in history]
    overlay_id = f"{OVERLAY_ID_PREFIX}{visible.id}"
    if from_id not in ids or overlay_id not in ids:
        return from_id
    overlay_at, from_at = ids.index(overlay_id), ids.index(from_id)
    if overlay_at < from_at and all(is_overlay_id(i) for i in ids[overlay_at + 1 : from_at]):
        return visible.from_message_id
    return from_id


def _covered_end(message_id: str, compactions: Sequence[Compaction], *, first: bool) -> str:
    """``message_id``, or for the id of a summary message (``compaction_<id>``) the first
    (``first``) or last message its overlay covers."""
    if not is_overlay_id(message_id):
        return message_id
    overlay_id = message_id.removeprefix(OVERLAY_ID_PREFIX)
    for compaction in compactions:
        if compaction.id == overlay_id:
            return compaction.from_message_id if first else compaction.to_message_id
    return message_id


def _skill_name(label: str, key: str) -> str:
    """How a loaded skill is named in ``loaded_skills``: ``"label:key"``."""
    return f"{label}:{key}"


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` accepts exactly one positional argument (called with messages only)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 1


class _CompactionInput(NamedTuple):
    raw_path: list[Message]
    compactions: list[Compaction]
    history: list[Message]


def check_compact_result(result: object) -> CompactResult | None:
    """``result`` if a compaction function may return it (``CompactResult`` or ``None``)."""
    if result is not None and not isinstance(result, CompactResult):
        raise CompactionError(
            f"a compaction function must return CompactResult or None, got {type(result)}"
        )
    return result


check_every_public_method(Session, API_RULES)
