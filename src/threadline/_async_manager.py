"""``AsyncSessionManager``: the async twin of :class:`~threadline.SessionManager` (public
path ``threadline.aio``); the sessions it hands out are ``AsyncSession`` objects.

>>> import asyncio
>>> asyncio.run(AsyncSessionManager(":memory:").get_session("s1")).session_id
's1'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Literal

from threadline._async_calls import off, owning, to_thread
from threadline._async_session import AsyncSession, AsyncToolset
from threadline._settings import Compactor, ErrorHandler, async_compactor
from threadline.manager import SessionManager
from threadline.profile import Profile
from threadline.store.base import Store
from threadline.types import AUTO, AutoType, Message, Scope

__all__ = ["AsyncSessionManager"]


class AsyncSessionManager:
    """The async twin of :class:`~threadline.SessionManager`: sessions it hands out are
    :class:`AsyncSession` objects.

    >>> import asyncio
    >>> async def main():
    ...     async with AsyncSessionManager(":memory:", app_name="travel") as manager:
    ...         await manager.append("trip", {"role": "user", "content": "Lisbon in May"})
    ...         return [h.content for h in await manager.search("Lisbon")]
    >>> asyncio.run(main())
    ['Lisbon in May']
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
        self._sync = owning(
            lambda source: SessionManager(
                source,
                app_name,
                max_messages=max_messages,
                max_cached_sessions=max_cached_sessions,
                size_policy=size_policy,
                max_message_bytes=max_message_bytes,
            ),
            store,
        )
        self._async_compact: Callable[..., Any] | None = None

    @property
    def app_name(self) -> str:
        """The app this manager serves.

        >>> AsyncSessionManager(":memory:", "travel").app_name
        'travel'
        """
        return self._sync.app_name

    @property
    def sync(self) -> SessionManager:
        """The sync twin.

        >>> AsyncSessionManager(":memory:").sync.app_name
        'default'
        """
        return self._sync

    @classmethod
    def from_profile(
        cls,
        store: Store | str,
        app_name: str = "default",
        *,
        max_messages: int | None = None,
        max_cached_sessions: int = 1024,
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> AsyncSessionManager:
        """As ``SessionManager.from_profile`` (the profile is read at the first use, in a
        worker thread).

        >>> import asyncio
        >>> async def main():
        ...     m = AsyncSessionManager(":memory:").with_context("notes")
        ...     _ = await m.save_profile()
        ...     follower = AsyncSessionManager.from_profile(m.sync.store)
        ...     session = await follower.get_session("s1")
        ...     return [block.label for block in await session.get_context_blocks()]
        >>> asyncio.run(main())
        ['notes']
        """
        manager = cls(
            store,
            app_name,
            max_messages=max_messages,
            max_cached_sessions=max_cached_sessions,
            size_policy=size_policy,
            max_message_bytes=max_message_bytes,
        )
        manager._sync._follow()
        return manager

    async def save_profile(
        self, *, model: dict[str, Any] | None = None, runner: dict[str, Any] | None = None
    ) -> Profile:
        """As ``SessionManager.save_profile``.

        >>> import asyncio
        >>> asyncio.run(AsyncSessionManager(":memory:").save_profile()).version
        1
        """
        save = self._sync.save_profile
        return await to_thread(self._sync, save, model=model, runner=runner)

    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> AsyncSessionManager:
        """As ``SessionManager.with_context``.

        >>> AsyncSessionManager(":memory:").with_context("memory").app_name
        'default'
        """
        self._sync.with_context(
            label, description=description, max_tokens=max_tokens, provider=provider, scope=scope
        )
        return self

    def with_cached_prompt(self, provider: Any = None) -> AsyncSessionManager:
        """As ``SessionManager.with_cached_prompt``.

        >>> AsyncSessionManager(":memory:").with_cached_prompt().app_name
        'default'
        """
        self._sync.with_cached_prompt(provider)
        return self

    def on_compaction(self, fn: Compactor) -> AsyncSessionManager:
        """Compaction function for every session: sync or async (as
        ``AsyncSession.on_compaction``).

        >>> async def summarize(history, context=None): return None
        >>> AsyncSessionManager(":memory:").on_compaction(summarize).app_name
        'default'
        """
        self._async_compact = async_compactor(fn)
        if self._async_compact is not None:
            # The sync twin must not run an earlier sync function beside it.
            self._sync._settings.compact_fn = None
            self._sync._changed()
        else:
            self._sync.on_compaction(fn)
        return self

    def compact_after(
        self, token_threshold: int, *, token_counter: Callable[..., int] | None = None
    ) -> AsyncSessionManager:
        """As ``SessionManager.compact_after``.

        >>> AsyncSessionManager(":memory:").compact_after(1000).app_name
        'default'
        """
        self._sync.compact_after(token_threshold, token_counter=token_counter)
        return self

    def compact_when(self, min_messages: int = 50, keep: int = 20) -> AsyncSessionManager:
        """As ``SessionManager.compact_when``.

        >>> AsyncSessionManager(":memory:").compact_when(50, keep=20).app_name
        'default'
        """
        self._sync.compact_when(min_messages, keep)
        return self

    def on_compaction_error(self, handler: ErrorHandler) -> AsyncSessionManager:
        """As ``SessionManager.on_compaction_error``.

        >>> AsyncSessionManager(":memory:").on_compaction_error(print).app_name
        'default'
        """
        self._sync.on_compaction_error(handler)
        return self

    def with_searchable_history(
        self, label: str = "history", *, scope: Scope = "user"
    ) -> AsyncSessionManager:
        """As ``SessionManager.with_searchable_history``.

        >>> AsyncSessionManager(":memory:").with_searchable_history().app_name
        'default'
        """
        self._sync.with_searchable_history(label, scope=scope)
        return self

    async def close(self) -> None:
        """Close the store if the manager opened it from a URL.

        >>> import asyncio
        >>> asyncio.run(AsyncSessionManager(":memory:").close())
        """
        await to_thread(None, self._sync.close)

    async def __aenter__(self) -> AsyncSessionManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def get_session(self, session_id: str, *, user_id: str | None = None) -> AsyncSession:
        """An :class:`AsyncSession` for that session (``SessionManager.get_session``).

        >>> import asyncio
        >>> asyncio.run(AsyncSessionManager(":memory:").get_session("s1")).session_id
        's1'
        """
        get = self._sync.get_session
        session = await to_thread(self._sync, get, session_id, user_id=user_id)
        return AsyncSession._wrapping(session, self._async_compact)

    async def append(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Message:
        """As ``SessionManager.append``; automatic compaction awaited when async.

        >>> import asyncio
        >>> m = AsyncSessionManager(":memory:")
        >>> asyncio.run(m.append("s1", {"role": "user", "content": "hi"}))["role"]
        'user'
        """
        if self._async_compact is None:
            append = functools.partial(self._sync.append, state_delta=state_delta, user_id=user_id)
            return await to_thread(self._sync, append, session_id, message, parent_id)
        session = await self.get_session(session_id, user_id=user_id)
        return await session.append_message(message, parent_id, state_delta=state_delta)

    create = off(SessionManager, SessionManager.create)
    get = off(SessionManager, SessionManager.get)
    get_or_create = off(SessionManager, SessionManager.get_or_create)
    list = off(SessionManager, SessionManager.list)
    rename = off(SessionManager, SessionManager.rename)
    delete = off(SessionManager, SessionManager.delete)
    forget_user = off(SessionManager, SessionManager.forget_user)
    purge = off(SessionManager, SessionManager.purge)
    upsert = off(SessionManager, SessionManager.upsert)
    append_all = off(SessionManager, SessionManager.append_all)
    get_history = off(SessionManager, SessionManager.get_history)
    get_message_count = off(SessionManager, SessionManager.get_message_count)
    clear_messages = off(SessionManager, SessionManager.clear_messages)
    delete_messages = off(SessionManager, SessionManager.delete_messages)
    get_branches = off(SessionManager, SessionManager.get_branches)
    add_compaction = off(SessionManager, SessionManager.add_compaction)
    get_compactions = off(SessionManager, SessionManager.get_compactions)
    fork = off(SessionManager, SessionManager.fork)
    compact_and_split = off(SessionManager, SessionManager.compact_and_split)
    add_usage = off(SessionManager, SessionManager.add_usage)
    search = off(SessionManager, SessionManager.search)
    get_state = off(SessionManager, SessionManager.get_state)
    update_state = off(SessionManager, SessionManager.update_state)
    rewind = off(SessionManager, SessionManager.rewind)

    async def tools(self, *, user_id: str | None = None) -> AsyncToolset:
        """The manager's tools (``SessionManager.tools``), with a coroutine ``execute``.

        >>> import asyncio
        >>> tools = asyncio.run(AsyncSessionManager(":memory:").with_searchable_history().tools())
        >>> len(tools) >= 1
        True
        """
        tools = await to_thread(self._sync, self._sync.tools, user_id=user_id)
        return AsyncToolset._of(tools, self._sync)
