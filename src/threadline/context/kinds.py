"""Context provider kinds, recognised by duck typing.

A provider is any object with a ``get()`` method; which other methods it has decides its kind:

========== ======================================================= =========================
kind       methods                                                 tools it enables
========== ======================================================= =========================
readonly   ``get()``                                               —
writable   ``get()``, ``set(content)``                             ``set_context``
skill      ``get()``, ``load(key)``, optional ``set(key, content,  ``load_context``,
           description=None)``                                     ``unload_context``
search     ``get()``, ``search(query)``, optional ``set(key,       ``search_context``
           content)``
========== ======================================================= =========================

Any of them may define ``init(label)``, called once with the block label before the first
``get()``. A plain string or a zero-argument callable is accepted as a read-only provider.

>>> class Notes:
...     def get(self): return "n"
...     def set(self, content): pass
>>> provider_kind(Notes())
'writable'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from contextvars import ContextVar
from typing import Any, Literal, Protocol, runtime_checkable

from threadline.errors import ThreadlineError

__all__ = [
    "ContextProvider",
    "ProviderKind",
    "SearchProvider",
    "SkillProvider",
    "WritableContextProvider",
    "call_provider",
    "has_method",
    "is_keyed_kind",
    "provider_kind",
]

ProviderKind = Literal["readonly", "writable", "skill", "search"]


@runtime_checkable
class ContextProvider(Protocol):
    """Read-only provider: ``get()`` returns the block content, or ``None`` for empty.

    >>> class Today:
    ...     def get(self): return "Today is Monday."
    >>> isinstance(Today(), ContextProvider), provider_kind(Today())
    (True, 'readonly')
    """

    def get(self) -> str | None:
        """The block content, read again on every (re)load; ``None`` means empty.

        >>> from threadline.context.providers import StaticContext
        >>> StaticContext("Be brief.").get()
        'Be brief.'
        """
        ...


@runtime_checkable
class WritableContextProvider(Protocol):
    """Writable provider: the model may replace its content through ``set_context``.

    >>> class Notes:
    ...     text = None
    ...     def get(self): return self.text
    ...     def set(self, content): self.text = content
    >>> isinstance(Notes(), WritableContextProvider), provider_kind(Notes())
    (True, 'writable')
    """

    def get(self) -> str | None:
        """The current content, or ``None`` if nothing was written yet.

        >>> import threadline
        >>> from threadline.context.providers import StoreContextProvider
        >>> StoreContextProvider(threadline.connect(":memory:"), label="memory").get() is None
        True
        """
        ...

    def set(self, content: str) -> None:
        """Replace the whole content (size limits are checked before this is called).

        >>> import threadline
        >>> from threadline.context.providers import StoreContextProvider
        >>> p = StoreContextProvider(threadline.connect(":memory:"), label="memory")
        >>> p.set("likes tea"); p.get()
        'likes tea'
        """
        ...


@runtime_checkable
class SkillProvider(Protocol):
    """Keyed documents loaded on demand; ``get()`` returns a listing (``- key: description``).

    ``set(key, content, description=None)`` is optional and makes the block writable.

    >>> class Voices:
    ...     docs = {"pirate": "Talk like a pirate."}
    ...     def get(self): return "\\n".join(f"- {key}" for key in self.docs)
    ...     def load(self, key): return self.docs.get(key)
    >>> isinstance(Voices(), SkillProvider), provider_kind(Voices()), Voices().get()
    (True, 'skill', '- pirate')
    """

    def get(self) -> str | None:
        """The listing shown in the prompt, one ``- key: description`` line per document.

        >>> import threadline
        >>> from threadline.context.providers import StoreSkillProvider
        >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
        >>> p.set("pirate", "Talk like a pirate.", "Pirate voice"); p.get()
        '- pirate: Pirate voice'
        """
        ...

    def load(self, key: str) -> str | None:
        """The full document ``key``, or ``None`` if there is none.

        >>> import threadline
        >>> from threadline.context.providers import StoreSkillProvider
        >>> p = StoreSkillProvider(threadline.connect(":memory:"), label="skills")
        >>> p.set("pirate", "Talk like a pirate."); p.load("pirate"), p.load("ninja")
        ('Talk like a pirate.', None)
        """
        ...


@runtime_checkable
class SearchProvider(Protocol):
    """Full-text searchable entries; ``get()`` returns a short summary.

    ``set(key, content)`` is optional and makes the block writable.

    >>> class Faq:
    ...     entries = {"tea": "We serve green tea."}
    ...     def get(self): return f"{len(self.entries)} entries"
    ...     def search(self, query): return self.entries.get(query)
    >>> isinstance(Faq(), SearchProvider), provider_kind(Faq()), Faq().search("tea")
    (True, 'search', 'We serve green tea.')
    """

    def get(self) -> str | None:
        """A short summary for the prompt (the entries themselves are found by ``search``).

        >>> import threadline
        >>> from threadline.context.providers import StoreSearchProvider
        >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
        >>> p.set("tea", "The user drinks green tea."); p.get()
        '1 entries indexed.'
        """
        ...

    def search(self, query: str) -> str | None:
        """The entries matching ``query`` as text for the model, or ``None`` if none match.

        >>> import threadline
        >>> from threadline.context.providers import StoreSearchProvider
        >>> p = StoreSearchProvider(threadline.connect(":memory:"), label="notes")
        >>> p.set("tea", "The user drinks green tea."); print(p.search("green tea"))
        [tea]
        The user drinks green tea.
        """
        ...


def has_method(obj: object, name: str) -> bool:
    """True if ``obj`` has a callable attribute ``name``.

    >>> has_method("text", "upper"), has_method("text", "nope")
    (True, False)
    """
    return callable(getattr(obj, name, None))


def provider_kind(provider: object) -> ProviderKind:
    """Classify a provider: search if it has ``search``, else skill if ``load``, else
    writable if ``set``, else readonly.

    >>> provider_kind("plain text")
    'readonly'
    """
    if has_method(provider, "search"):
        return "search"
    if has_method(provider, "load"):
        return "skill"
    if has_method(provider, "set") and not isinstance(provider, str):
        return "writable"
    return "readonly"


def is_keyed_kind(kind: ProviderKind) -> bool:
    """Skill and search blocks hold keyed entries rather than one text.

    >>> is_keyed_kind("skill"), is_keyed_kind("writable")
    (True, False)
    """
    return kind in ("skill", "search")


#: The event loop of the ``threadline.aio`` call running in this thread (set by the async API
#: for a call that may meet an async provider, which it runs in a thread of its own — never in
#: the loop's default executor, which the provider's coroutine may need; ``None`` elsewhere).
#: An async provider's coroutine is run on it while this thread waits: the loop is free,
#: awaiting that very call.
ASYNC_PROVIDER_LOOP: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar(
    "threadline_async_provider_loop", default=None
)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _await_on(loop: asyncio.AbstractEventLoop, awaitable: Any, what: str) -> Any:
    """The result of ``awaitable`` run on ``loop``, waited for in this thread; an error, not a
    thread blocked for ever, if the loop closes before it runs it."""
    try:
        future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), loop)
    except RuntimeError:  # closed since it was checked
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise ThreadlineError(f"{what}: the event loop closed before it could be awaited") from None
    while not concurrent.futures.wait([future], timeout=0.5).done:
        if loop.is_closed():  # its callback may never run now
            future.cancel()
            raise ThreadlineError(f"{what}: the event loop closed while it was awaited")
    return future.result()


def call_provider(provider: object, method: str, *args: Any) -> Any:
    """Call ``provider.method(*args)``. An async method is awaited on the event loop when the
    call comes from ``threadline.aio`` (which runs storage in worker threads); the sync
    ``Session`` refuses it with a clear error.

    >>> call_provider("abc", "upper")
    'ABC'
    """
    result = getattr(provider, method)(*args)
    if inspect.isawaitable(result):
        loop = ASYNC_PROVIDER_LOOP.get()
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is not loop:  # a worker thread: the loop awaits us, it is free
                return _await_on(loop, result, f"{type(provider).__name__}.{method}()")
        if inspect.iscoroutine(result):
            result.close()  # never awaited: close it so Python does not warn about it
        raise ThreadlineError(
            f"{type(provider).__name__}.{method}() returned an awaitable; async context "
            "providers work with threadline.aio (AsyncSession, AsyncSessionManager); the sync "
            "Session needs a provider with synchronous methods"
        )
    return result
