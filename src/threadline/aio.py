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

from threadline._async_manager import AsyncSessionManager
from threadline._async_runner import AsyncRunner
from threadline._async_session import AsyncSession, AsyncStateView, AsyncToolset

__all__ = [
    "AsyncRunner",
    "AsyncSession",
    "AsyncSessionManager",
    "AsyncStateView",
    "AsyncToolset",
]
