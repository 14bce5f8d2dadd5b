"""The settings a ``Session`` and a ``SessionManager`` share, in one value object.

Both builders fill a :class:`SessionSettings`; the manager hands every session it builds its
own copy, whole. Pure: no I/O.

>>> s = SessionSettings()
>>> s.add_context(ContextConfig("memory"))
>>> s.copy().context[0].label
'memory'
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from threadline._validate import check_max_message_bytes, check_size_policy
from threadline.context import ContextConfig
from threadline.errors import CompactionError, InvalidArgumentError
from threadline.types import CompactResult

Compactor = Callable[..., CompactResult | Awaitable[CompactResult | None] | None]
"""What ``on_compaction`` takes: ``fn(messages, context) -> CompactResult | None``, such as a
:class:`~threadline.compaction.CompactFunction` built by ``create_compact_function``. The
async twins also take an ``async def`` one; a sync ``Session`` refuses it when registered."""

ErrorHandler = Callable[[BaseException], object]
"""What ``on_compaction_error`` takes: called with the exception of a failed automatic
compaction (the append itself succeeded)."""


def returns_coroutine(fn: object) -> bool:
    """Whether calling ``fn`` returns a coroutine (an ``async def`` function or ``__call__``).

    >>> async def f(): pass
    >>> returns_coroutine(f), returns_coroutine(print)
    (True, False)
    """
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable() would not give the method
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def async_compactor(fn: object) -> Callable[..., Any] | None:
    """The form of ``fn`` to await, or ``None`` when ``fn`` is a sync compaction function:
    ``fn`` itself when calling it returns a coroutine (``async def``,
    ``create_async_compact_function(...)``), its ``acompact`` when it is
    ``create_compact_function(summarize)`` around an async summariser (an ``async def``, or
    ``threadline.summarizers.openai(AsyncOpenAI(), ...)``): its plain call could only fail.

    >>> async def summarize(prompt): return "## Topic"
    >>> from threadline.compaction import create_compact_function
    >>> async_compactor(create_compact_function(summarize)).__name__
    'acompact'
    >>> async_compactor(create_compact_function(lambda prompt: "## Topic")) is None
    True
    """
    if returns_coroutine(fn):
        return fn  # type: ignore[return-value]
    acompact = getattr(fn, "acompact", None)
    if callable(acompact) and returns_coroutine(getattr(fn, "summarize", None)):
        return acompact  # type: ignore[no-any-return]
    return None


def is_async_compactor(fn: object) -> bool:
    """Whether ``fn`` is a compaction function to await (:func:`async_compactor`).

    >>> async def summarize(history, context=None): return None
    >>> is_async_compactor(summarize), is_async_compactor(lambda history: None)
    (True, False)
    """
    return async_compactor(fn) is not None


def check_token_threshold(token_threshold: object) -> int:
    """The ``compact_after`` threshold if it is a positive int, else ``InvalidArgumentError``.

    >>> check_token_threshold(1000)
    1000
    """
    if isinstance(token_threshold, bool) or not isinstance(token_threshold, int):
        raise InvalidArgumentError("compact_after needs an integer token threshold")
    if token_threshold < 1:
        raise InvalidArgumentError("compact_after needs a positive token threshold")
    return token_threshold


@dataclass
class SessionSettings:
    """Memory blocks, prompt caching and compaction of a session (or of every session of a
    manager)."""

    context: list[ContextConfig] = field(default_factory=list)
    cached_prompt: bool = False
    prompt_cache: Any = None
    compact_fn: Compactor | None = None
    compact_threshold: int | None = None
    # compact_when: above this many visible messages, summarise all but the last compact_keep.
    compact_min_messages: int | None = None
    compact_keep: int = 0
    token_counter: Callable[..., int] | None = None
    error_handler: ErrorHandler | None = None
    # None: the store's own (connect(size_policy=..., max_message_bytes=...)).
    size_policy: str | None = None
    max_message_bytes: int | None = None

    def limit_size(self, size_policy: str | None, max_message_bytes: int | None) -> None:
        """Override the store's size policy and per-message cap (``None`` keeps the store's)."""
        if size_policy is not None:
            self.size_policy = check_size_policy("size_policy", size_policy)
        if max_message_bytes is not None:
            self.max_message_bytes = check_max_message_bytes("max_message_bytes", max_message_bytes)

    def use_compactor(self, fn: Compactor) -> None:
        """Register the compaction function; an async one belongs on the async session."""
        if is_async_compactor(fn):
            raise CompactionError(
                "this compaction function is async (an async def, an async summariser, or "
                "create_async_compact_function): register it on threadline.aio.AsyncSession"
            )
        self.compact_fn = fn

    def copy(self) -> SessionSettings:
        """An independent copy (the block list is copied; configs are immutable)."""
        return replace(self, context=list(self.context))

    def add_context(self, config: ContextConfig) -> None:
        """Register a block; a label already registered raises ``InvalidArgumentError``."""
        if any(c.label == config.label for c in self.context):
            raise InvalidArgumentError(f"context block {config.label!r} is already registered")
        self.context.append(config)

    def remove_context(self, label: str) -> bool:
        """Unregister a block; ``False`` if no block had that label."""
        before = len(self.context)
        self.context = [c for c in self.context if c.label != label]
        return len(self.context) != before

    def cache_prompt(self, provider: Any = None) -> None:
        """Persist the frozen prompt (in the store, or in a writable ``provider``)."""
        self.cached_prompt, self.prompt_cache = True, provider

    def compact_when(self, min_messages: int, keep: int) -> None:
        """Compact automatically above ``min_messages`` visible messages, keeping ``keep``.

        ``keep`` must be below ``min_messages`` (or every append would compact again).
        """
        for name, value in (("min_messages", min_messages), ("keep", keep)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"compact_when: {name} must be a non-negative integer")
        if keep >= min_messages:
            raise InvalidArgumentError(
                f"compact_when: keep ({keep}) must be below min_messages ({min_messages})"
            )
        self.compact_min_messages, self.compact_keep = min_messages, keep

    def compact_after(self, token_threshold: int, token_counter: Callable[..., int] | None) -> None:
        """Compact automatically above ``token_threshold`` (checked) tokens."""
        self.compact_threshold = check_token_threshold(token_threshold)
        self.token_counter = token_counter
