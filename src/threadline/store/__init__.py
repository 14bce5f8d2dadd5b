"""Storage backends and ``connect(url)``.

>>> import threadline
>>> with threadline.connect(":memory:") as store:
...     store.count_sessions("default")
0
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from threadline.errors import InvalidArgumentError
from threadline.store._lazy import LazyStore
from threadline.store._sql.dump_check import check_dump
from threadline.store.base import (
    UNSET,
    ApiKey,
    AppDump,
    Entry,
    OwnerKind,
    RecentPath,
    SessionDump,
    SkillLoad,
    Store,
    StoredArtifact,
    StoredKey,
    StoredProfile,
    TreeNode,
)
from threadline.store.postgres import PostgresStore
from threadline.store.postgres._replicas import check_replica_options
from threadline.store.sqlite import SQLiteStore
from threadline.store.sqlite._paths import is_memory

__all__ = [
    "UNSET",
    "ApiKey",
    "AppDump",
    "Entry",
    "LazyStore",
    "OwnerKind",
    "PostgresStore",
    "RecentPath",
    "SQLiteStore",
    "SessionDump",
    "SkillLoad",
    "Store",
    "StoredArtifact",
    "StoredKey",
    "StoredProfile",
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
    replicas: Sequence[str] | None = None,
    max_replica_lag: float | None = None,
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
    (``?size_policy=error&max_message_bytes=1000000``); docs/attachments.md. A bare path
    takes the same ``?option=`` suffix as a ``sqlite://`` URL (``agent.db?synchronous=full``;
    a ``file:`` URI keeps SQLite's own). An unknown, repeated or invalid option, or an
    argument of the wrong type, raises ``InvalidArgumentError`` naming it, before anything is
    opened or created.

    ``replicas`` (PostgreSQL only; also repeated ``?replica=`` URL parameters, URL-encoded)
    lists streaming standbys that serve reads: searches, listings and history reads of the
    store go to a replica that has replayed this store's own writes and lags the primary by
    at most ``max_replica_lag`` seconds (default 5, measured by WAL position), else to the
    primary; a replica that is down is skipped. Writes, API keys, ownership, ``generation=``
    checks and event read-back stay on the primary (docs/postgres.md, "Read replicas").

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
        replicas=replicas,
        max_replica_lag=max_replica_lag,
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
    **options: Any,
) -> Callable[[], Store]:
    """What ``connect`` opens, checked but not opened yet (no I/O): call it to open. Every
    bad option is an ``InvalidArgumentError`` naming it (amendment 14). The store opened
    remembers which size options were given (``size_options``): they win over a profile's
    size policy (api.md clarification 27)."""
    build, given = _checked_opener(url, **options)

    def open_store() -> Store:
        store = build()
        store.size_options = given  # type: ignore[attr-defined]
        return store

    return open_store


def _checked_opener(
    url: str | os.PathLike[str],
    *,
    clock: Callable[[], datetime] | None = None,
    read_only: bool = False,
    size_policy: str | None = None,
    max_message_bytes: int | None = None,
    replicas: Sequence[str] | None = None,
    max_replica_lag: float | None = None,
) -> tuple[Callable[[], Store], frozenset[str]]:
    text = _url_text(url)
    if not isinstance(read_only, bool):
        raise InvalidArgumentError(
            f"read_only must be True or False, got {type(read_only).__name__}"
        )
    if clock is not None and not callable(clock):
        raise InvalidArgumentError(f"clock must be a function, got {type(clock).__name__}")
    scheme = _scheme(text)
    if scheme not in ("postgresql", "postgres") and (
        replicas is not None or max_replica_lag is not None
    ):
        raise InvalidArgumentError("replicas and max_replica_lag are for PostgreSQL stores")
    # A bare path takes the options of a sqlite:// URL after "?" (a file: URI keeps SQLite's).
    bare_options = scheme is None and "?" in text and not text.startswith("file:")
    if scheme is None and not bare_options:
        sizes = _size_options({}, size_policy, max_message_bytes)
        sqlite = partial(SQLiteStore, text, clock=clock, **_read_only(read_only, text), **sizes)
        return sqlite, frozenset(sizes)
    text, from_url = _take_size_options(text)
    sizes = _size_options(from_url, size_policy, max_message_bytes)
    if scheme in ("postgresql", "postgres"):
        if read_only:
            raise InvalidArgumentError(
                "read_only=True is for SQLite stores; for PostgreSQL connect as a read-only "
                "role or to a standby (e.g. ?target_session_attrs=read-only)"
            )
        check_replica_options(replicas, max_replica_lag)  # bad ones fail before any I/O
        postgres = partial(
            PostgresStore,
            text,
            clock=clock,
            replicas=replicas,
            max_replica_lag=max_replica_lag,
            **sizes,
        )
        return postgres, frozenset(sizes)
    if scheme == "sqlite" or bare_options:
        path, options = _parse_sqlite_url(text) if scheme else _parse_bare_path(text)
        if read_only:
            if options.get("read_only") is False:
                raise InvalidArgumentError(f"read_only=True contradicts mode=rw in {text!r}")
            options.update(_read_only(read_only, path))
        return partial(SQLiteStore, path, clock=clock, **options, **sizes), frozenset(sizes)
    raise InvalidArgumentError(f"unsupported store URL scheme {scheme!r}; supported: {SUPPORTED}")


def _url_text(url: object) -> str:
    """``url`` as text, or ``InvalidArgumentError`` naming what is wrong with it."""
    if not isinstance(url, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"url must be a store URL or path (str or os.PathLike), got {type(url).__name__}"
        )
    text = os.fspath(url)
    if not isinstance(text, str):
        raise InvalidArgumentError("url must be a text path, not bytes")
    if not text.strip():
        raise InvalidArgumentError(f"connect() needs a store URL or path; supported: {SUPPORTED}")
    if "\x00" in text:
        raise InvalidArgumentError("url must not contain a NUL character")
    try:
        text.encode("utf-8")  # both drivers take UTF-8: a lone surrogate cannot reach them
    except UnicodeEncodeError:
        raise InvalidArgumentError("url must be UTF-8 text, not a lone surrogate") from None
    return text


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
    # Only ours are checked for repeats: the others are libpq's (or SQLite's, checked later).
    pairs = _query_pairs(parts.query, only=_SIZE_KEYS)
    found = {k: v for k, v in pairs if k in _SIZE_KEYS}
    if not found:
        return url, {}
    # The other options are kept byte for byte (libpq reads "options=-csearch_path%3Dx" as
    # written, not decoded); rebuilt by hand: urlunsplit turns sqlite:////a.db into sqlite://a.db.
    kept = [p for p in parts.query.split("&") if unquote(p.partition("=")[0]) not in _SIZE_KEYS]
    rest = "&".join(kept)
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
            raise InvalidArgumentError(
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


def _query_pairs(query: str, only: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The ``key=value`` pairs of a URL query; a key given twice (one of ``only`` when
    given) is refused: which one was meant?"""
    pairs = parse_qsl(query, keep_blank_values=True)
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen and (only is None or key in only):
            raise InvalidArgumentError(f"store URL option {key!r} is given twice")
        seen.add(key)
    return pairs


def _parse_sqlite_url(url: str) -> tuple[str, dict[str, Any]]:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise InvalidArgumentError(f"sqlite URLs take no host ({url!r}); use sqlite:///relative.db")
    path = unquote(parts.path)
    # urlsplit keeps the slash after the (empty) host: "/rel.db" -> "rel.db", "//abs" -> "/abs".
    path = path[1:] if path.startswith("/") else path
    if path in ("", ":memory:"):
        path = ":memory:"
    return path, _sqlite_options(parts.query)


def _parse_bare_path(text: str) -> tuple[str, dict[str, Any]]:
    """``/data/agent.db?synchronous=full``: the path as written, its options as a URL's."""
    path, _, query = text.partition("?")
    if not path.strip():
        raise InvalidArgumentError("a store path needs a file name before its '?' options")
    return path, _sqlite_options(query)


def _sqlite_options(query: str) -> dict[str, Any]:
    """The SQLiteStore options of a URL query (size options already taken out)."""
    options: dict[str, Any] = {}
    for key, value in _query_pairs(query):
        if key == "synchronous" and value.lower() in ("normal", "full"):
            options["synchronous"] = value
        elif key in ("busy_timeout", "timeout") and _seconds(value) is not None:
            options["busy_timeout"] = _seconds(value)
        elif key == "mode" and value in ("ro", "rw"):
            options["read_only"] = value == "ro"
        elif key in _SQLITE_TAKES:
            raise InvalidArgumentError(f"{key} must be {_SQLITE_TAKES[key]}, got {value!r}")
        else:
            raise InvalidArgumentError(
                f"unknown sqlite URL option {key}={value!r}; known: synchronous, busy_timeout, "
                "mode, size_policy, max_message_bytes"
            )
    return options


_SQLITE_TAKES = {
    "synchronous": "'normal' or 'full'",
    "busy_timeout": "a number of seconds >= 0",
    "timeout": "a number of seconds >= 0",
    "mode": "'ro' or 'rw'",
}


def _seconds(value: str) -> float | None:
    """A non-negative, finite number of seconds, else ``None``."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 <= seconds < float("inf") else None
