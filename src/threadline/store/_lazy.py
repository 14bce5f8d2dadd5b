"""A store opened at its first use: :class:`LazyStore` (``threadline.store.connect_lazily``).

Opening a store is I/O (a SQLite file and its schema migration; a PostgreSQL pool's
connections and migration). The async API must not do I/O on the event loop, yet its
constructors are plain: they take a URL as a ``LazyStore`` and the first storage call — already
in a worker thread — opens it. Every method of the :class:`~threadline.store.Store` protocol is
declared on the class (so ``isinstance(lazy, Store)`` and duck-typing checks open nothing) and
forwards to the opened store; other attributes (``path``, ``dsn``) open it on access.

>>> from threadline.store import connect
>>> lazy = LazyStore(lambda: connect(":memory:"), ":memory:")
>>> lazy.opened, lazy.count_sessions("app"), lazy.opened
(False, 0, True)
>>> lazy.close()
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable
from typing import Any

from threadline.errors import StoreError, ThreadlineError
from threadline.store.base import Store

__all__ = ["LazyStore"]


class LazyStore:
    """A :class:`~threadline.store.Store` that ``opener()`` opens at the first use (module
    docstring). Thread-safe: concurrent first uses open it once. ``url`` is what it opens (a
    store URL or path); its ``repr`` shows it with any password hidden.

    >>> from threadline.store import connect
    >>> LazyStore(lambda: connect(":memory:"), ":memory:")
    LazyStore(':memory:', not opened)
    >>> LazyStore(lambda: connect(":memory:"), "postgresql://app:s3cret@db/prod")
    LazyStore('postgresql://app:***@db/prod', not opened)
    """

    def __init__(self, opener: Callable[[], Store], url: str) -> None:
        self._opener = opener
        self._url = url
        self._store: Store | None = None
        self._closed = False
        self._lock = threading.Lock()

    @property
    def opened(self) -> bool:
        """Whether the store has been opened.

        >>> from threadline.store import connect
        >>> LazyStore(lambda: connect(":memory:"), ":memory:").opened
        False
        """
        return self._store is not None

    def open(self) -> Store:
        """The opened store (opening it now if needed); ``StoreError`` once closed.

        >>> from threadline.store import connect
        >>> LazyStore(lambda: connect(":memory:"), ":memory:").open().count_sessions("a")
        0
        """
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._store is None:
                if self._closed:
                    raise StoreError("open", ThreadlineError("the store is closed"))
                self._store = self._opener()
            return self._store

    def close(self) -> None:
        """Close the store if it was opened; a later use raises ``StoreError``. Idempotent.

        >>> from threadline.store import connect
        >>> lazy = LazyStore(lambda: connect(":memory:"), ":memory:")
        >>> lazy.close(); lazy.close()
        """
        with self._lock:
            self._closed = True
            store = self._store
        if store is not None:
            store.close()

    def __enter__(self) -> LazyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle probes: not the store's
            raise AttributeError(name)
        return getattr(self.open(), name)

    def __repr__(self) -> str:
        state = "opened" if self._store is not None else "not opened"
        return f"LazyStore({redact_password(self._url)!r}, {state})"


# The password of a URL's user:password@ part (a DSN written as key=value has password=...).
_URL_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^/?#@:]*):[^/?#@]*@")
_DSN_PASSWORD = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")


def redact_password(url: str) -> str:
    """``url`` with its password (``user:password@`` or ``password=...``) shown as ``***``.

    >>> redact_password("postgresql://app:s3cret@db.example:5432/prod")
    'postgresql://app:***@db.example:5432/prod'
    >>> redact_password("postgresql:///prod?password=s3cret&sslmode=require")
    'postgresql:///prod?password=***&sslmode=require'
    >>> redact_password("sqlite:///agent.db")
    'sqlite:///agent.db'
    """
    url = _URL_PASSWORD.sub(r"\1:***@", url, count=1)
    return _DSN_PASSWORD.sub(lambda m: m.group(1) + "***", url)


def _forwarder(name: str) -> Callable[..., Any]:
    def forward(self: LazyStore, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.open(), name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"``Store.{name}`` on the opened store."
    # The contract's signature: callers see which keywords it takes (``generation=``).
    forward.__signature__ = inspect.signature(getattr(Store, name))  # type: ignore[attr-defined]
    return forward


for _name in dir(Store):
    if (
        not _name.startswith("_")
        and callable(getattr(Store, _name))
        and _name not in vars(LazyStore)
    ):
        setattr(LazyStore, _name, _forwarder(_name))
