"""``AsyncSession``: the async twin of :class:`~threadline.Session` (public path
``threadline.aio``), with :class:`AsyncToolset` and :class:`AsyncStateView`, the async twins
of what a session hands out. Each drives its sync twin in worker threads
(``threadline._async_calls``) and so follows exactly its rules, arguments, results and errors.

>>> import asyncio
>>> async def main():
...     async with AsyncSession.create(":memory:").for_session("chat") as session:
...         await session.append_message({"role": "user", "content": "hi"})
...         return len(await session.get_history())
>>> asyncio.run(main())
1
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from threadline._async_calls import off, owning, to_thread
from threadline._session_compaction import CompactionInput, check_compact_result
from threadline._session_provider import SessionProvider
from threadline._settings import Compactor, ErrorHandler, async_compactor
from threadline._state import StateView
from threadline.context import ContextConfig
from threadline.session import Session
from threadline.store.base import Store
from threadline.tools import Tool, Toolset
from threadline.types import AUTO, AutoType, CompactResult, Message, Scope

__all__ = ["AsyncSession", "AsyncStateView", "AsyncToolset"]


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
        return await to_thread(self._owner, self.toolset.execute, name, args)

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
        await to_thread(None, self.sync.commit)

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
        self._sync = owning(
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
        await to_thread(None, self._sync.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- storage: the sync methods, run off the loop ----------------------------------------------
    update_message = off(Session, Session.update_message)
    delete_messages = off(Session, Session.delete_messages)
    clear_messages = off(Session, Session.clear_messages)
    get_message = off(Session, Session.get_message)
    get_latest_leaf = off(Session, Session.get_latest_leaf)
    checkout = off(Session, Session.checkout)
    get_path_length = off(Session, Session.get_path_length)
    get_branches = off(Session, Session.get_branches)
    get_history = off(Session, Session.get_history)
    get_recent_history = off(Session, Session.get_recent_history)
    read_attachment = off(Session, Session.read_attachment)
    search = off(Session, Session.search)
    add_compaction = off(Session, Session.add_compaction)
    get_compactions = off(Session, Session.get_compactions)
    get_context_block = off(Session, Session.get_context_block)
    get_context_blocks = off(Session, Session.get_context_blocks)
    replace_context_block = off(Session, Session.replace_context_block)
    append_context_block = off(Session, Session.append_context_block)
    add_context = off(Session, Session.add_context)
    remove_context = off(Session, Session.remove_context)
    freeze_system_prompt = off(Session, Session.freeze_system_prompt)
    refresh_system_prompt = off(Session, Session.refresh_system_prompt)
    write_context_entry = off(Session, Session.write_context_entry)
    load_context_entry = off(Session, Session.load_context_entry)
    search_context_block = off(Session, Session.search_context_block)
    unload_skill = off(Session, Session.unload_skill)
    get_state = off(Session, Session.get_state)
    update_state = off(Session, Session.update_state)

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
        stored = await to_thread(
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
        stored = await to_thread(self._sync, self._sync.append_messages, messages, parent_id)
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
            return await to_thread(self._sync, self._sync.compact, leaf_id)
        plan = await to_thread(self._sync, self._sync._compaction_input, leaf_id)
        return await self._compact_plan(plan)

    async def _compact_plan(self, plan: CompactionInput) -> CompactResult | None:
        """Await the async compaction function on ``plan`` and store its overlay."""
        assert self._async_compact is not None
        sync = self._sync
        history, summarize_all = plan.history, plan.summarize_all
        result = await sync._invoke_compact_fn(self._async_compact, history, summarize_all)
        return await to_thread(sync, sync._store_compaction, plan, check_compact_result(result))

    async def _after_append(self) -> None:
        """Automatic compaction with an async function (the sync session runs a sync one):
        the compactions ``Session._automatic_compactions`` makes due (its rule, advanced in a
        worker thread), each awaited here."""
        if self._async_compact is None:
            return
        sync = self._sync
        due = sync._automatic_compactions()
        try:
            while (plan := await to_thread(sync, next, due, None)) is not None:
                await self._compact_plan(plan)
        except Exception as exc:  # automatic compaction must never fail the append
            sync._report_compaction_error(exc)

    async def tools(self) -> AsyncToolset:
        """The memory tools (``Session.tools``), with a coroutine ``execute``.

        >>> import asyncio
        >>> sorted(asyncio.run(AsyncSession.create(":memory:").with_context("memory").tools()))
        ['set_context']
        """
        return AsyncToolset._of(await to_thread(self._sync, self._sync.tools), self._sync)

    async def loaded_skills(self) -> set[str]:
        """The skills loaded in this session (``Session.loaded_skills``).

        >>> import asyncio
        >>> asyncio.run(AsyncSession.create(":memory:").loaded_skills())
        set()
        """
        return await to_thread(self._sync, lambda: self._sync.loaded_skills)

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
        return AsyncStateView(await to_thread(self._sync, self._sync.state_view))

    async def state(self) -> dict[str, Any]:
        """The merged state (``Session.state``).

        >>> import asyncio
        >>> asyncio.run(AsyncSession.create(":memory:").state())
        {}
        """
        return await to_thread(self._sync, lambda: dict(self._sync.state))
