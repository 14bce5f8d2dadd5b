"""The embedded SQLite backend (standard library ``sqlite3``, WAL, FTS5).

One connection per store, shared by threads behind a lock; every public write is one
``BEGIN IMMEDIATE`` transaction, so writers in other processes queue on the busy timeout
instead of forking a session. Search uses two FTS5 tables per corpus: ``porter unicode61``
for stemmed words and ``trigram`` for substrings (e-mails, URLs, versions, CJK), plus a
small table of the message texts that hold CJK-like scripts or symbols, where one- and
two-character terms are looked up.

Messages are added to the search index in batches (``_index``); a search first
indexes whatever is pending, so results always include every committed message.

Here: :class:`SQLiteStore` (connections, transactions, the dialect hooks); ``_index`` the
connection view and the batched search index, ``_search`` the FTS5/trigram query building,
``_scale`` the search plan of large stores, ``_schema`` the DDL and migrations, ``_paths``
in-memory and read-only paths (pure).

Durability: WAL with ``synchronous=NORMAL`` (default) survives any process crash; a power
loss may drop the last commits but never corrupts the file. ``synchronous="full"`` fsyncs
every commit.

>>> with SQLiteStore(":memory:") as store:
...     store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])[0]["id"]
'm1'
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from threadline._search_query import MatchMode, Term
from threadline.errors import InvalidArgumentError, StoreError, ThreadlineError
from threadline.store._sql.base import (
    MAX_MESSAGE_BYTES,
    OwnerFilter,
    Row,
    SessionKey,
    T,
    owner_clause,
)
from threadline.store._sql.rows import schema_version_of
from threadline.store.sqlite._index import SQLiteIndex, _Tx
from threadline.store.sqlite._paths import is_memory, opens_read_only, read_only_path
from threadline.store.sqlite._scale import (
    Plan,
    any_word_search,
    local_session,
    plan_terms,
    session_search,
)
from threadline.store.sqlite._schema import (
    _SQL_VERSION,
    MIGRATIONS,
    SCHEMA_VERSION,
    read_only_schema_problem,
)
from threadline.store.sqlite._search import (
    _ENTRIES,
    _MESSAGES,
    _PENDING,
    _Corpus,
    _hit_order,
    _search_sql,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}


class SQLiteStore(SQLiteIndex):
    """A :class:`~threadline.store.base.Store` in one SQLite file (or ``:memory:``).

    ``synchronous`` is ``"normal"`` (default) or ``"full"``; ``busy_timeout`` is how many
    seconds a write waits for another process's transaction before raising ``StoreError``.
    ``read_only=True`` (or a ``file:...?mode=ro`` URI as ``path``) opens an existing file for
    reading: reads and searches see every committed message, writes raise ``StoreError``, and
    the database file is not written (a rollback-journal file is not switched to WAL; on a WAL
    file SQLite may create the ``-wal``/``-shm`` files it reads through).
    ``clock`` (a function returning an aware datetime) replaces the system clock for the times
    the store records, e.g. in tests.

    >>> store = SQLiteStore(":memory:")
    >>> store.count_sessions("default")
    0
    >>> store.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        synchronous: str = "normal",
        busy_timeout: float = 30.0,
        read_only: bool = False,
        clock: Callable[[], datetime] | None = None,
        size_policy: str = "attach",
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self._clock = clock
        self._configure_size(size_policy, max_message_bytes)
        path = os.fspath(path)
        if read_only:
            path = read_only_path(path)
        mode = _SYNCHRONOUS.get(str(synchronous).lower())
        if mode is None:
            raise InvalidArgumentError(
                f"synchronous must be 'normal' or 'full', got {synchronous!r}"
            )
        if (
            isinstance(busy_timeout, bool)
            or not isinstance(busy_timeout, (int, float))
            or not 0 <= busy_timeout < float("inf")
        ):
            raise InvalidArgumentError(
                f"busy_timeout must be a non-negative number of seconds, got {busy_timeout!r}"
            )
        self.path = path
        self._read_only = opens_read_only(path)
        self._lock = threading.RLock()
        self._closed = False
        try:
            self._conn = sqlite3.connect(
                path,
                timeout=float(busy_timeout),
                isolation_level=None,
                check_same_thread=False,
                cached_statements=256,
                uri=path.startswith("file:"),
            )
        except sqlite3.Error as exc:
            raise StoreError("open", exc) from exc
        self._tx = _Tx(self._conn)
        self._index_hint = 0  # last known tl_meta.indexed_upto (a hint; re-read when used)
        # Reads use their own connections (WAL: they never wait for the writer, nor it for
        # them), pooled; an in-memory database exists once, so it has only the writer's.
        self._busy_timeout = float(busy_timeout)
        self._commits = 0  # this store's write commits (see _index_pending)
        self._shared = is_memory(path)
        self._idle_readers: list[_Tx] = []
        self._readers_lock = threading.Lock()
        try:
            self._configure(mode, busy_timeout)
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    # ------------------------------------------------------------------ setup

    def _configure(self, synchronous: str, busy_timeout: float) -> None:
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            # A read-only open cannot change the journal mode (and must not try: on a file that
            # uses the rollback journal that is a write); it reads the file as it is.
            if not is_memory(self.path) and not self._read_only:
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            # 16 MiB page cache (default 2 MiB): keeps the hot index pages of large sessions
            # (random message ids land anywhere in the primary key) out of the OS round trip.
            self._conn.execute("PRAGMA cache_size = -16384")
        except sqlite3.Error as exc:
            raise StoreError("open", exc) from exc

    def _schema_version(self) -> int:
        try:
            row = self._conn.execute(_SQL_VERSION).fetchone()
        except sqlite3.OperationalError:
            return 0  # no tl_meta yet
        return schema_version_of(row[0]) if row else 0

    def _migrate(self) -> None:
        """Create or upgrade the schema; safe when several processes open a new file at once."""
        version = self._schema_version()
        if version == SCHEMA_VERSION:
            return  # the common case: no write lock needed
        if self._read_only:  # cannot create or upgrade the schema: say why instead of failing
            problem = read_only_schema_problem(version)
            raise StoreError("open", ThreadlineError(f"read-only open of {self.path}: {problem}"))

        def run(tx: Any) -> None:
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS tl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            version = self._schema_version()  # re-read under the write lock
            if version > SCHEMA_VERSION:
                raise StoreError(
                    "open",
                    RuntimeError(
                        f"database schema version {version} is newer than this threadline "
                        f"({SCHEMA_VERSION}); upgrade threadline"
                    ),
                )
            for migration in MIGRATIONS[version:]:
                migration(self._conn)
            self._conn.execute(
                "INSERT INTO tl_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

        self._write("open", run)

    # ------------------------------------------------------------------ transactions

    def _write(
        self, operation: str, fn: Callable[[Any], T], *, lock: SessionKey | None = None
    ) -> T:
        fn = self._guarded(fn, write=True)
        with self._lock:
            joined = self._joined()
            if joined is not None:  # inside transaction(): it commits or rolls back
                return fn(joined)
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(operation, exc) from exc
            hint = self._index_hint
            try:
                result = fn(self._tx)
                self._before_commit(conn)
                conn.execute("COMMIT")
                self._commits += 1
            except BaseException as exc:
                # Rolled back: the rows a batch was due for, and a batch indexed just before
                # a failed COMMIT (the hint it moved goes back with it).
                self._catch_up_due, self._index_hint = False, hint
                self._rollback()
                if isinstance(exc, sqlite3.Error):  # ThreadlineErrors from fn pass untouched
                    raise StoreError(operation, exc) from exc
                raise
            return result

    def _rollback(self) -> None:
        try:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the original error is what matters; the connection rolls back on close

    def _read(self, operation: str, fn: Callable[[Any], T], *, snapshot: bool = False) -> T:
        # Every read is one transaction (snapshot or not): one snapshot already.
        fn = self._guarded(fn, write=False)
        if self._shared or self._joined() is not None:  # the writer's connection
            with self._lock:
                try:
                    return fn(self._tx)
                except sqlite3.Error as exc:
                    raise StoreError(operation, exc) from exc
        reader = self._take_reader(operation)
        failed = False
        try:
            # One read transaction: every statement of the read sees the same snapshot.
            reader.conn.execute("BEGIN")
            result = fn(reader)
            reader.conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            failed = True
            raise StoreError(operation, exc) from exc
        finally:
            self._return_reader(reader, failed)

    def _take_reader(self, operation: str) -> _Tx:
        with self._readers_lock:
            if self._closed:
                raise StoreError(operation, ThreadlineError("the store is closed"))
            if self._idle_readers:
                return self._idle_readers.pop()
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=256,
                uri=self.path.startswith("file:"),
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            conn.execute("PRAGMA cache_size = -16384")
        except sqlite3.Error as exc:
            raise StoreError(operation, exc) from exc
        return _Tx(conn)

    def _return_reader(self, reader: _Tx, failed: bool = False) -> None:
        # A reader on which SQLite failed is closed, not kept (as PostgreSQL connections).
        if reader.conn.in_transaction:  # a read that failed half-way
            with contextlib.suppress(sqlite3.Error):
                reader.conn.execute("ROLLBACK")
        with self._readers_lock:
            if not self._closed and not failed and not reader.conn.in_transaction:
                self._idle_readers.append(reader)
                return
        with contextlib.suppress(sqlite3.Error):
            reader.conn.close()

    def close(self) -> None:
        """Close the connections. Idempotent.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.close(); store.close()
        """
        with self._lock, self._readers_lock:
            if self._closed:
                return
            self._closed = True
            for reader in self._idle_readers:
                with contextlib.suppress(sqlite3.Error):
                    reader.conn.close()
            self._idle_readers.clear()
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ search

    def _search_message_rows(
        self,
        tx: Any,
        app: str,
        terms: Sequence[Term],
        mode: MatchMode,
        session_id: str | None,
        owner: OwnerFilter,
        limit: int,
    ) -> list[Row]:
        scope, params = "{p}x.app = ?", [app]
        if session_id is not None:
            scope, params = scope + " AND {p}x.session_id = ?", [*params, session_id]
        if owner is not None:
            where, owner_params = owner_clause(owner, "user_id")
            scope += f" AND {{p}}x.session_id IN (SELECT id FROM tl_sessions WHERE app = ?{where})"
            params += [app, *owner_params]
        # One read transaction for both parts: the indexed rows and those not indexed yet
        # are the same snapshot, so every message committed before the search is seen once.
        own = not tx.conn.in_transaction  # readers already run in a read transaction
        if own:
            tx.conn.execute("BEGIN")
        try:
            pending = self._index_pending(tx)
            if session_id is not None and local_session(tx.conn, app, session_id):
                corpora = [_MESSAGES, _PENDING] if pending else [_MESSAGES]
                rows = session_search(tx.conn, corpora, terms, mode, app, session_id, limit)
                return [row[:-1] for row in rows]
            if mode == "all":  # a new search (the "any" pass reuses the all pass's counts)
                tx.doc_counts.clear()
            plan = plan_terms(tx.conn, _MESSAGES, terms, limit, tx.doc_counts, tx.known_counts)
            if (
                mode == "any"
                and len(plan.terms) > 1
                and plan.bound is not None
                and plan.bound.ranked
                and not any(t.needs_substring for t in plan.terms)
            ):  # docs/search.md, "Cost": more of the terms first, not bm25 of 10,000 rows
                corpora = [_MESSAGES, _PENDING] if pending else [_MESSAGES]
                rows = any_word_search(tx.conn, corpora, plan, scope, params, limit)
                return [row[:-1] for row in rows]
            rows = self._search(tx, _MESSAGES, plan.terms, mode, scope, params, limit, plan)
            if pending:
                pending_rows = self._search(tx, _PENDING, plan.terms, mode, scope, params, limit)
                rows = sorted(rows + pending_rows, key=_hit_order)[:limit]
        finally:
            if own:
                tx.conn.execute("COMMIT")
        return [row[:-1] for row in rows]  # without the seq

    def _search_entry_rows(
        self, tx: Any, app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
    ) -> list[Row]:
        scope = "{p}x.app = ? AND {p}x.label = ?"
        return self._search(tx, _ENTRIES, terms, mode, scope, [app, label], limit)

    def _search(
        self,
        tx: _Tx,
        corpus: _Corpus,
        terms: Sequence[Term],
        mode: MatchMode,
        scope: str,
        scope_params: list[Any],
        limit: int,
        plan: Plan | None = None,
    ) -> list[Row]:
        bound, forms = (plan.bound, plan.forms) if plan is not None else (None, None)
        sql, params = _search_sql(corpus, terms, mode, scope, scope_params, bound, forms)
        if not sql:
            return []
        rows = tx.conn.execute(sql, (*params, limit)).fetchall()
        # Message rows keep their score and seq (for merging), entries neither.
        width = corpus.width + (2 if corpus.table == "tl_messages" else 0)
        return [row[:width] for row in rows]
