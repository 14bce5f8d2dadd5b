"""``AsyncRunner``: the async twin of :class:`~threadline.Runner` (public path
``threadline.aio``). It drives the same :class:`~threadline._run_turn.Turn` steps as the sync
runner, awaiting the model, the hooks and ``memory`` when they are async.

>>> import asyncio
>>> runner = AsyncRunner(AsyncSessionManager(":memory:"), lambda s, m, t: "ok")
>>> asyncio.run(runner.arun("hi", session_id="s")).output["parts"][0]["text"]
'ok'
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from threadline._async_calls import acall, to_thread
from threadline._async_manager import AsyncSessionManager
from threadline._async_session import AsyncSession
from threadline._context_view import ContextView
from threadline._run_turn import Turn, TurnResult
from threadline._settings import returns_coroutine
from threadline.manager import SessionManager
from threadline.runner import Hooks, Model, Runner
from threadline.session import Session

__all__ = ["AsyncRunner"]

logger = logging.getLogger("threadline.aio")


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
        read_only_scopes: tuple[str, ...] = (),
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
            read_only_scopes=read_only_scopes,
        )
        self._completing: set[asyncio.Future[TurnResult]] = set()  # tails of cancelled runs

    async def acontext(
        self,
        session_id: str | None = None,
        *,
        user_id: str | None = None,
        user_input: Any = None,
    ) -> ContextView:
        """What a run would send the model now, as ``Runner.context`` (off the event loop).

        >>> import asyncio
        >>> runner = AsyncRunner(AsyncSessionManager(":memory:"), lambda s, m, t: "ok")
        >>> asyncio.run(runner.acontext("s", user_input="hi")).input_tokens
        6
        """
        return await to_thread(
            self.target, self.context, session_id, user_id=user_id, user_input=user_input
        )

    async def arun(
        self, user_input: Any, *, session_id: str | None = None, user_id: str | None = None
    ) -> TurnResult:
        """One run, as ``Runner.run`` (module ``threadline.runner``).

        >>> import asyncio
        >>> runner = AsyncRunner(AsyncSession.create(":memory:"), lambda s, m, t: "ok")
        >>> asyncio.run(runner.arun("hi")).messages[0]["role"]
        'user'
        """
        session = await to_thread(self.target, self.session_for, session_id, user_id)
        turn = Turn(self, session, user_input)
        await to_thread(session, turn.load_state)
        if self.hooks.before_run is not None:
            await acall(self.hooks.before_run, turn.context)
        await to_thread(session, turn.start)
        if self.memory is not None and turn.needs_memory():
            plan, covered = await to_thread(session, turn.memory_input)
            result = await acall(turn.call_memory, covered)
            await to_thread(session, turn.apply_memory, plan, result)
        if turn.overflow and self._on_overflow is not None:
            await acall(self._on_overflow, list(turn.overflow))
        for _ in range(self.max_steps):
            output = await acall(self.model, turn.system, turn.messages(), turn.tools)
            calls = turn.take(output)
            if not calls:
                break
            for part in calls:
                name = turn.tool_name(part)
                answer = await to_thread(session, turn.tools.execute, name, part.get("input"))
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

    async def _complete(self, turn: Turn, session: Session) -> TurnResult:
        """``after_run``, the commit, then what follows it (``Turn.after_commit``, async
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

            result, pending = await to_thread(session, in_thread)
            if result is not None:
                return result
            await pending
        elif after is not None:
            await acall(after, turn.context)
        result = await to_thread(session, turn.commit)
        await to_thread(session, turn.after_commit)
        if self._async_compact is not None:  # the sync one ran a sync function only
            await AsyncSession._wrapping(session, self._async_compact)._after_append()
        return result
