"""Storage backends and ``connect(url)``.

>>> import threadline
>>> with threadline.connect(":memory:") as store:
...     store.count_sessions("default")
0
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from threadline.errors import InvalidArgumentError
from threadline.store._dump_check import check_dump
from threadline.store._lazy import LazyStore
from threadline.store._sqlite_paths import is_memory
from threadline.store.base import (
    UNSET,
    ApiKey,
    Entry,
    OwnerKind,
    RecentPath,
    SessionDump,
    SkillLoad,
    Store,
    TreeNode,
)
from threadline.store.postgres import PostgresStore
from threadline.store.sqlite import SQLiteStore

__all__ = [
    "UNSET",
    "ApiKey",
    "Entry",
    "LazyStore",
    "OwnerKind",
    "PostgresStore",
    "RecentPath",
    "SQLiteStore",
    "SessionDump",
    "SkillLoad",
    "Store",
    "TreeNode",
    "check_dump",
    "connect",
    "connect_lazily",
]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
SUPPORTED = (
    "sqlite:///relative.db, sqlite:////absolute.db, a bare file path, ':memory:', postgresql://..."
)


def connect(
    url: str | os.PathLike[str],
    *,
    clock: Callable[[], datetime] | None = None,
    read_only: bool = False,
    size_policy: str | None = None,
    max_message_bytes: int | None = None,
) -> Store:
    """Open a store from a URL or path.

    ``sqlite:///rel.db`` is relative and ``sqlite:////abs.db`` absolute (SQLAlchemy
    convention); a bare path or ``:memory:`` opens SQLite; ``postgresql://`` (alias
    ``postgres://``) opens PostgreSQL (needs the ``threadline[postgres]`` extra).
    ``clock`` (a function returning an aware datetime) replaces the system clock for the times
    the store records (tests use it instead of sleeping). ``?synchronous=full`` on a SQLite
    URL fsyncs every commit.

    ``read_only=True`` (or ``?mode=ro`` on a SQLite URL) opens an existing SQLite file for
    reading: reads and searches work, writes raise ``StoreError``, and the database file is
    not written (its journal mode is not changed; a rollback-journal file gets no ``-wal``;
    on a WAL file SQLite itself may create the ``-wal``/``-shm`` files it reads through). It is
    SQLite-only: with a PostgreSQL URL, or with ``:memory:`` or ``?mode=rw``, it raises
    ``InvalidArgumentError`` (a ``ValueError``); use a read-only database role or a standby
    for PostgreSQL.

    ``size_policy`` decides what happens to a message too large for its row: ``"attach"``
    (default: long strings stored out of row, deduplicated, returned as written),
    ``"truncate"`` (shrunk by ``enforce_row_size``) or ``"error"``
    (``MessageTooLargeError``); over ``max_message_bytes`` (default 64 MiB) every policy
    raises ``MessageTooLargeError``. Both may also be URL query parameters
    (``?size_policy=error&max_message_bytes=1000000``); docs/attachments.md.

    >>> store = connect(":memory:")
    >>> isinstance(store, SQLiteStore)
    True
    >>> store.close()
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "agent.db")
    ...     connect(path).close()  # create the file
    ...     with connect(path, read_only=True) as reader:
    ...         print(reader.count_sessions("default"))
    0
    >>> connect("postgresql://localhost/agents", read_only=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: read_only=True is for SQLite stores; ...
    """
    return _opener(
        url,
        clock=clock,
        read_only=read_only,
        size_policy=size_policy,
        max_message_bytes=max_message_bytes,
    )()


def connect_lazily(url: str | os.PathLike[str]) -> LazyStore:
    """A store that ``connect(url)`` opens at its first use, in the thread that uses it
    (a :class:`LazyStore`, a ``Store``; its ``repr`` hides a password in the URL): the
    URL is checked now (a bad one raises here, as with ``connect``), nothing is opened. The
    async API (``threadline.aio``) takes URLs this way, so opening a database — connections,
    schema migration — runs in a worker thread like every other storage call, never on the
    event loop.

    >>> store = connect_lazily(":memory:")
    >>> store.opened
    False
    >>> store.count_sessions("default"), store.opened
    (0, True)
    >>> store.close()
    """
    return LazyStore(_opener(url), os.fspath(url))


def _lazily(store: Any) -> tuple[Any, bool]:
    """``store`` for an object built off the event loop's thread (the async API, the
    framework adapters), and whether that object owns it: a URL or path becomes a
    :class:`LazyStore` it owns (opened by the first storage call, in a worker thread); anything
    else (a ``Store``, a ``SessionProvider``) is used as given, not owned.

    >>> _lazily(":memory:")
    (LazyStore(':memory:', not opened), True)
    """
    if isinstance(store, (str, os.PathLike)):
        return connect_lazily(store), True
    return store, False


def _opener(
    url: str | os.PathLike[str],
    *,
    clock: Callable[[], datetime] | None = None,
    read_only: bool = False,
    size_policy: str | None = None,
    max_message_bytes: int | None = None,
) -> Callable[[], Store]:
    """What ``connect`` opens, checked but not opened yet (no I/O): call it to open."""
    text = os.fspath(url)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"connect() needs a store URL or path; supported: {SUPPORTED}")
    if not isinstance(read_only, bool):
        raise InvalidArgumentError(
            f"read_only must be True or False, got {type(read_only).__name__}"
        )
    scheme = _scheme(text)
    if scheme is None:
        sizes = _size_options({}, size_policy, max_message_bytes)
        return partial(SQLiteStore, text, clock=clock, **_read_only(read_only, text), **sizes)
    text, from_url = _take_size_options(text)
    sizes = _size_options(from_url, size_policy, max_message_bytes)
    if scheme in ("postgresql", "postgres"):
        if read_only:
            raise InvalidArgumentError(
                "read_only=True is for SQLite stores; for PostgreSQL connect as a read-only "
                "role or to a standby (e.g. ?target_session_attrs=read-only)"
            )
        return partial(PostgresStore, text, clock=clock, **sizes)
    if scheme == "sqlite":
        path, options = _parse_sqlite_url(text)
        if read_only:
            if options.get("read_only") is False:
                raise InvalidArgumentError(f"read_only=True contradicts mode=rw in {text!r}")
            options.update(_read_only(read_only, path))
        return partial(SQLiteStore, path, clock=clock, **options, **sizes)
    raise ValueError(f"unsupported store URL scheme {scheme!r}; supported: {SUPPORTED}")


def _scheme(url: str) -> str | None:
    """The lower-cased scheme of a store URL; ``None`` for a bare path (a SQLite file)."""
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def _is_sqlite(store: str | os.PathLike[str] | Store) -> bool:
    """Whether ``store`` is a SQLite store, or a URL or :class:`LazyStore` that opens one —
    without opening anything (a bad URL counts as SQLite: opening it raises anyway).

    >>> _is_sqlite("agent.db"), _is_sqlite("sqlite:///a.db"), _is_sqlite("postgres://db/x")
    (True, True, False)
    >>> _is_sqlite(connect_lazily("postgresql://app:pw@db/prod"))
    False
    """
    if isinstance(store, LazyStore):
        opened = store._store
        if opened is not None:
            return isinstance(opened, SQLiteStore)
        store = store._url
    if isinstance(store, (str, os.PathLike)):
        return _scheme(os.fspath(store)) not in ("postgresql", "postgres")
    return isinstance(store, SQLiteStore)


_SIZE_KEYS = ("size_policy", "max_message_bytes")


def _take_size_options(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its size options, and those options (they apply to every backend)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    found = {k: v for k, v in pairs if k in _SIZE_KEYS}
    if not found:
        return url, {}
    rest = "&".join(f"{k}={v}" if v else k for k, v in pairs if k not in _SIZE_KEYS)
    # Rebuilt by hand: urlunsplit would turn sqlite:////abs.db into sqlite://abs.db.
    return url.split("?", 1)[0] + (f"?{rest}" if rest else ""), found


def _size_options(
    from_url: dict[str, str], size_policy: str | None, max_message_bytes: int | None
) -> dict[str, Any]:
    """Keyword arguments win over URL parameters; unset ones keep the backend's default."""
    options: dict[str, Any] = {}
    if "size_policy" in from_url:
        options["size_policy"] = from_url["size_policy"]
    if "max_message_bytes" in from_url:
        try:
            options["max_message_bytes"] = int(from_url["max_message_bytes"])
        except ValueError:
            raise ValueError(
                f"max_message_bytes must be an integer, got {from_url['max_message_bytes']!r}"
            ) from None
    if size_policy is not None:
        options["size_policy"] = size_policy
    if max_message_bytes is not None:
        options["max_message_bytes"] = max_message_bytes
    return options


def _read_only(read_only: bool, path: str) -> dict[str, Any]:
    """The ``read_only`` option for ``SQLiteStore``, checked (an in-memory store has no file)."""
    if not read_only:
        return {}
    if is_memory(path):
        raise InvalidArgumentError(f"an in-memory store cannot be opened read-only ({path!r})")
    return {"read_only": True}


def _parse_sqlite_url(url: str) -> tuple[str, dict[str, Any]]:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"sqlite URLs take no host ({url!r}); use sqlite:///relative.db")
    path = unquote(parts.path)
    # urlsplit keeps the slash after the (empty) host: "/rel.db" -> "rel.db", "//abs" -> "/abs".
    path = path[1:] if path.startswith("/") else path
    if path in ("", ":memory:"):
        path = ":memory:"
    options: dict[str, Any] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "synchronous":
            options["synchronous"] = value
        elif key in ("busy_timeout", "timeout"):
            options["busy_timeout"] = float(value)
        elif key == "mode" and value in ("ro", "rw"):
            options["read_only"] = value == "ro"
        else:
            raise ValueError(
                f"unknown sqlite URL option {key}={value!r}; known: synchronous, busy_timeout, "
                "mode=ro"
            )
    return path, options
