"""How the async twins run their sync twins: off the event loop, in worker threads.

:func:`to_thread` runs one sync call in a worker thread (a thread of its own when the call may
await an async context provider on the loop); :func:`off` makes the async twin of a sync
method; :func:`owning` builds a sync twin over a store URL opened lazily; :func:`acall`
awaits an async function or runs a sync one off the loop. The async twins themselves live
beside their sync classes (``_async_session``, ``_async_manager``, ``_async_runner``);
``threadline.aio`` is their public path.

>>> import asyncio
>>> asyncio.run(to_thread(None, sum, [1, 2, 3]))
6
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, ParamSpec, TypeVar

from threadline._settings import returns_coroutine
from threadline.context.kinds import ASYNC_PROVIDER_LOOP
from threadline.context.providers import (
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.manager import SessionManager
from threadline.session import Session
from threadline.store import _lazily

__all__ = ["acall", "off", "owning", "to_thread"]

P = ParamSpec("P")
R = TypeVar("R")


T = TypeVar("T", Session, SessionManager)

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


async def to_thread(owner: object, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
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


def owning(make: Callable[[Any], T], store: Any) -> T:
    """The sync twin built by ``make`` over ``store``; a URL is opened at the first storage
    call (in a worker thread: never on the event loop) and owned (closed) by the twin, as
    ``Session(url)`` owns what it opens.

    >>> from threadline import Session
    >>> twin = owning(lambda store: Session(store, session_id="s1"), ":memory:")
    >>> twin.store.opened, twin._owns_store
    (False, True)
    """
    source, owned = _lazily(store)
    twin = make(source)
    twin._owns_store = owned
    return twin


def off(
    sync: type, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The async twin of ``method``, a method of the sync class ``sync``: ``await
    obj.<name>(...)`` runs ``obj._sync.<name>`` in a worker thread. It has the sync method's
    signature, for type checkers (the ParamSpec) and for ``inspect.signature``/editors
    (``__signature__``).

    >>> import inspect
    >>> from threadline import Session
    >>> twin = off(Session, Session.get_message)
    >>> twin.__qualname__, inspect.signature(twin) == inspect.signature(Session.get_message)
    ('AsyncSession.get_message', True)
    """
    name = method.__name__
    owner = sync.__name__

    async def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        twin = self._sync
        return await to_thread(twin, getattr(twin, name), *args, **kwargs)

    call.__name__ = name
    call.__qualname__ = f"Async{owner}.{name}"
    call.__doc__ = f"""Async ``{owner}.{name}``: the same parameters, run off the loop.

    >>> import inspect
    >>> from threadline import {owner}
    >>> from threadline.aio import Async{owner}
    >>> a, b = Async{owner}.{name}, {owner}.{name}
    >>> inspect.signature(a) == inspect.signature(b)
    True
    """
    call.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return call


async def acall(fn: Callable[..., Any], *args: Any) -> Any:
    """Await an async function; run a sync one in a worker thread (it may block on I/O)."""
    if returns_coroutine(fn):
        return await fn(*args)
    result = await to_thread(None, fn, *args)
    return await result if inspect.isawaitable(result) else result
