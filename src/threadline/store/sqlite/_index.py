"""SQLite: the transaction view of a connection and the search index it keeps.

Messages reach the FTS5 tables in batches of :data:`_INDEX_BATCH` (one FTS5 segment per commit
is what makes naive appends slow): an append that finds a batch pending indexes it in its own
transaction, and a search puts whatever is still pending into in-memory tables inside its own
read, so results always include every committed message and a search never writes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from threadline._search_query import search_form, split_glued
from threadline.messages import text_of
from threadline.store._sql import SQLStore
from threadline.store._sql.base import MESSAGE_COLUMNS, MessageRow, Row, _chunks, _in_list
from threadline.store.sqlite._search import (
    _ENTRIES,
    _MESSAGES,
    _PENDING,
    _PENDING_TABLES,
    _WIDE,
    _Corpus,
)

# --------------------------------------------------------------------------- DML

_SQL_INSERT_MESSAGE = (
    f"INSERT INTO tl_messages ({MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (app, session_id, id) DO NOTHING"
)
_SQL_MESSAGE_ROWID = "SELECT rowid FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?"
_SQL_ENTRY_ROWID = "SELECT rowid FROM tl_entries WHERE app = ? AND label = ? AND key = ?"
_SQL_INDEX_MARK = "SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'indexed_upto'"
_SQL_SET_INDEX_MARK = "UPDATE tl_meta SET value = ? WHERE key = 'indexed_upto'"
_SQL_PENDING_INDEX = "SELECT rowid, app, data FROM tl_messages WHERE rowid > ? ORDER BY rowid"
_SQL_PENDING_PAGE = f"{_SQL_PENDING_INDEX} LIMIT 256"
_SQL_DELETE_CJK = "DELETE FROM tl_messages_cjk WHERE rowid = ?"
_INDEX_BATCH = 64
"""Pending messages that make an append index them all (one FTS5 segment per batch instead
of one per commit: the search index is by far the most expensive part of a write)."""


class _Tx:
    """The :class:`~threadline.store._sql.Tx` view of one connection (the writer or a reader),
    with that connection's in-memory index of messages not indexed yet (``_index_pending``).
    """

    __slots__ = ("conn", "doc_counts", "known_counts", "pending_count", "pending_version")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.pending_version: tuple[int, int] | None = None
        self.pending_count = 0
        #: Capped document counts of FTS expressions, made by the "all" pass of a search and
        #: reused by its "any" pass (see SQLiteStore._search_message_rows).
        self.doc_counts: dict[str, int] = {}
        #: Counts kept across searches with the time they were made at (see
        #: ``_scale._doc_count``).
        self.known_counts: dict[str, tuple[float, int]] = {}

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(sql, params).rowcount

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        row: Row | None = self.conn.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self.conn.execute(sql, params).fetchall()

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, params)

    def many(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        execute = self.conn.execute
        return [execute(sql, params).fetchall() for sql, params in queries]


class SQLiteIndex(SQLStore):
    """The SQLite dialect hooks that keep the search index (the rest is :class:`SQLiteStore`)."""

    #: The last known ``tl_meta.indexed_upto`` (a hint, re-read when it matters).
    _index_hint: int = 0
    #: This store's write commits (with ``PRAGMA data_version``: has the database changed?).
    _commits: int = 0
    #: A full batch is pending: the write transaction indexes it before it commits.
    _catch_up_due: bool = False

    # ------------------------------------------------------------------ search index

    @staticmethod
    def _index(conn: sqlite3.Connection, corpus: _Corpus, rowid: int, text: str) -> None:
        """Index ``text``, already in ``search_form`` (the callers need that form too)."""
        if text:  # rows without text (tool calls) need no index entries
            conn.execute(corpus.insert_fts, (rowid, split_glued(text)))
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
        if rowid <= self._index_hint:
            # A reused rowid: rows were deleted since the hint was read (by this write, say a
            # load with replace=True, or an earlier one, or another process) and the delete
            # trigger lowered the mark. Read it again, or nothing is indexed until rowids pass
            # the old mark and every search reads all those rows into memory.
            self._index_mark(tx.conn)
        if rowid - self._index_hint >= _INDEX_BATCH:
            # Not now: the text of a message with attachments is read back with them, and the
            # write stores them after this row (see _before_commit).
            self._catch_up_due = True
        return True

    def _before_commit(self, conn: sqlite3.Connection) -> None:
        """End of a write transaction: index the pending batch if one is full."""
        if self._catch_up_due:
            self._catch_up_index(conn)
            self._catch_up_due = False

    def _index_mark(self, conn: sqlite3.Connection) -> int:
        row = conn.execute(_SQL_INDEX_MARK).fetchone()
        mark = int(row[0]) if row else 0
        self._index_hint = mark
        return mark

    def _catch_up_index(self, conn: sqlite3.Connection) -> None:
        """Index every pending message (inside a write transaction on ``conn``), a page of
        rows at a time: an import of many messages leaves them all pending until its end."""
        mark = start = self._index_mark(conn)
        while rows := conn.execute(_SQL_PENDING_PAGE, (mark,)).fetchall():
            for rowid, app, data in rows:
                self._index_message_text(conn, rowid, self._text_of_row(conn, app, data))
            mark = rows[-1][0]
        if mark != start:
            self._index_hint = mark
            conn.execute(_SQL_SET_INDEX_MARK, (str(mark),))

    def _text_of_row(self, conn: sqlite3.Connection, app: str, data: str) -> str:
        """The searchable text of a stored row, its attachments put back."""
        return text_of(self._full_message(_Tx(conn), app, data))

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
        for rowid, app, data in rows:
            self._index_message_text(conn, rowid, self._text_of_row(conn, app, data), _PENDING)
        tx.pending_count = len(rows)
        tx.pending_version = version
        return bool(rows)

    def _index_message_text(
        self, conn: sqlite3.Connection, rowid: int, text: str, corpus: _Corpus = _MESSAGES
    ) -> None:
        text = search_form(text)
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
        self._index(conn, _ENTRIES, rowid, search_form(content))

    def _unindex_entry(self, tx: Any, app: str, label: str, key: str) -> None:
        row = tx.conn.execute(_SQL_ENTRY_ROWID, (app, label, key)).fetchone()
        if row is not None:
            self._unindex(tx.conn, _ENTRIES, row[0])
