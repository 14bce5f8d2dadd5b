"""The async API: ``AsyncSession`` and ``AsyncSessionManager`` (one model, two transports).

Each async object drives a sync :class:`~threadline.Session` / :class:`~threadline.SessionManager`
and so follows exactly its rules, arguments, results and errors: builders (``create``,
``for_*``, ``with_*``, ``on_*``, ``compact_after``) and accessors stay plain; every method that
touches storage or a provider is a coroutine whose work runs in a worker thread, never on the
event loop. A cancelled ``await`` cannot leave half a write: the store call runs to its end
(one transaction) in its thread, so the write is either fully there or absent.

Async compaction works here, and only here: ``on_compaction`` takes an ``async def`` function
or ``create_async_compact_function(...)`` (the sync session refuses those when they are
registered), and automatic compaction after an append awaits it.

>>> import asyncio
>>> from threadline.aio import AsyncSession
>>> async def main():
...     async with AsyncSession.create(":memory:").for_session("chat") as session:
...         await session.append_message({"role": "user", "content": "Deploy on Friday?"})
...         return [hit.content for hit in await session.search("deploy")]
>>> asyncio.run(main())
['Deploy on Friday?']
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from threadline._provider import SessionProvider
from threadline._settings import Compactor, ErrorHandler, async_compactor, returns_coroutine
from threadline._state import StateView
from threadline.context import ContextConfig
from threadline.context.kinds import ASYNC_PROVIDER_LOOP
from threadline.context.providers import (
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.manager import SessionManager
from threadline.runner import Hooks, Model, Runner, TurnResult, _Turn
from threadline.session import Session, check_compact_result
from threadline.store import _lazily
from threadline.store.base import Store
from threadline.tools import Tool, Toolset
from threadline.types import AUTO, AutoType, CompactResult, Message, Scope

__all__ = [
    "AsyncRunner",
    "AsyncSession",
    "AsyncSessionManager",
    "AsyncStateView",
    "AsyncToolset",
]

P = ParamSpec("P")
R = TypeVar("R")


T = TypeVar("T", Session, SessionManager)

logger = logging.getLogger(__name__)

# threadline's providers with sync methods only (exact types: a subclass may be async).
_SYNC_PROVIDERS = (
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
    DirectorySkillProvider,
)


def _may_await(owner: object) -> bool:
    """Whether a call on ``owner`` (a sync session or manager) may meet a context provider
    whose methods return awaitables: one of its blocks has a provider of the user's (threadline's
    own text and store providers are sync)."""
    settings = getattr(owner, "_settings", None)
    if settings is None:
        return False
    return any(
        config.provider is not None
        and not isinstance(config.provider, str)
        and type(config.provider) not in _SYNC_PROVIDERS
        for config in settings.context
    )


async def _to_thread(owner: object, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``fn`` off the event loop for a call on ``owner``.

    A call that may meet an async context provider runs in a thread of ours, told the loop
    to await the provider's coroutine on (``context.kinds.ASYNC_PROVIDER_LOOP``): that thread
    waits for the loop, so it must not be one of the loop's default executor — the coroutine
    may itself need that executor (``asyncio.to_thread``, other ``threadline.aio`` calls), and
    enough waiting calls would hold all of it. Every other call runs in the default executor
    (``asyncio.to_thread``), which ``asyncio.run`` waits for when it ends."""
    if not _may_await(owner):
        return await asyncio.to_thread(fn, *args, **kwargs)
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()  # as asyncio.to_thread: the caller's context
    context.run(ASYNC_PROVIDER_LOOP.set, loop)
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await loop.run_in_executor(_own_threads(), call)


_own_pool: ThreadPoolExecutor | None = None
_own_pool_lock = threading.Lock()


def _own_threads() -> ThreadPoolExecutor:
    """The threads of calls that may wait for the loop: an idle one is reused, otherwise a new
    one starts — no bound, so such a call never waits for a thread another waiting call holds.
    They stay for reuse (as many as ran at once), and are joined at interpreter exit."""
    global _own_pool
    with _own_pool_lock:
        if _own_pool is None:
            _own_pool = ThreadPoolExecutor(2**31 - 1, thread_name_prefix="threadline-aio-own")
        return _own_pool


def _forget_own_threads() -> None:
    global _own_pool, _own_pool_lock
    _own_pool, _own_pool_lock = None, threading.Lock()  # a forked child has none of them


os.register_at_fork(after_in_child=_forget_own_threads)


def _owning(make: Callable[[Any], T], store: Any) -> T:
    """The sync twin built by ``make`` over ``store``; a URL is opened at the first storage
    call (in a worker thread: never on the event loop) and owned (closed) by the twin, as
    ``Session(url)`` owns what it opens."""
    source, owned = _lazily(store)
    twin = make(source)
    twin._owns_store = owned
    return twin


def _off(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The async twin of a sync method: ``await obj.<name>(...)`` runs ``obj._sync.<name>``
    in a worker thread. It has the sync method's signature, for type checkers (the ParamSpec)
    and for ``inspect.signature``/editors (``__signature__``). A sync method with ``**kwargs``
    does not match ``Concatenate`` (``self`` could come as a keyword): its ``_off`` line ignores
    that error, and mypy still takes the parameters from it."""
    name = method.__name__

    async def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        twin = self._sync
        return await _to_thread(twin, getattr(twin, name), *args, **kwargs)

    call.__name__ = name
    call.__qualname__ = f"Async{method.__qualname__}"
    owner = method.__qualname__.partition(".")[0]
    call.__doc__ = f"""Async ``{method.__qualname__}``: the same parameters, run off the loop.

    >>> import inspect
    >>> from {method.__module__} import {owner}
    >>> from threadline.aio import Async{owner}
    >>> a, b = Async{owner}.{name}, {owner}.{name}
    >>> inspect.signature(a) == inspect.signature(b)
    True
    """
    call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return call


class AsyncToolset(Mapping[str, Tool]):
    """A :class:`~threadline.tools.Toolset` whose ``execute`` is a coroutine (it runs the tool
    in a worker thread; the same never-raise rule: failures come back as ``"Error: ..."``).
    The same mapping of names to tools and the same exports (``to_openai``...).

    >>> import asyncio
    >>> from threadline.aio import AsyncSession
    >>> s = AsyncSession.create(":memory:").with_context("memory")
    >>> tools = asyncio.run(s.tools())
    >>> asyncio.run(tools.execute("set_context", {"label": "memory", "content": "Likes tea."}))
    'Written to memory. Usage: 3 tokens'
    """

    def __init__(self, toolset: Toolset) -> None:
        self.toolset = toolset
        self._owner: object = None  # the sync session or manager the tools came from

    @classmethod
    def _of(cls, toolset: Toolset, owner: object) -> AsyncToolset:
        out = cls(toolset)
        out._owner = owner
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self.toolset)

    def __len__(self) -> int:
        return len(self.toolset)

    def __getitem__(self, name: str) -> Tool:
        return self.toolset[name]

    async def execute(self, name: str, args: Any = None) -> str:
        """Run a tool off the event loop; every failure becomes ``"Error: <message>"``.

        >>> import asyncio
        >>> from threadline.aio import AsyncSession
        >>> tools = asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools())
        >>> asyncio.run(tools.execute("no_such_tool"))[:6]
        'Error:'
        """
        return await _to_thread(self._owner, self.toolset.execute, name, args)

    def to_openai(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's function-calling format (as ``Toolset.to_openai``).

        >>> import asyncio
        >>> from threadline.aio import AsyncSession
        >>> tools = asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools())
        >>> tools.to_openai()[0]["function"]["name"]
        'set_context'
        """
        return self.toolset.to_openai()

    def to_openai_responses(self) -> list[dict[str, Any]]:
        """The tools in the Responses API's format (as ``Toolset.to_openai_responses``).

        >>> import asyncio
        >>> from threadline.aio import AsyncSession
        >>> tools = asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools())
        >>> tools.to_openai_responses()[0]["name"]
        'set_context'
        """
        return self.toolset.to_openai_responses()

    def to_anthropic(self) -> list[dict[str, Any]]:
        """The tools in Anthropic's format (as ``Toolset.to_anthropic``).

        >>> import asyncio
        >>> from threadline.aio import AsyncSession
        >>> tools = asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools())
        >>> tools.to_anthropic()[0]["name"]
        'set_context'
        """
        return self.toolset.to_anthropic()

    def to_mcp(self) -> list[dict[str, Any]]:
        """The tools as MCP ``tools/list`` entries (as ``Toolset.to_mcp``).

        >>> import asyncio
        >>> from threadline.aio import AsyncSession
        >>> tools = asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools())
        >>> tools.to_mcp()[0]["name"]
        'set_context'
        """
        return self.toolset.to_mcp()


class AsyncStateView:
    """The async twin of :class:`~threadline.StateView` (from ``AsyncSession.state_view()``):
    the same reads and pending delta, and a coroutine :meth:`commit` (the write runs off the
    event loop).

    >>> from threadline import StateView
    >>> view = AsyncStateView(StateView({"existing": "value"}, print))
    >>> view.set("new", "data")
    >>> view.has_delta(), view.delta, view.to_dict()
    (True, {'new': 'data'}, {'existing': 'value', 'new': 'data'})
    """

    def __init__(self, view: StateView) -> None:
        self.sync = view
        self.get = view.get
        self.set = view.set
        self.has = view.has
        self.has_delta = view.has_delta
        self.to_dict = view.to_dict

    @property
    def delta(self) -> dict[str, Any]:
        """The pending changes (``StateView.delta``).

        >>> from threadline import StateView
        >>> AsyncStateView(StateView({}, print)).delta
        {}
        """
        return self.sync.delta

    async def commit(self) -> None:
        """Write the pending delta in one ``update_state`` (``StateView.commit``).

        >>> import asyncio
        >>> from threadline import StateView
        >>> view = AsyncStateView(StateView({}, print))
        >>> view.set("topic", "tea"); asyncio.run(view.commit())
        {'topic': 'tea'}
        """
        await _to_thread(None, self.sync.commit)

    def __contains__(self, key: object) -> bool:
        return key in self.sync

    def __repr__(self) -> str:
        return f"Async{self.sync!r}"


class AsyncSession:
    """The async twin of :class:`~threadline.Session` (module docstring).

    >>> import asyncio
    >>> s = AsyncSession.create(":memory:").for_session("a")
    >>> asyncio.run(s.append_message({"role": "user", "content": "hi"}))["role"]
    'user'
    >>> len(asyncio.run(s.get_history()))
    1
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
        self._sync = _owning(
            lambda source: Session(
                source,
                session_id=session_id,
                user_id=user_id,
                app_name=app_name,
                context=context,
                size_policy=size_policy,
                max_message_bytes=max_message_bytes,
            ),
            store,
        )
        self._async_compact: Callable[..., Any] | None = None

    @classmethod
    def _wrapping(cls, session: Session, async_compact: Callable[..., Any] | None) -> AsyncSession:
        out = cls.__new__(cls)
        out._sync = session
        out._async_compact = async_compact
        return out

    # -- building (plain) -----------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        store: Store | SessionProvider | str,
        *,
        size_policy: Literal["attach", "truncate", "error"] | None = None,
        max_message_bytes: int | None = None,
    ) -> AsyncSession:
        """Start a builder from a Store, a store URL (owned: closed by ``close()``) or a
        provider, as ``Session.create``.

        >>> AsyncSession.create(":memory:").for_session("a").session_id
        'a'
        """
        return cls(store, size_policy=size_policy, max_message_bytes=max_message_bytes)

    def _chain(self, result: Session) -> AsyncSession:
        return self if result is self._sync else AsyncSession._wrapping(result, self._async_compact)

    def for_session(self, session_id: str) -> AsyncSession:
        """As ``Session.for_session`` (a new object once this one has used storage).

        >>> AsyncSession.create(":memory:").for_session("x").session_id
        'x'
        """
        return self._chain(self._sync.for_session(session_id))

    def for_user(self, user_id: str) -> AsyncSession:
        """As ``Session.for_user``.

        >>> AsyncSession.create(":memory:").for_user("u1").user_id
        'u1'
        """
        return self._chain(self._sync.for_user(user_id))

    def for_app(self, app_name: str) -> AsyncSession:
        """As ``Session.for_app``.

        >>> AsyncSession.create(":memory:").for_app("travel").app_name
        'travel'
        """
        return self._chain(self._sync.for_app(app_name))

    def with_context(
        self,
        label: str,
        *,
        description: str | None = None,
        max_tokens: int | None = None,
        provider: Any = None,
        scope: Scope = "session",
    ) -> AsyncSession:
        """As ``Session.with_context`` (providers may be sync: they run off the loop).

        >>> AsyncSession.create(":memory:").with_context("memory").session_id
        'default'
        """
        self._sync.with_context(
            label, description=description, max_tokens=max_tokens, provider=provider, scope=scope
        )
        return self

    def with_cached_prompt(self, provider: Any = None) -> AsyncSession:
        """As ``Session.with_cached_prompt``.

        >>> AsyncSession.create(":memory:").with_cached_prompt().session_id
        'default'
        """
        self._sync.with_cached_prompt(provider)
        return self

    def on_compaction(self, fn: Compactor) -> AsyncSession:
        """Register the compaction function: sync, ``async def``,
        ``create_async_compact_function(...)``, or ``create_compact_function`` around an async
        summariser (its ``acompact`` is awaited).

        >>> async def summarize(history, context=None): return None
        >>> AsyncSession.create(":memory:").on_compaction(summarize).session_id
        'default'
        """
        self._async_compact = async_compactor(fn)
        if self._async_compact is not None:
            self._sync._settings.compact_fn = None  # the sync twin must not try to run it
        else:
            self._sync.on_compaction(fn)
        return self

    def compact_after(
        self, token_threshold: int, *, token_counter: Callable[..., int] | None = None
    ) -> AsyncSession:
        """As ``Session.compact_after``; an async compaction function is awaited.

        >>> AsyncSession.create(":memory:").compact_after(1000).session_id
        'default'
        """
        self._sync.compact_after(token_threshold, token_counter=token_counter)
        return self

    def compact_when(self, min_messages: int = 50, keep: int = 20) -> AsyncSession:
        """As ``Session.compact_when``; an async compaction function is awaited.

        >>> AsyncSession.create(":memory:").compact_when(50, keep=20).session_id
        'default'
        """
        self._sync.compact_when(min_messages, keep)
        return self

    def on_compaction_error(self, handler: ErrorHandler) -> AsyncSession:
        """As ``Session.on_compaction_error``.

        >>> AsyncSession.create(":memory:").on_compaction_error(print).session_id
        'default'
        """
        self._sync.on_compaction_error(handler)
        return self

    # -- accessors (plain) ----------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        """The session id.

        >>> AsyncSession.create(":memory:").session_id
        'default'
        """
        return self._sync.session_id

    @property
    def user_id(self) -> str | None:
        """The user this session reads and writes as.

        >>> AsyncSession.create(":memory:").user_id is None
        True
        """
        return self._sync.user_id

    @property
    def app_name(self) -> str:
        """The app the session belongs to.

        >>> AsyncSession.create(":memory:").app_name
        'default'
        """
        return self._sync.app_name

    @property
    def store(self) -> Store | None:
        """The backing Store.

        >>> AsyncSession.create(":memory:").store is not None
        True
        """
        return self._sync.store

    @property
    def sync(self) -> Session:
        """The sync twin (same session, same settings) for code that is not async.

        >>> AsyncSession.create(":memory:").sync.session_id
        'default'
        """
        return self._sync

    async def close(self) -> None:
        """Close the store if this session opened it from a URL.

        >>> import asyncio
        >>> asyncio.run(AsyncSession.create(":memory:").close())
        """
        await _to_thread(None, self._sync.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- storage: the sync methods, run off the loop ----------------------------------------------
    update_message = _off(Session.update_message)
    delete_messages = _off(Session.delete_messages)
    clear_messages = _off(Session.clear_messages)
    get_message = _off(Session.get_message)
    get_latest_leaf = _off(Session.get_latest_leaf)
    checkout = _off(Session.checkout)
    get_path_length = _off(Session.get_path_length)
    get_branches = _off(Session.get_branches)
    get_history = _off(Session.get_history)
    get_recent_history = _off(Session.get_recent_history)
    read_attachment = _off(Session.read_attachment)
    search = _off(Session.search)
    add_compaction = _off(Session.add_compaction)
    get_compactions = _off(Session.get_compactions)
    get_context_block = _off(Session.get_context_block)
    get_context_blocks = _off(Session.get_context_blocks)
    replace_context_block = _off(Session.replace_context_block)
    append_context_block = _off(Session.append_context_block)
    add_context = _off(Session.add_context)
    remove_context = _off(Session.remove_context)
    freeze_system_prompt = _off(Session.freeze_system_prompt)
    refresh_system_prompt = _off(Session.refresh_system_prompt)
    write_context_entry = _off(Session.write_context_entry)
    load_context_entry = _off(Session.load_context_entry)
    search_context_block = _off(Session.search_context_block)
    unload_skill = _off(Session.unload_skill)
    get_state = _off(Session.get_state)
    update_state = _off(Session.update_state)

    async def append_message(
        self,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
    ) -> Message:
        """As ``Session.append_message``; then automatic compaction, awaited when async.

        >>> import asyncio
        >>> s = AsyncSession.create(":memory:")
        >>> asyncio.run(s.append_message({"role": "user", "content": "hi"}))["parts"]
        [{'type': 'text', 'text': 'hi'}]
        """
        stored = await _to_thread(
            self._sync, self._sync.append_message, message, parent_id, state_delta=state_delta
        )
        await self._after_append()
        return stored

    async def append_messages(
        self, messages: Sequence[Mapping[str, Any]], parent_id: str | AutoType | None = AUTO
    ) -> list[Message]:
        """As ``Session.append_messages`` (one transaction); then automatic compaction.

        >>> import asyncio
        >>> s = AsyncSession.create(":memory:")
        >>> len(asyncio.run(s.append_messages([{"role": "user", "content": "a"}] * 2)))
        2
        """
        stored = await _to_thread(self._sync, self._sync.append_messages, messages, parent_id)
        await self._after_append()
        return stored

    async def compact(self, leaf_id: str | None = None) -> CompactResult | None:
        """As ``Session.compact``; an async compaction function is awaited on the loop while
        the reads and the overlay write run off it.

        >>> import asyncio
        >>> from threadline import CompactResult
        >>> async def summarize(history, context=None):
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "Earlier.")
        >>> s = AsyncSession.create(":memory:").on_compaction(summarize)
        >>> _ = asyncio.run(s.append_messages([{"role": "user", "content": c} for c in "abc"]))
        >>> asyncio.run(s.compact()).summary
        'Earlier.'
        """
        if self._async_compact is None:
            return await _to_thread(self._sync, self._sync.compact, leaf_id)
        plan = await _to_thread(self._sync, self._sync._compaction_input, leaf_id)
        return await self._compact_plan(plan)

    async def _compact_plan(self, plan: Any, summarize_all: bool = False) -> CompactResult | None:
        """Await the async compaction function on ``plan`` and store its overlay."""
        assert self._async_compact is not None
        sync = self._sync
        result = await sync._invoke_compact_fn(self._async_compact, plan.history, summarize_all)
        return await _to_thread(sync, sync._store_compaction, plan, check_compact_result(result))

    async def _after_append(self) -> None:
        """Automatic compaction with an async function (the sync session runs a sync one):
        ``compact_after`` then ``compact_when``, as ``Session._after_append``."""
        settings = self._sync._settings
        if self._async_compact is None:
            return
        try:
            threshold = settings.compact_threshold
            estimate = self._sync._estimate_tokens
            if threshold is not None and await _to_thread(self._sync, estimate) > threshold:
                await self.compact()
            plan = await _to_thread(self._sync, self._sync._count_compaction_input)
            if plan is not None:
                await self._compact_plan(plan, summarize_all=True)
        except Exception as exc:  # automatic compaction must never fail the append
            self._sync._report_compaction_error(exc)

    async def tools(self) -> AsyncToolset:
        """The memory tools (``Session.tools``), with a coroutine ``execute``.

        >>> import asyncio
        >>> sorted(asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools()))
        ['set_context']
        """
        return AsyncToolset._of(await _to_thread(self._sync, self._sync.tools), self._sync)

    async def loaded_skills(self) -> set[str]:
        """The skills loaded in this session (``Session.loaded_skills``).

        >>> import asyncio
        >>> asyncio.run(AsyncSession.create(":memory:").loaded_skills())
        set()
        """
        return await _to_thread(self._sync, lambda: self._sync.loaded_skills)

    async def state_view(self) -> AsyncStateView:
        """The state with a pending delta (``Session.state_view``); ``await view.commit()``.

        >>> import asyncio
        >>> async def main():
        ...     session = AsyncSession.create(":memory:")
        ...     view = await session.state_view()
        ...     view.set("topic", "tea")
        ...     await view.commit()
        ...     return await session.get_state("topic"), view.has_delta()
        >>> asyncio.run(main())
        ('tea', False)
        """
        return AsyncStateView(await _to_thread(self._sync, self._sync.state_view))

    async def state(self) -> dict[str, Any]:
        """The merged state (``Session.state``).

        >>> import asyncio
        >>> asyncio.run(AsyncSession.create(":memory:").state())
        {}
        """
        return await _to_thread(self._sync, lambda: dict(self._sync.state))


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
        self._sync = _owning(
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
        await _to_thread(None, self._sync.close)

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
        session = await _to_thread(self._sync, get, session_id, user_id=user_id)
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
            return await _to_thread(self._sync, append, session_id, message, parent_id)
        session = await self.get_session(session_id, user_id=user_id)
        return await session.append_message(message, parent_id, state_delta=state_delta)

    create = _off(SessionManager.create)
    get = _off(SessionManager.get)
    get_or_create = _off(SessionManager.get_or_create)  # type: ignore[arg-type]
    list = _off(SessionManager.list)
    rename = _off(SessionManager.rename)
    delete = _off(SessionManager.delete)
    forget_user = _off(SessionManager.forget_user)
    purge = _off(SessionManager.purge)
    upsert = _off(SessionManager.upsert)
    append_all = _off(SessionManager.append_all)
    get_history = _off(SessionManager.get_history)  # type: ignore[arg-type]
    get_message_count = _off(SessionManager.get_message_count)
    clear_messages = _off(SessionManager.clear_messages)
    delete_messages = _off(SessionManager.delete_messages)
    get_branches = _off(SessionManager.get_branches)
    add_compaction = _off(SessionManager.add_compaction)
    get_compactions = _off(SessionManager.get_compactions)
    fork = _off(SessionManager.fork)
    compact_and_split = _off(SessionManager.compact_and_split)
    add_usage = _off(SessionManager.add_usage)
    search = _off(SessionManager.search)
    get_state = _off(SessionManager.get_state)
    update_state = _off(SessionManager.update_state)
    rewind = _off(SessionManager.rewind)

    async def tools(self, *, user_id: str | None = None) -> AsyncToolset:
        """The manager's tools (``SessionManager.tools``), with a coroutine ``execute``.

        >>> import asyncio
        >>> tools = asyncio.run(AsyncSessionManager(":memory:").with_searchable_history().tools())
        >>> len(tools) >= 1
        True
        """
        tools = await _to_thread(self._sync, self._sync.tools, user_id=user_id)
        return AsyncToolset._of(tools, self._sync)


async def _acall(fn: Callable[..., Any], *args: Any) -> Any:
    """Await an async function; run a sync one in a worker thread (it may block on I/O)."""
    if returns_coroutine(fn):
        return await fn(*args)
    result = await _to_thread(None, fn, *args)
    return await result if inspect.isawaitable(result) else result


def _report_orphaned_tail(tail: asyncio.Future[TurnResult]) -> None:
    """Log how the rest of a cancelled run ended, when that is not a success: no caller is
    left to receive its error."""
    if tail.cancelled():
        logger.error(
            "AsyncRunner: the rest of a cancelled run was cancelled before it ended (did the "
            "event loop stop? await runner.aclose() first): a run cut before its commit is not "
            "stored, one cut after it may miss its automatic compaction"
        )
    elif (error := tail.exception()) is not None:
        logger.error("AsyncRunner: the rest of a cancelled run failed", exc_info=error)


class AsyncRunner(Runner):
    """The async twin of :class:`~threadline.Runner`: ``await runner.arun(...)``. The model,
    the hooks, ``memory`` and ``on_overflow`` may be sync (run in a worker thread) or async;
    storage runs off the event loop. Takes a manager or session, sync or async. Before the loop
    ends, ``await runner.aclose()`` (or use ``async with``): it waits for the rest of cancelled
    runs.

    >>> import asyncio
    >>> async def model(system, messages, tools):
    ...     return "Hi!"
    >>> runner = AsyncRunner(AsyncSessionManager(":memory:"), model)
    >>> asyncio.run(runner.arun("Hello", session_id="s")).output["parts"][0]["text"]
    'Hi!'
    """

    _async = True

    def __init__(
        self,
        target: AsyncSessionManager | AsyncSession | SessionManager | Session,
        model: Model,
        *,
        runs: int | None = None,
        max_context_tokens: int | None = None,
        max_steps: int = 8,
        memory: Callable[..., Any] | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        # An async compaction function lives on the async wrapper: kept, to run after appends.
        self._async_compact: Callable[..., Any] | None = None
        if isinstance(target, (AsyncSession, AsyncSessionManager)):
            self._async_compact = target._async_compact
            target = target.sync
        super().__init__(
            target,
            model,
            runs=runs,
            max_context_tokens=max_context_tokens,
            max_steps=max_steps,
            memory=memory,
            hooks=hooks,
        )
        self._completing: set[asyncio.Future[TurnResult]] = set()  # tails of cancelled runs

    async def arun(
        self, user_input: Any, *, session_id: str | None = None, user_id: str | None = None
    ) -> TurnResult:
        """One run, as ``Runner.run`` (module ``threadline.runner``).

        >>> import asyncio
        >>> runner = AsyncRunner(AsyncSession.create(":memory:"), lambda s, m, t: "ok")
        >>> asyncio.run(runner.arun("hi")).messages[0]["role"]
        'user'
        """
        session = await _to_thread(self.target, self.session_for, session_id, user_id)
        turn = _Turn(self, session, user_input)
        await _to_thread(session, turn.load_state)
        if self.hooks.before_run is not None:
            await _acall(self.hooks.before_run, turn.context)
        await _to_thread(session, turn.start)
        if self.memory is not None and turn.needs_memory():
            plan, covered = await _to_thread(session, turn.memory_input)
            result = await _acall(turn.call_memory, covered)
            await _to_thread(session, turn.apply_memory, plan, result)
        if turn.overflow and self._on_overflow is not None:
            await _acall(self._on_overflow, list(turn.overflow))
        for _ in range(self.max_steps):
            output = await _acall(self.model, turn.system, turn.messages(), turn.tools)
            calls = turn.take(output)
            if not calls:
                break
            for part in calls:
                name = turn.tool_name(part)
                answer = await _to_thread(session, turn.tools.execute, name, part.get("input"))
                turn.answer(part, answer)
        else:  # the last allowed model call still called a tool
            turn.stop_reason = "max_steps"
        # From after_run on, the run goes on even if this await is cancelled: it commits whole
        # unless after_run raises. The tail runs as a task of its own, which aclose() waits for.
        tail = asyncio.ensure_future(self._complete(turn, session))
        self._completing.add(tail)
        tail.add_done_callback(self._completing.discard)
        try:
            return await asyncio.shield(tail)
        except asyncio.CancelledError:
            tail.add_done_callback(_report_orphaned_tail)  # nobody awaits its outcome now
            raise

    async def aclose(self) -> None:
        """Wait until the rest of every cancelled run has ended. Once its append has started,
        a cancelled ``arun`` completes in a task of its own; with async parts (an async
        ``after_run`` or compaction) that task needs the event loop, and ``asyncio.run`` cancels
        it when its coroutine returns — await this (or use ``async with``) before then. Errors
        of those tasks are logged (logger ``threadline.aio``). The store is not closed (the
        session or manager owns it). Idempotent.

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncRunner(AsyncSessionManager(":memory:"), lambda s, m, t: "ok") as r:
        ...         return (await r.arun("hi", session_id="s")).output["parts"][0]["text"]
        >>> asyncio.run(main())
        'ok'
        """
        while self._completing:
            await asyncio.wait(set(self._completing))

    async def __aenter__(self) -> AsyncRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _complete(self, turn: _Turn, session: Session) -> TurnResult:
        """``after_run``, the commit, then what follows it (``_Turn.after_commit``, async
        compaction). Without async parts all of it runs in one worker thread: a cancelled or
        stopped loop cannot cut it (``asyncio.run`` waits for its worker threads)."""
        after = self.hooks.after_run
        if self._async_compact is None and (after is None or not returns_coroutine(after)):

            def in_thread() -> tuple[TurnResult | None, Any]:
                pending = after(turn.context) if after is not None else None
                if inspect.isawaitable(pending):  # a sync function returning an awaitable
                    return None, pending
                result = turn.commit()
                turn.after_commit()
                return result, None

            result, pending = await _to_thread(session, in_thread)
            if result is not None:
                return result
            await pending
        elif after is not None:
            await _acall(after, turn.context)
        result = await _to_thread(session, turn.commit)
        await _to_thread(session, turn.after_commit)
        if self._async_compact is not None:  # the sync one ran a sync function only
            await AsyncSession._wrapping(session, self._async_compact)._after_append()
        return result
