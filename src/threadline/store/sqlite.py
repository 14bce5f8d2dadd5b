"""The embedded SQLite backend (standard library ``sqlite3``, WAL, FTS5).

One connection per store, shared by threads behind a lock; every public write is one
``BEGIN IMMEDIATE`` transaction, so writers in other processes queue on the busy timeout
instead of forking a session. Search uses two FTS5 tables per corpus: ``porter unicode61``
for stemmed words and ``trigram`` for substrings (e-mails, URLs, versions, CJK), plus a
small table of the message texts that hold CJK-like scripts or symbols, where one- and
two-character terms are looked up.

Messages are added to the search index in batches of :data:`_INDEX_BATCH` (an FTS5 segment
per commit is what makes naive appends slow); a search first indexes whatever is pending,
so results always include every committed message.

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
import re
import sqlite3
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from threadline.errors import StoreError, ThreadlineError
from threadline.messages import decode_message, text_of
from threadline.search_query import MatchMode, Term, fts5_quote, fts5_term, word_forms
from threadline.store._sql import (
    MESSAGE_COLUMNS,
    MessageRow,
    OwnerFilter,
    Row,
    SessionKey,
    SQLStore,
    T,
    _chunks,
    _in_list,
    owner_clause,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}

# --------------------------------------------------------------------------- schema

_SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS tl_sessions (
        app TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, name TEXT, parent_session_id TEXT,
        model TEXT, source TEXT, input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0, estimated_cost REAL NOT NULL DEFAULT 0,
        end_reason TEXT, metadata TEXT NOT NULL DEFAULT '{}', head_id TEXT,
        last_seq INTEGER NOT NULL DEFAULT 0, message_count INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
        PRIMARY KEY (app, id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tl_sessions_recent ON tl_sessions (app, updated_at DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS tl_sessions_user "
    "ON tl_sessions (app, user_id, updated_at DESC, id DESC)",
    # A rowid table: FTS rows are keyed by tl_messages.rowid. ``data`` last (see MESSAGE_COLUMNS).
    """CREATE TABLE IF NOT EXISTS tl_messages (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
        parent_id TEXT, role TEXT NOT NULL, byte_size INTEGER NOT NULL, depth INTEGER NOT NULL,
        path_bytes INTEGER NOT NULL, created_at TEXT, state_undo TEXT, data TEXT NOT NULL,
        PRIMARY KEY (app, session_id, id), UNIQUE (app, session_id, seq))""",
    "CREATE INDEX IF NOT EXISTS tl_messages_parent "
    "ON tl_messages (app, session_id, parent_id, seq)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_messages_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    # detail=none: substring lookups go through LIKE, which re-checks the stored text anyway.
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_messages_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    # Texts holding CJK-like scripts or symbols (see _WIDE), kept alongside the trigram index:
    # one- and two-character substrings ("東京", "🙂") cannot use trigrams and are scanned here.
    "CREATE TABLE IF NOT EXISTS tl_messages_cjk (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS tl_compactions (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, summary TEXT NOT NULL,
        from_message_id TEXT NOT NULL, to_message_id TEXT NOT NULL, seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL, PRIMARY KEY (app, session_id, id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_skill_loads (
        app TEXT NOT NULL, session_id TEXT NOT NULL, label TEXT NOT NULL,
        skill_key TEXT NOT NULL, message_id TEXT NOT NULL, tool_call_id TEXT,
        PRIMARY KEY (app, session_id, label, skill_key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_blocks (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, label TEXT NOT NULL,
        content TEXT NOT NULL, updated_at INTEGER NOT NULL,
        PRIMARY KEY (app, owner, owner_id, label)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_prompts (
        app TEXT NOT NULL, session_id TEXT NOT NULL, prompt TEXT NOT NULL,
        updated_at INTEGER NOT NULL, PRIMARY KEY (app, session_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_entries (
        app TEXT NOT NULL, label TEXT NOT NULL, key TEXT NOT NULL, content TEXT NOT NULL,
        description TEXT, updated_at INTEGER NOT NULL, PRIMARY KEY (app, label, key))""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_entries_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_entries_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    """CREATE TABLE IF NOT EXISTS tl_state (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (app, owner, owner_id, key)) WITHOUT ROWID""",
)


# Messages reach the search index in batches (see SQLiteStore._catch_up_index): every message
# with rowid <= tl_meta.indexed_upto is indexed, later ones are pending. SQLite reuses the
# highest rowid after a delete, so deleting rows lowers the mark to the highest remaining
# rowid; a reused rowid is then pending again instead of silently unindexed.
_SCHEMA_V1_TRIGRAM = (
    "INSERT INTO tl_meta (key, value) VALUES ('indexed_upto', '0') ON CONFLICT (key) DO NOTHING",
    # No WHEN clause: rows of one DELETE go in any order, so every row re-checks the mark.
    """CREATE TRIGGER IF NOT EXISTS tl_messages_index_mark AFTER DELETE ON tl_messages
    BEGIN
        UPDATE tl_meta SET value = CAST((SELECT COALESCE(MAX(rowid), 0) FROM tl_messages) AS TEXT)
        WHERE key = 'indexed_upto'
        AND CAST(value AS INTEGER) > (SELECT COALESCE(MAX(rowid), 0) FROM tl_messages);
    END""",
)


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    for statement in (*_SCHEMA_V1, *_SCHEMA_V1_TRIGRAM):
        conn.execute(statement)


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (_migrate_to_1,)
"""``MIGRATIONS[i]`` upgrades a database from schema version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)

_SQL_VERSION = "SELECT value FROM tl_meta WHERE key = 'schema_version'"

# --------------------------------------------------------------------------- DML

_SQL_INSERT_MESSAGE = (
    f"INSERT INTO tl_messages ({MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (app, session_id, id) DO NOTHING"
)
_SQL_MESSAGE_ROWID = "SELECT rowid FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?"
_SQL_ENTRY_ROWID = "SELECT rowid FROM tl_entries WHERE app = ? AND label = ? AND key = ?"
_SQL_INDEX_MARK = "SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'indexed_upto'"
_SQL_SET_INDEX_MARK = "UPDATE tl_meta SET value = ? WHERE key = 'indexed_upto'"
_SQL_PENDING_INDEX = "SELECT rowid, data FROM tl_messages WHERE rowid > ? ORDER BY rowid"
_SQL_DELETE_CJK = "DELETE FROM tl_messages_cjk WHERE rowid = ?"
_INDEX_BATCH = 64
"""Pending messages that make an append index them all (one FTS5 segment per batch instead
of one per commit: the search index is by far the most expensive part of a write)."""


class _Corpus:
    """Table names and result columns of one searchable corpus (messages or entries).

    ``index`` names the index tables (``<index>_fts``, ``_tri``, ``_cjk``): the messages'
    own, or the in-memory ones that hold the messages not indexed yet (see
    :meth:`SQLiteStore._search_message_rows`).
    """

    def __init__(self, table: str, columns: str, order: str, index: str | None = None) -> None:
        self.table, self.columns, self.order = table, columns, order
        self.width = columns.count(",") + 1
        index = index or table
        self.fts, self.tri, self.cjk = f"{index}_fts", f"{index}_tri", f"{index}_cjk"
        self.insert_fts = f"INSERT INTO {self.fts} (rowid, text) VALUES (?, ?)"
        self.insert_tri = f"INSERT INTO {self.tri} (rowid, text) VALUES (?, ?)"
        self.delete_fts = f"DELETE FROM {self.fts} WHERE rowid = ?"
        self.delete_tri = f"DELETE FROM {self.tri} WHERE rowid = ?"


_MESSAGES = _Corpus("tl_messages", "x.session_id, x.id, x.role, x.data", "x.seq")
_PENDING = _Corpus("tl_messages", _MESSAGES.columns, _MESSAGES.order, index="tl_pending")
_PENDING_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tl_pending_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tl_pending_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    "CREATE TABLE IF NOT EXISTS temp.tl_pending_cjk "
    "(rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)",
)
_ENTRIES = _Corpus("tl_entries", "x.key, x.content, x.description", "x.updated_at")


class _Tx:
    """The :class:`~threadline.store._sql.Tx` view of one connection (the writer or a reader),
    with that connection's in-memory index of messages not indexed yet (``_index_pending``).
    """

    __slots__ = ("conn", "pending_count", "pending_version")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending_version: tuple[int, int] | None = None
        self.pending_count = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        row: Row | None = self.conn.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()


def _is_memory(path: str) -> bool:
    return path in ("", ":memory:") or path.startswith("file::memory:") or "mode=memory" in path


class SQLiteStore(SQLStore):
    """A :class:`~threadline.store.base.Store` in one SQLite file (or ``:memory:``).

    ``synchronous`` is ``"normal"`` (default) or ``"full"``; ``busy_timeout`` is how many
    seconds a write waits for another process's transaction before raising ``StoreError``.
    ``read_only=True`` (or a ``file:...?mode=ro`` URI as ``path``) opens an existing file for
    reading: reads and searches see every committed message, writes raise ``StoreError``.
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
    ) -> None:
        self._clock = clock
        path = os.fspath(path)
        if read_only and not path.startswith("file:"):
            if _is_memory(path):
                raise ValueError("an in-memory store cannot be opened read-only")
            path = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
        mode = _SYNCHRONOUS.get(str(synchronous).lower())
        if mode is None:
            raise ValueError(f"synchronous must be 'normal' or 'full', got {synchronous!r}")
        if isinstance(busy_timeout, bool) or not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be a non-negative number, got {busy_timeout!r}")
        self.path = path
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
        self._shared = _is_memory(path)
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
            if not _is_memory(self.path):
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
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Create or upgrade the schema; safe when several processes open a new file at once."""
        if self._schema_version() == SCHEMA_VERSION:
            return  # the common case: no write lock needed

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
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(operation, exc) from exc
            try:
                result = fn(self._tx)
                conn.execute("COMMIT")
                self._commits += 1
            except BaseException as exc:
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

    def _read(self, operation: str, fn: Callable[[Any], T]) -> T:
        if self._shared:
            with self._lock:
                try:
                    return fn(self._tx)
                except sqlite3.Error as exc:
                    raise StoreError(operation, exc) from exc
        reader = self._take_reader(operation)
        try:
            # One read transaction: every statement of the read sees the same snapshot.
            reader.conn.execute("BEGIN")
            result = fn(reader)
            reader.conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            raise StoreError(operation, exc) from exc
        finally:
            self._return_reader(reader)

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

    def _return_reader(self, reader: _Tx) -> None:
        if reader.conn.in_transaction:  # a read that failed half-way
            with contextlib.suppress(sqlite3.Error):
                reader.conn.execute("ROLLBACK")
        with self._readers_lock:
            if not self._closed:
                self._idle_readers.append(reader)
                return
        with contextlib.suppress(sqlite3.Error):
            reader.conn.close()

    def close(self) -> None:
        """Close the connections. Idempotent."""
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

    # ------------------------------------------------------------------ search index

    @staticmethod
    def _index(conn: sqlite3.Connection, corpus: _Corpus, rowid: int, text: str) -> None:
        if text:  # rows without text (tool calls) need no index entries
            conn.execute(corpus.insert_fts, (rowid, text))
            conn.execute(corpus.insert_tri, (rowid, text))

    @staticmethod
    def _unindex(conn: sqlite3.Connection, corpus: _Corpus, rowid: int) -> None:
        conn.execute(corpus.delete_fts, (rowid,))
        conn.execute(corpus.delete_tri, (rowid,))

    def _insert_message(self, tx: Any, row: MessageRow) -> bool:
        cursor = tx.conn.execute(_SQL_INSERT_MESSAGE, row.values())
        rowid = cursor.lastrowid
        if cursor.rowcount != 1 or rowid is None:
            return False
        if rowid - self._index_hint >= _INDEX_BATCH:
            self._catch_up_index(tx.conn)
        return True

    def _index_mark(self, conn: sqlite3.Connection) -> int:
        row = conn.execute(_SQL_INDEX_MARK).fetchone()
        mark = int(row[0]) if row else 0
        self._index_hint = mark
        return mark

    def _catch_up_index(self, conn: sqlite3.Connection) -> None:
        """Index every pending message (inside a write transaction on ``conn``)."""
        mark = self._index_mark(conn)
        rows = conn.execute(_SQL_PENDING_INDEX, (mark,)).fetchall()
        if not rows:
            return
        for rowid, data in rows:
            self._index_message_text(conn, rowid, text_of(decode_message(data)))
        self._index_hint = rows[-1][0]
        conn.execute(_SQL_SET_INDEX_MARK, (str(self._index_hint),))

    def _index_pending(self, tx: _Tx) -> bool:
        """Put the messages not indexed yet (at most a batch or two) into the in-memory
        ``tl_pending_*`` tables, inside the search's own read; True if there are any.

        A search never writes to the database, so it works on a read-only open and never
        waits for another writer; and it never skips a committed message. The tables are
        rebuilt only when the database changed since the last search on this connection.
        """
        conn = tx.conn
        # data_version moves with every commit of another connection; this store's own
        # commits (on the writer, which may be this very connection) are counted in _commits.
        version = (conn.execute("PRAGMA data_version").fetchone()[0], self._commits)
        if version == tx.pending_version:
            return tx.pending_count > 0
        if tx.pending_version is None:
            for statement in _PENDING_TABLES:
                conn.execute(statement)
        for table in (_PENDING.fts, _PENDING.tri, _PENDING.cjk):
            conn.execute(f"DELETE FROM temp.{table}")
        row = conn.execute(_SQL_INDEX_MARK).fetchone()
        rows = conn.execute(_SQL_PENDING_INDEX, (int(row[0]) if row else 0,)).fetchall()
        for rowid, data in rows:
            self._index_message_text(conn, rowid, text_of(decode_message(data)), _PENDING)
        tx.pending_count = len(rows)
        tx.pending_version = version
        return bool(rows)

    def _index_message_text(
        self, conn: sqlite3.Connection, rowid: int, text: str, corpus: _Corpus = _MESSAGES
    ) -> None:
        self._index(conn, corpus, rowid, text)
        if text and _WIDE.search(text):
            insert = f"INSERT INTO {corpus.cjk} (rowid, text) VALUES (?, ?)"
            conn.execute(insert, (rowid, text))

    def _reindex_message(
        self, tx: Any, app: str, session_id: str, message_id: str, text: str
    ) -> None:
        conn = tx.conn
        row = conn.execute(_SQL_MESSAGE_ROWID, (app, session_id, message_id)).fetchone()
        if row is not None and row[0] <= self._index_mark(conn):  # pending rows: indexed later
            self._unindex(conn, _MESSAGES, row[0])
            conn.execute(_SQL_DELETE_CJK, (row[0],))
            self._index_message_text(conn, row[0], text)

    def _unindex_messages(
        self, tx: Any, app: str, session_id: str, message_ids: Sequence[str] | None
    ) -> None:
        select = "SELECT rowid FROM tl_messages WHERE app = ? AND session_id = ?"
        batches: list[Sequence[str]] = [()] if message_ids is None else _chunks(message_ids)
        for batch in batches:
            where = select if message_ids is None else f"{select} AND id IN {_in_list(len(batch))}"
            for table in (_MESSAGES.fts, _MESSAGES.tri, "tl_messages_cjk"):
                tx.conn.execute(
                    f"DELETE FROM {table} WHERE rowid IN ({where})", (app, session_id, *batch)
                )

    def _upsert_entry(
        self,
        tx: Any,
        app: str,
        label: str,
        key: str,
        content: str,
        description: str | None,
        now: int,
    ) -> None:
        conn = tx.conn
        row = conn.execute(_SQL_ENTRY_ROWID, (app, label, key)).fetchone()
        if row is None:
            cursor = conn.execute(
                "INSERT INTO tl_entries (app, label, key, content, description, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (app, label, key, content, description, now),
            )
            assert cursor.lastrowid is not None
            rowid = cursor.lastrowid
        else:
            rowid = row[0]
            conn.execute(
                "UPDATE tl_entries SET content = ?, description = ?, updated_at = ? "
                "WHERE rowid = ?",
                (content, description, now, rowid),
            )
            self._unindex(conn, _ENTRIES, rowid)
        self._index(conn, _ENTRIES, rowid, content)

    def _unindex_entry(self, tx: Any, app: str, label: str, key: str) -> None:
        row = tx.conn.execute(_SQL_ENTRY_ROWID, (app, label, key)).fetchone()
        if row is not None:
            self._unindex(tx.conn, _ENTRIES, row[0])

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
            rows = self._search(tx, _MESSAGES, terms, mode, scope, params, limit)
            if self._index_pending(tx):
                pending = self._search(tx, _PENDING, terms, mode, scope, params, limit)
                rows = sorted(rows + pending, key=_hit_order)[:limit]
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
    ) -> list[Row]:
        sql, params = _search_sql(corpus, terms, mode, scope, scope_params)
        if not sql:
            return []
        rows = tx.conn.execute(sql, (*params, limit)).fetchall()
        # Message rows keep their score and seq (for merging), entries neither.
        width = corpus.width + (2 if corpus.table == "tl_messages" else 0)
        return [row[:width] for row in rows]


# --------------------------------------------------------------------------- search SQL


def _hit_order(row: Row) -> tuple[float, int]:
    """Sort key of message rows ``(..., score, seq)``: best score, then newest, first."""
    return (-float(row[-2]), -int(row[-1]))


class _Stemmer:
    """Porter stems of words, from SQLite's own tokenizer (an in-memory FTS5 table).

    ``fts5_term`` ORs several inflections of a word; forms with the same stem match the same
    rows, so keeping one per stem gives FTS5 (and bm25) less work for identical results.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute("CREATE VIRTUAL TABLE s USING fts5(t, tokenize='porter unicode61')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
            self._conn = conn
        return self._conn

    def distinct(self, words: Sequence[str]) -> list[str]:
        """``words`` without those whose stem an earlier word already has."""
        with self._lock:
            missing = [w for w in words if w not in self._cache]
            if missing:
                conn = self._connection()
                conn.executemany("INSERT INTO s (rowid, t) VALUES (?, ?)", enumerate(missing))
                for doc, stem in conn.execute("SELECT doc, term FROM v").fetchall():
                    self._cache[missing[doc]] = stem
                conn.execute("DELETE FROM s")
                if len(self._cache) > 50_000:
                    self._cache.clear()
            stems = [self._cache.get(w, w) for w in words]
        return [w for i, w in enumerate(words) if stems[i] not in stems[:i]]


_STEMMER = _Stemmer()


def _fts_term(term: Term) -> str | None:
    """``fts5_term`` with inflections that share a Porter stem collapsed to one."""
    expression = fts5_term(term)
    if expression is None or term.is_phrase or len(term.tokens) != 1:
        return expression
    forms = word_forms(term.tokens[0])
    if expression != "(" + " OR ".join(fts5_quote(f) for f in forms) + ")":
        return expression  # not the expansion this optimisation knows: keep it as is
    kept = _STEMMER.distinct(forms)
    return fts5_quote(kept[0]) if len(kept) == 1 else "(" + " OR ".join(map(fts5_quote, kept)) + ")"


def _fts_match(terms: Sequence[Term], mode: MatchMode) -> str | None:
    parts = [p for p in (_fts_term(t) for t in terms) if p is not None]
    return (" AND " if mode == "all" else " OR ").join(parts) if parts else None


_LIKE_SPECIAL = re.compile(r"[%_]")

# A superset of the characters that make a one- or two-character term need a substring
# search (search_query: scripts written without spaces, and symbols such as emoji, Unicode
# category So). Texts containing none of them cannot match such a term.
_WIDE_RANGES = (
    (0x00A6, 0x00B0), (0x0482, 0x0482), (0x058D, 0x058E), (0x060E, 0x060F), (0x06DE, 0x06FE),
    (0x07F6, 0x07F6), (0x09FA, 0x09FA), (0x0B70, 0x0B70), (0x0BF3, 0x0BFA), (0x0C7F, 0x0C7F),
    (0x0D4F, 0x0D79), (0x0E00, 0x0FFF), (0x1000, 0x11FF), (0x1390, 0x1399), (0x166D, 0x166D),
    (0x1780, 0x17FF), (0x1940, 0x1940), (0x19DE, 0x19FF), (0x1B61, 0x1B7C), (0x2100, 0x21FF),
    (0x2300, 0x2BFF), (0x2CE5, 0x2CEA), (0x2E50, 0xA4CF), (0xA828, 0xA839), (0xA960, 0xA97F),
    (0xAA77, 0xAA79), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFD40, 0xFD4F), (0xFDCF, 0xFDFF),
    (0xFF66, 0xFFFD), (0x10137, 0x101FC), (0x10877, 0x10878), (0x10AC8, 0x10AC8),
    (0x1173F, 0x1173F), (0x11FD5, 0x11FF1), (0x16B3C, 0x16B45), (0x1BC9C, 0x1BC9C),
    (0x1CF50, 0x1DAFF), (0x1E14F, 0x1E14F), (0x1EC70, 0x1EEFF), (0x1F000, 0x3FFFF),
)  # fmt: skip
_WIDE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _WIDE_RANGES) + "]")


def _needs_substring(term: Term) -> bool:
    return term.needs_substring and bool(term.substring)


def _like(term: Term) -> tuple[str, list[Any]]:
    """``LIKE`` test of the term's substring on a ``text`` column (``{col}`` = text/+text).

    No ESCAPE clause (it would keep FTS5 from using the trigram index): ``%`` and ``_`` in the
    term widen the pattern, so such terms are re-checked exactly with ``instr``. Never give
    such a pattern to the trigram index itself (see :func:`_substring_source`).
    """
    sub = term.substring
    if "%" in sub or "_" in sub:
        return "{col} LIKE ? AND instr(lower(text), ?) > 0", [f"%{sub}%", sub]
    return "{col} LIKE ?", [f"%{sub}%"]


def _substring_only_rows(corpus: _Corpus, term: Term) -> tuple[str, list[Any]]:
    """Rowids whose text contains the term's substring but that do not match it as words.

    Excluding the word matches first spares FTS5 re-reading their text to verify the LIKE.
    """
    source, test, params = _substring_source(corpus, term)
    words = _fts_term(term)
    if words is None:
        return f"SELECT rowid FROM {source} WHERE {test}", params
    return (
        f"SELECT rowid FROM {source} WHERE rowid NOT IN "
        f"(SELECT rowid FROM {corpus.fts} WHERE {corpus.fts} MATCH ?) AND {test}",
        [words, *params],
    )


def _substring_source(corpus: _Corpus, term: Term) -> tuple[str, str, list[Any]]:
    """Where to look for the term's substring: ``(table, condition, params)``.

    The trigram index serves ``LIKE '%run%'`` for a literal run of three or more characters.
    SQLite 3.40's trigram LIKE crashes on patterns holding ``%``/``_`` between multi-byte
    characters and finds nothing for patterns under three multi-byte characters, so the
    index only ever sees the longest plain run, and ``instr`` checks the exact substring.
    Shorter terms scan ``tl_messages_cjk`` (all texts that can hold them) or the trigram
    table's text without its index (``+text``).
    """
    sub = term.substring
    longest = max(_LIKE_SPECIAL.split(sub), key=len)
    if len(longest) >= 3:
        if longest == sub:
            return corpus.tri, "text LIKE ?", [f"%{sub}%"]
        return corpus.tri, "text LIKE ? AND instr(lower(text), ?) > 0", [f"%{longest}%", sub]
    test, params = _like(term)
    if corpus.table == "tl_messages" and _WIDE.search(sub):
        return corpus.cjk, test.format(col="text"), params  # an ordinary table
    return corpus.tri, test.format(col="+text"), params


def _row_satisfies(corpus: _Corpus, term: Term) -> tuple[str, list[Any]]:
    """Correlated test that row ``x`` satisfies ``term`` (words, or its substring)."""
    parts: list[str] = []
    params: list[Any] = []
    words = _fts_term(term)
    if words is not None:
        parts.append(
            f"EXISTS (SELECT 1 FROM {corpus.fts} WHERE {corpus.fts} MATCH ? "
            f"AND {corpus.fts}.rowid = x.rowid)"
        )
        params.append(words)
    if _needs_substring(term):
        test, like_params = _like(term)
        parts.append(
            f"EXISTS (SELECT 1 FROM {corpus.tri} WHERE {corpus.tri}.rowid = x.rowid "
            f"AND {test.format(col='+text')})"
        )
        params += like_params
    return "(" + " OR ".join(parts) + ")", params


def _search_sql(
    corpus: _Corpus, terms: Sequence[Term], mode: MatchMode, scope: str, scope_params: list[Any]
) -> tuple[str, list[Any]]:
    """One query: word hits ranked by bm25, plus hits owed to substrings, scored 0.

    Branch 1 drives from the porter index: rows where every term (in "any" mode, some term)
    matches as words. Branch 2 adds rows that satisfy some substring term only through its
    substring; in "all" mode each must also satisfy every other term (checked per row, the
    candidates being few). In "all" mode the branches are disjoint; in "any" mode a row can
    be in both and ``GROUP BY`` keeps its best score.
    """
    match = _fts_match(terms, mode)
    substring_terms = [t for t in terms if _needs_substring(t)]
    if not substring_terms:
        return _word_search_sql(corpus, match, scope, scope_params)
    branches: list[str] = []
    params: list[Any] = []
    # In "all" mode a term without words (emoji...) can only match through its substring:
    # then no row matches every term as words and branch 1 is left out.
    if match is not None and (mode == "any" or all(_fts_term(t) for t in terms)):
        branches.append(
            f"SELECT x.rowid AS rid, {corpus.order} AS ord, -{corpus.fts}.rank AS score "
            # CROSS JOIN and "+": the FTS query must drive (SQLite would otherwise run the
            # MATCH once per scope row).
            f"FROM {corpus.fts} CROSS JOIN {corpus.table} x ON x.rowid = {corpus.fts}.rowid "
            f"WHERE {corpus.fts} MATCH ? AND {scope.format(p='+')}"
        )
        params += [match, *scope_params]
    drivers = [_substring_only_rows(corpus, t) for t in substring_terms]
    checks = [_row_satisfies(corpus, t) for t in terms] if mode == "all" and len(terms) > 1 else []
    branches.append(
        f"SELECT x.rowid AS rid, {corpus.order} AS ord, 0.0 AS score FROM {corpus.table} x "
        f"WHERE x.rowid IN ({' UNION '.join(sql for sql, _ in drivers)}) "
        f"AND {scope.format(p='+')}" + "".join(f" AND {sql}" for sql, _ in checks)
    )
    for _, driver_params in drivers:
        params += driver_params
    params += scope_params
    for _, check_params in checks:
        params += check_params
    union = " UNION ALL ".join(branches)
    ranked = (
        f"SELECT rid, MAX(score) AS score, ord FROM ({union}) GROUP BY rid"
        if mode == "any"
        else union
    )
    sql = (
        f"SELECT {corpus.columns}, h.score, h.ord FROM ("
        f"SELECT rid, score, ord FROM ({ranked}) "
        "ORDER BY score DESC, ord DESC, rid DESC LIMIT ?"
        f") h JOIN {corpus.table} x ON x.rowid = h.rid "
        "ORDER BY h.score DESC, h.ord DESC, h.rid DESC"
    )
    return sql, params


def _word_search_sql(
    corpus: _Corpus, match: str | None, scope: str, scope_params: list[Any]
) -> tuple[str, list[Any]]:
    """Word terms only: rank the porter matches, then load the bodies of the top rows."""
    if match is None:
        return "", []
    top = (
        f"SELECT x.rowid AS rid, {corpus.fts}.rank AS r, {corpus.order} AS ord "
        f"FROM {corpus.fts} CROSS JOIN {corpus.table} x ON x.rowid = {corpus.fts}.rowid "
        f"WHERE {corpus.fts} MATCH ? AND {scope.format(p='+')} "
        "ORDER BY r, ord DESC, rid DESC LIMIT ?"
    )
    sql = (
        f"SELECT {corpus.columns}, -h.r, h.ord FROM ({top}) h "
        f"JOIN {corpus.table} x ON x.rowid = h.rid ORDER BY h.r, h.ord DESC, h.rid DESC"
    )
    return sql, [match, *scope_params]
