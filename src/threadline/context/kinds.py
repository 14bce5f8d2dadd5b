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

import inspect
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
    """Read-only provider: ``get()`` returns the block content, or ``None`` for empty."""

    def get(self) -> str | None: ...


@runtime_checkable
class WritableContextProvider(Protocol):
    """Writable provider: the model may replace its content through ``set_context``."""

    def get(self) -> str | None: ...

    def set(self, content: str) -> None: ...


@runtime_checkable
class SkillProvider(Protocol):
    """Keyed documents loaded on demand; ``get()`` returns a listing (``- key: description``).

    ``set(key, content, description=None)`` is optional and makes the block writable.
    """

    def get(self) -> str | None: ...

    def load(self, key: str) -> str | None: ...


@runtime_checkable
class SearchProvider(Protocol):
    """Full-text searchable entries; ``get()`` returns a short summary.

    ``set(key, content)`` is optional and makes the block writable.
    """

    def get(self) -> str | None: ...

    def search(self, query: str) -> str | None: ...


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


def call_provider(provider: object, method: str, *args: Any) -> Any:
    """Call ``provider.method(*args)``, refusing async providers with a clear error.

    >>> call_provider("abc", "upper")
    'ABC'
    """
    result = getattr(provider, method)(*args)
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # never awaited: close it so Python does not warn about it
        raise ThreadlineError(
            f"{type(provider).__name__}.{method}() returned an awaitable; async context "
            "providers are not supported yet, use a provider with synchronous methods"
        )
    return result
