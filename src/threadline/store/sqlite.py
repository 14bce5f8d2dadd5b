"""The embedded SQLite backend (standard library ``sqlite3``, WAL, FTS5).

One connection per store, shared by threads behind a lock; every public write is one
``BEGIN IMMEDIATE`` transaction, so writers in other processes queue on the busy timeout
instead of forking a session. Search uses two FTS5 tables per corpus: ``porter unicode61``
for stemmed words and ``trigram`` for substrings (e-mails, URLs, versions, CJK).

Durability: WAL with ``synchronous=NORMAL`` (default) survives any process crash; a power
loss may drop the last commits but never corrupts the file. ``synchronous="full"`` fsyncs
every commit.

>>> with SQLiteStore(":memory:") as store:
...     store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])[0]["id"]
'm1'
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from threadline.errors import StoreError, ThreadlineError
from threadline.messages import decode_message, text_of
from threadline.search_query import MatchMode, Term, fts5_match, fts5_term
from threadline.store._sql import MESSAGE_COLUMNS, MessageRow, Row, SessionKey, SQLStore, T

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

_SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}
_CHUNK = 400

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


# Messages reach the trigram index in batches (see SQLiteStore._catch_up_trigram): every
# message with rowid <= tl_meta.trigram_upto is indexed, later ones are pending. SQLite reuses
# the highest rowid after a delete, so deleting rows lowers the mark to the highest remaining
# rowid; a reused rowid is then pending again instead of silently unindexed.
_SCHEMA_V1_TRIGRAM = (
    "INSERT INTO tl_meta (key, value) VALUES ('trigram_upto', '0') ON CONFLICT (key) DO NOTHING",
    """CREATE TRIGGER IF NOT EXISTS tl_messages_trigram_mark AFTER DELETE ON tl_messages
    WHEN old.rowid <= (SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'trigram_upto')
    BEGIN
        UPDATE tl_meta SET value = CAST((SELECT COALESCE(MAX(rowid), 0) FROM tl_messages) AS TEXT)
        WHERE key = 'trigram_upto'
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
_SQL_TRIGRAM_MARK = "SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'trigram_upto'"
_SQL_SET_TRIGRAM_MARK = "UPDATE tl_meta SET value = ? WHERE key = 'trigram_upto'"
_SQL_MAX_MESSAGE_ROWID = "SELECT COALESCE(MAX(rowid), 0) FROM tl_messages"
_SQL_PENDING_TRIGRAM = "SELECT rowid, data FROM tl_messages WHERE rowid > ? ORDER BY rowid"
_TRIGRAM_BATCH = 64
"""Pending messages that trigger a trigram catch-up inside an append (one FTS5 segment per
batch instead of one per commit: the trigram index is the most expensive part of a write)."""


class _Corpus:
    """Table names and result columns of one searchable corpus (messages or entries)."""

    def __init__(self, table: str, columns: str, order: str) -> None:
        self.table, self.columns, self.order = table, columns, order
        self.width = columns.count(",") + 1
        self.fts, self.tri = f"{table}_fts", f"{table}_tri"
        self.insert_fts = f"INSERT INTO {self.fts} (rowid, text) VALUES (?, ?)"
        self.insert_tri = f"INSERT INTO {self.tri} (rowid, text) VALUES (?, ?)"
        self.delete_fts = f"DELETE FROM {self.fts} WHERE rowid = ?"
        self.delete_tri = f"DELETE FROM {self.tri} WHERE rowid = ?"


_MESSAGES = _Corpus("tl_messages", "x.session_id, x.id, x.role, x.data", "x.seq")
_ENTRIES = _Corpus("tl_entries", "x.key, x.content, x.description", "x.updated_at")


class _Tx:
    """The :class:`~threadline.store._sql.Tx` view of the store's connection."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

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

    >>> store = SQLiteStore(":memory:")
    >>> store.count_sessions("default")
    0
    >>> store.close()
    """

    def __init__(
        self, path: str = ":memory:", *, synchronous: str = "normal", busy_timeout: float = 30.0
    ) -> None:
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
        self._trigram_hint = 0  # last known tl_meta.trigram_upto (a hint; re-read when used)
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
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, sqlite3.Error) and not isinstance(exc, ThreadlineError):
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
        with self._lock:
            try:
                return fn(self._tx)
            except sqlite3.Error as exc:
                raise StoreError(operation, exc) from exc

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    # ------------------------------------------------------------------ search index

    def _index(self, corpus: _Corpus, rowid: int, text: str) -> None:
        if text:  # rows without text (tool calls) need no index entries
            self._conn.execute(corpus.insert_fts, (rowid, text))
            self._conn.execute(corpus.insert_tri, (rowid, text))

    def _unindex(self, corpus: _Corpus, rowid: int) -> None:
        self._conn.execute(corpus.delete_fts, (rowid,))
        self._conn.execute(corpus.delete_tri, (rowid,))

    def _insert_message(self, tx: Any, row: MessageRow) -> bool:
        cursor = self._conn.execute(_SQL_INSERT_MESSAGE, row.values())
        rowid = cursor.lastrowid
        if cursor.rowcount != 1 or rowid is None:
            return False
        if row.text:
            self._conn.execute(_MESSAGES.insert_fts, (rowid, row.text))
        if rowid - self._trigram_hint >= _TRIGRAM_BATCH:
            self._catch_up_trigram()
        return True

    def _trigram_mark(self) -> int:
        row = self._conn.execute(_SQL_TRIGRAM_MARK).fetchone()
        mark = int(row[0]) if row else 0
        self._trigram_hint = mark
        return mark

    def _catch_up_trigram(self) -> None:
        """Index every pending message in the trigram table (inside a write transaction)."""
        mark = self._trigram_mark()
        rows = self._conn.execute(_SQL_PENDING_TRIGRAM, (mark,)).fetchall()
        if not rows:
            return
        for rowid, data in rows:
            text = text_of(decode_message(data))
            if text:
                self._conn.execute(_MESSAGES.insert_tri, (rowid, text))
        self._trigram_hint = rows[-1][0]
        self._conn.execute(_SQL_SET_TRIGRAM_MARK, (str(self._trigram_hint),))

    def _ensure_trigram(self) -> None:
        """Before a substring search: index pending messages (a short write transaction)."""
        row = self._conn.execute(_SQL_MAX_MESSAGE_ROWID).fetchone()
        if row is not None and int(row[0]) > self._trigram_mark():
            self._write("search_messages", lambda tx: self._catch_up_trigram())

    def _reindex_message(
        self, tx: Any, app: str, session_id: str, message_id: str, text: str
    ) -> None:
        row = self._conn.execute(_SQL_MESSAGE_ROWID, (app, session_id, message_id)).fetchone()
        if row is None:
            return
        rowid = row[0]
        self._conn.execute(_MESSAGES.delete_fts, (rowid,))
        if text:
            self._conn.execute(_MESSAGES.insert_fts, (rowid, text))
        if rowid <= self._trigram_mark():  # pending rows are indexed later from their data
            self._conn.execute(_MESSAGES.delete_tri, (rowid,))
            if text:
                self._conn.execute(_MESSAGES.insert_tri, (rowid, text))

    def _unindex_messages(
        self, tx: Any, app: str, session_id: str, message_ids: Sequence[str] | None
    ) -> None:
        select = "SELECT rowid FROM tl_messages WHERE app = ? AND session_id = ?"
        batches: list[Sequence[str]] = [()]
        if message_ids is not None:
            batches = [message_ids[i : i + _CHUNK] for i in range(0, len(message_ids), _CHUNK)]
        for batch in batches:
            where = select
            if message_ids is not None:
                where += " AND id IN (" + ", ".join("?" * len(batch)) + ")"
            for table in (_MESSAGES.fts, _MESSAGES.tri):
                self._conn.execute(
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
        row = self._conn.execute(_SQL_ENTRY_ROWID, (app, label, key)).fetchone()
        if row is None:
            cursor = self._conn.execute(
                "INSERT INTO tl_entries (app, label, key, content, description, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (app, label, key, content, description, now),
            )
            assert cursor.lastrowid is not None
            rowid = cursor.lastrowid
        else:
            rowid = row[0]
            self._conn.execute(
                "UPDATE tl_entries SET content = ?, description = ?, updated_at = ? "
                "WHERE rowid = ?",
                (content, description, now, rowid),
            )
            self._unindex(_ENTRIES, rowid)
        self._index(_ENTRIES, rowid, content)

    def _unindex_entry(self, tx: Any, app: str, label: str, key: str) -> None:
        row = self._conn.execute(_SQL_ENTRY_ROWID, (app, label, key)).fetchone()
        if row is not None:
            self._unindex(_ENTRIES, row[0])

    # ------------------------------------------------------------------ search

    def _search_message_rows(
        self,
        tx: Any,
        app: str,
        terms: Sequence[Term],
        mode: MatchMode,
        session_id: str | None,
        user_id: str | None,
        limit: int,
    ) -> list[Row]:
        if session_id is not None:
            scope, params = "{p}x.app = ? AND {p}x.session_id = ?", [app, session_id]
        elif user_id is not None:
            scope = (
                "{p}x.app = ? AND {p}x.session_id IN "
                "(SELECT id FROM tl_sessions WHERE app = ? AND user_id = ?)"
            )
            params = [app, app, user_id]
        else:
            scope, params = "{p}x.app = ?", [app]
        if any(t.needs_substring and t.substring for t in terms):
            self._ensure_trigram()
        return self._search(_MESSAGES, terms, mode, scope, params, limit)

    def _search_entry_rows(
        self, tx: Any, app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
    ) -> list[Row]:
        scope = "{p}x.app = ? AND {p}x.label = ?"
        return self._search(_ENTRIES, terms, mode, scope, [app, label], limit)

    def _search(
        self,
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
        rows = self._conn.execute(sql, (*params, limit)).fetchall()
        width = corpus.width + (1 if corpus is _MESSAGES else 0)  # messages keep their score
        return [row[:width] for row in rows]


# --------------------------------------------------------------------------- search SQL

_LIKE_SPECIAL = re.compile(r"[%_]")


def _term_condition(corpus: _Corpus, term: Term, *, words: bool) -> tuple[str, list[Any]]:
    """SQL true for rows of ``x`` that satisfy ``term`` (word phrase and/or substring)."""
    parts: list[str] = []
    params: list[Any] = []
    expression = fts5_term(term) if words else None
    if expression is not None:
        parts.append(f"x.rowid IN (SELECT rowid FROM {corpus.fts} WHERE {corpus.fts} MATCH ?)")
        params.append(expression)
    if term.needs_substring and term.substring:
        # LIKE (no ESCAPE, which would disable the trigram index); "%" and "_" inside the
        # term widen the pattern, so such terms are re-checked exactly with instr().
        # Only patterns with a literal run of three characters can use the index (SQLite's
        # trigram LIKE returns nothing for shorter multi-byte patterns): "+text" scans instead.
        sub = term.substring
        exact = " AND instr(lower(text), ?) > 0" if ("%" in sub or "_" in sub) else ""
        column = "text" if any(len(run) >= 3 for run in _LIKE_SPECIAL.split(sub)) else "+text"
        parts.append(
            f"x.rowid IN (SELECT rowid FROM {corpus.tri} WHERE {column} LIKE ?{exact})"
        )
        params += [f"%{sub}%", sub] if exact else [f"%{sub}%"]
    return ("(" + " OR ".join(parts) + ")" if parts else ""), params


def _search_sql(
    corpus: _Corpus, terms: Sequence[Term], mode: MatchMode, scope: str, scope_params: list[Any]
) -> tuple[str, list[Any]]:
    """One query: word hits ranked by bm25, plus substring-satisfied hits scored 0.

    Branch 1 drives from the porter index (rows where every term — or, in "any" mode, some
    term — matches as words). Branch 2 adds rows that satisfy the per-term rules only
    thanks to substrings; ``GROUP BY`` keeps each row once with its best score.
    """
    branches: list[str] = []
    params: list[Any] = []
    match = fts5_match(terms, mode)
    if match is not None:
        branches.append(
            f"SELECT x.rowid AS rid, {corpus.order} AS ord, -{corpus.fts}.rank AS score "
            f"FROM {corpus.fts} JOIN {corpus.table} x ON x.rowid = {corpus.fts}.rowid "
            f"WHERE {corpus.fts} MATCH ? AND {scope.format(p='')}"
        )
        params += [match, *scope_params]
    if any(t.needs_substring and t.substring for t in terms):
        # "all": every term satisfied (words or substring); "any": some substring matches
        # (rows matching some term as words are already in branch 1).
        conditions = [
            _term_condition(corpus, t, words=(mode == "all"))
            for t in terms
            if mode == "all" or (t.needs_substring and t.substring)
        ]
        joined = (" AND " if mode == "all" else " OR ").join(c for c, _ in conditions if c)
        branches.append(
            f"SELECT x.rowid AS rid, {corpus.order} AS ord, 0.0 AS score FROM {corpus.table} x "
            f"WHERE ({joined}) AND {scope.format(p='+')}"  # '+': drive from the rowid sets
        )
        for _, condition_params in conditions:
            params += condition_params
        params += scope_params
    if not branches:
        return "", []
    sql = (
        f"SELECT {corpus.columns}, h.score, h.ord FROM ("
        f"SELECT rid, MAX(score) AS score, ord FROM ({' UNION ALL '.join(branches)}) "
        "GROUP BY rid ORDER BY score DESC, ord DESC, rid DESC LIMIT ?"
        f") h JOIN {corpus.table} x ON x.rowid = h.rid "
        "ORDER BY h.score DESC, h.ord DESC, h.rid DESC"
    )
    return sql, params
