"""The message tree's reads: one message, the head, root-to-leaf paths, tails and children."""

from __future__ import annotations

from typing import Any

from threadline.errors import MessageNotFoundError
from threadline.messages import decode_message
from threadline.store._contract.values import RecentPath
from threadline.store._sql.attach import SQL_SESSION_HAS_REFS, AttachmentMixin
from threadline.store._sql.base import Row, Tx, compactions_of
from threadline.store._sql.rows import chained_tail
from threadline.store._sql.text import (
    SQL_COMPACTIONS,
    SQL_HEAD_DEPTH,
    SQL_HEAD_MESSAGE,
    SQL_MESSAGE,
    SQL_NODE,
    SQL_PATH,
    SQL_PATH_HEAD,
    SQL_PATH_IDS,
    SQL_PATH_IDS_HEAD,
    SQL_RECENT,
    SQL_TAIL,
    SQL_TAIL_BY_SEQ,
    SQL_TAIL_HEAD,
)
from threadline.types import Compaction, Message


class PathsMixin(AttachmentMixin):
    """The message tree's reads: the head, paths (whole, tail, ids, recent, length), children."""

    def get_message(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> Message | None:
        """One stored message, or ``None``."""
        params = (app, session_id, message_id)
        return self._read("get_message", lambda tx: self._one_message(tx, app, SQL_MESSAGE, params))

    def get_head(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> Message | None:
        """The head message, or ``None``."""
        params = (app, session_id)
        return self._read(
            "get_head", lambda tx: self._one_message(tx, app, SQL_HEAD_MESSAGE, params)
        )

    def get_path(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[Message]:
        """Root→leaf path ending at ``leaf_id`` (default: the head)."""
        rows = self.get_path_encoded(app, session_id, leaf_id, attachments=attachments)
        return [decode_message(data) for _, data in rows]

    def get_path_encoded(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[tuple[str, str]]:
        """``(id, stored JSON)`` of :meth:`get_path`, so callers decode only what they show."""
        rows = self._path_rows(
            "get_path", SQL_PATH, SQL_PATH_HEAD, app, session_id, leaf_id, (1, attachments)
        )
        return [(row[0], row[1]) for row in rows]

    def get_history_encoded(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> tuple[list[tuple[str, str]], list[Compaction]]:
        """:meth:`get_path_encoded` and the session's overlays, in one read."""
        key = (app, session_id)
        path: tuple[str, tuple[Any, ...]]
        if leaf_id is None:
            path = (SQL_PATH_HEAD, (*key, *key, *key))
        else:
            path = (SQL_PATH, (*key, leaf_id, *key))

        def run(tx: Tx) -> tuple[list[Row], list[Row]]:
            queries = [path, (SQL_COMPACTIONS, key)]
            if attachments != "ref":
                queries.append((SQL_SESSION_HAS_REFS, key))
            rows, overlays, *refs = tx.many(queries)
            if refs and refs[0]:
                rows = self._with_attachments(tx, app, rows, 1, attachments)
            return rows, overlays

        rows, overlays = self._read("get_history_encoded", run)
        if leaf_id is not None and not rows:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return [(row[0], row[1]) for row in rows], compactions_of(overlays)

    def get_path_tail(
        self,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[tuple[str, str, int]]:
        """The newest ``count`` messages of the path as ``(id, stored JSON, depth)``, root side
        first; reads ``count`` rows at most. ``MessageNotFoundError`` for an unknown leaf."""
        return self._tail("get_path_tail", app, session_id, count, leaf_id, attachments, False)[0]

    def get_history_tail_encoded(
        self,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> tuple[list[tuple[str, str, int]], list[Compaction]]:
        """:meth:`get_path_tail` and the session's overlays, in one read."""
        return self._tail("get_history_tail", app, session_id, count, leaf_id, attachments, True)

    def _tail(
        self,
        operation: str,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None,
        attachments: str,
        overlays: bool,
    ) -> tuple[list[tuple[str, str, int]], list[Compaction]]:
        key = (app, session_id)
        params: tuple[Any, ...]
        if leaf_id is None:
            sql, params = SQL_TAIL_HEAD, (*key, *key, *key, count)
        else:
            sql, params = SQL_TAIL, (*key, leaf_id, *key, count)

        def run(tx: Tx) -> tuple[list[Any], list[Row]]:
            found = tx.all(SQL_COMPACTIONS, key) if overlays else []
            # An unbranched tail (the common case) is the newest rows by seq: one range scan
            # instead of a primary-key probe per message; the tree walk otherwise.
            if leaf_id is None:
                tail: list[Any] | None = chained_tail(tx.all(SQL_TAIL_BY_SEQ, (*key, count)))
                if tail is not None:  # already (id, data, depth) tuples
                    return self._with_attachments(tx, app, tail, 1, attachments), found
            rows = self._session_rows(tx, app, session_id, (sql, params), 1, attachments)
            return [(row[0], row[1], int(row[2])) for row in rows], found

        rows, found = self._read(operation, run)
        if leaf_id is not None and not rows:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return rows, compactions_of(found)

    def get_path_ids(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        generation: int | None = None,
    ) -> list[str]:
        """Ids of :meth:`get_path` without loading bodies."""
        rows = self._path_rows(
            "get_path_ids", SQL_PATH_IDS, SQL_PATH_IDS_HEAD, app, session_id, leaf_id
        )
        return [row[0] for row in rows]

    def _path_rows(
        self,
        operation: str,
        sql_leaf: str,
        sql_head: str,
        app: str,
        session_id: str,
        leaf_id: str | None,
        bodies: tuple[int, str] | None = None,
    ) -> list[Row]:
        """Rows of a path query; ``bodies`` = ``(column, attachments mode)`` puts the
        attachments back into the JSON at that column, in the same read."""
        key = (app, session_id)
        params: tuple[Any, ...]
        if leaf_id is None:
            sql, params = sql_head, (*key, *key, *key)
        else:
            sql, params = sql_leaf, (*key, leaf_id, *key)

        def run(tx: Tx) -> list[Row]:
            if bodies is None:
                return tx.all(sql, params)
            return self._session_rows(tx, app, session_id, (sql, params), *bodies)

        rows = self._read(operation, run)
        if leaf_id is None:
            return rows
        if not rows:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return rows

    def get_recent_path(
        self,
        app: str,
        session_id: str,
        max_bytes: int,
        min_messages: int = 1,
        *,
        generation: int | None = None,
    ) -> RecentPath:
        """Newest contiguous suffix of the head path within ``max_bytes`` (see base)."""
        key = (app, session_id)
        params = (*key, *key, max(int(min_messages), 1), int(max_bytes), *key)
        rows = self._read(
            "get_recent_path",
            lambda tx: self._session_rows(tx, app, session_id, (SQL_RECENT, params), 0, "inline"),
        )
        if not rows:
            return RecentPath(messages=[], truncated=False, total_content_bytes=0)
        return RecentPath(
            messages=[decode_message(row[0]) for row in rows],
            truncated=int(rows[0][1]) > 1,
            total_content_bytes=int(rows[-1][2]),
        )

    def get_path_length(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        generation: int | None = None,
    ) -> int:
        """Number of messages on the path (O(1): the leaf's stored depth)."""
        operation = "get_path_length"
        if leaf_id is None:
            row = self._read(operation, lambda tx: tx.one(SQL_HEAD_DEPTH, (app, session_id)))
            return int(row[0]) if row else 0
        node = self._read(operation, lambda tx: tx.one(SQL_NODE, (app, session_id, leaf_id)))
        if node is None:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return int(node[0])

    def get_children(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> list[Message]:
        """Children of that message, oldest first."""
        sql = (
            "SELECT data FROM tl_messages WHERE app = ? AND session_id = ? AND parent_id = ? "
            "ORDER BY seq"
        )
        params = (app, session_id, message_id)
        rows = self._read(
            "get_children",
            lambda tx: self._session_rows(tx, app, session_id, (sql, params), 0, "inline"),
        )
        return [decode_message(row[0]) for row in rows]
