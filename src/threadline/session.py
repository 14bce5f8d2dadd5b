"""``Session``: one conversation — its message tree, memory blocks, prompt, compaction and state.

A Session orchestrates: it normalises input, asks the pure modules (overlays, rendering,
compaction planning, state rules) what to do, and asks its backend (a ``Store`` or a custom
``SessionProvider``) to persist it. It holds no SQL.

It is built in layers, one concern each, in private modules beside this one:
``_session_core`` (identity, settings, backend), ``_session_state`` (skills and state),
``_session_blocks`` (memory blocks and the frozen prompt), ``_session_tree`` (messages and
the tree), ``_session_compaction`` (overlays and automatic compaction). This module adds the
builder and the lifecycle.

>>> import threadline
>>> s = threadline.Session.create(":memory:").for_session("chat-1")
>>> _ = s.append_message({"role": "user", "content": "hi"})
>>> [m["role"] for m in s.get_history()]
['user']
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal, cast

from threadline._checks import API_RULES, check_every_public_method
from threadline._session_compaction import SessionCompaction
from threadline._session_compaction import check_compact_result as check_compact_result
from threadline._session_core import check_name
from threadline._session_provider import SessionProvider
from threadline._settings import Compactor, ErrorHandler, SessionSettings
from threadline.context import ContextConfig
from threadline.store.base import Store
from threadline.types import Scope

__all__ = ["Session"]


class Session(SessionCompaction):
    """One conversation: a branching message history plus memory blocks and state.

    >>> import threadline
    >>> s = threadline.Session(threadline.connect(":memory:"), session_id="s1")
    >>> s.append_message(threadline.messages.user("hello", id="m1"))["id"]
    'm1'
    """

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
        target._session_id = check_name("session_id", session_id)
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
        target._user_id = check_name("user_id", user_id)
        target._reset_runtime()
        return target

    def for_app(self, app_name: str) -> Session:
        """Namespace everything under this app name (default ``"default"``). A session
        already used gets a new Session instead (see :meth:`for_session`).

        >>> Session.create(":memory:").for_app("travel").app_name
        'travel'
        """
        target = self._target()
        target._app_name = check_name("app_name", app_name)
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

        >>> from threadline import CompactResult

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

        >>> from threadline import CompactResult

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
        >>> from threadline import CompactResult
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


check_every_public_method(Session, API_RULES)
