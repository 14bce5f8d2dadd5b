"""Attachments: long strings of a message stored out of row, once per app (docs/attachments.md).

Three tables: ``tl_attachments`` (one row per app and SHA-256), ``tl_attachment_chunks`` (the
content in chunks of at most ``CHUNK_BYTES``) and ``tl_message_refs`` (which message refers to
which attachment). All are written in the message's own transaction; the last reference
going (message, session or user deleted, message updated) deletes the attachment in that same
transaction, so a crash leaves neither a message without its attachment nor an orphan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter, methodcaller
from typing import Any

from threadline._attachments import (
    CHUNK_BYTES,
    MARKER_JSON,
    Blob,
    content_of,
    file_bytes,
    has_refs,
    ref_sha,
    restore_json,
)
from threadline.errors import AttachmentNotFoundError
from threadline.messages import decode_message
from threadline.store._sql.base import Row, SQLBase, Tx, _chunks, _in_list
from threadline.types import Message

_SQL_PUT = (
    "INSERT INTO tl_attachments (app, sha256, kind, byte_size, chunks) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (app, sha256) DO NOTHING"
)
_SQL_PUT_CHUNK = "INSERT INTO tl_attachment_chunks (app, sha256, idx, data) VALUES (?, ?, ?, ?)"
_SQL_REF = (
    "INSERT INTO tl_message_refs (app, session_id, message_id, sha256) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (app, session_id, message_id, sha256) DO NOTHING"
)
_SQL_CHUNKS = "SELECT data FROM tl_attachment_chunks WHERE app = ? AND sha256 = ? ORDER BY idx"
_SQL_KIND = "SELECT kind FROM tl_attachments WHERE app = ? AND sha256 = ?"
SQL_SESSION_HAS_REFS = "SELECT 1 FROM tl_message_refs WHERE app = ? AND session_id = ? LIMIT 1"
SQL_SESSION_SHAS = "SELECT DISTINCT sha256 FROM tl_message_refs WHERE app = ? AND session_id = ?"
"""The attachments a session's messages refer to (narrowed by ``AND message_id IN ...``)."""
_SQL_LOCK = "SELECT 1 FROM tl_attachments WHERE app = ? AND sha256 = ?"
_SQL_STILL_USED = (  # a message or a stored file (store/_sql/artifacts.py) refers to it
    "SELECT 1 FROM tl_message_refs WHERE app = ? AND sha256 = ? "
    "UNION ALL SELECT 1 FROM tl_artifacts WHERE app = ? AND sha256 = ? LIMIT 1"
)
_SQL_SESSION_REFERS = (
    "SELECT 1 FROM tl_message_refs WHERE app = ? AND sha256 = ? AND session_id = ? LIMIT 1"
)


_HAS_REFS = methodcaller("__contains__", MARKER_JSON)


class AttachmentMixin(SQLBase):
    """Writing, reading and collecting attachments; reads put them back into messages."""

    def _lock_attachments(self, tx: Tx, app: str, shas: Iterable[str]) -> None:
        """PostgreSQL: row-lock the stored attachments among ``shas``, in SHA-256 order, before
        a write that refers to (or drops) several of them: the per-message locks it takes later
        are then held already, so two such writes never wait on each other in a cycle."""
        if self._FOR_UPDATE:
            for sha in sorted(set(shas)):
                tx.one(_SQL_LOCK + self._FOR_UPDATE, (app, sha))

    def _put_blobs(
        self, tx: Tx, app: str, session_id: str, message_id: str, blobs: Sequence[Blob]
    ) -> None:
        # By SHA-256: the order ``_drop_refs`` locks attachments in too.
        for blob in sorted(blobs, key=lambda b: b.sha256):
            self._put_blob(tx, app, blob)
            tx.send(_SQL_REF, (app, session_id, message_id, blob.sha256))

    def _put_blob(self, tx: Tx, app: str, blob: Blob) -> None:
        """Store ``blob`` unless the app has it; the caller writes its reference in ``tx``."""
        count = max(1, -(-len(blob.data) // CHUNK_BYTES))
        while not tx.execute(_SQL_PUT, (app, blob.sha256, blob.kind, len(blob.data), count)):
            # Stored already: lock it (PostgreSQL; SQLite writes one at a time), so that a
            # collector (``_collect``) in another transaction either waits for this one
            # and then sees its reference, or has deleted it first (no row: insert again).
            if not self._FOR_UPDATE or tx.one(_SQL_LOCK + self._FOR_UPDATE, (app, blob.sha256)):
                break
        else:
            for idx in range(count):
                chunk = blob.data[idx * CHUNK_BYTES : (idx + 1) * CHUNK_BYTES]
                tx.send(_SQL_PUT_CHUNK, (app, blob.sha256, idx, chunk))

    def _drop_refs(
        self,
        tx: Tx,
        app: str,
        session_id: str,
        message_ids: Sequence[str] | None,
        reused: Sequence[Blob] = (),
    ) -> None:
        """Forget those messages' references (all of the session's with ``None``) and delete
        every attachment of the app that no message refers to any more.

        ``reused``: the attachments the transaction writes next (an update); the stored ones
        are locked here with the rest, in one order, so two updates swapping attachments do
        not wait on each other in a cycle."""
        key = (app, session_id)
        where = "app = ? AND session_id = ?"
        batches: list[Sequence[str]] = [()] if message_ids is None else _chunks(message_ids)
        shas: set[str] = set()
        for batch in batches:
            narrow = f" AND message_id IN {_in_list(len(batch))}" if batch else ""
            rows = tx.all(SQL_SESSION_SHAS + narrow, (*key, *batch))
            if rows:
                shas.update(row[0] for row in rows)
                tx.send(f"DELETE FROM tl_message_refs WHERE {where}{narrow}", (*key, *batch))
        # Locked before looking for other references: a writer reusing one holds its lock
        # until its reference is committed (``_put_blobs``).
        self._lock_attachments(tx, app, shas.union(blob.sha256 for blob in reused))
        self._collect(tx, app, shas)

    def _collect(self, tx: Tx, app: str, shas: Iterable[str]) -> None:
        """Delete those attachments of the app that nothing refers to any more (messages and
        stored files); the caller has locked them (``_lock_attachments``)."""
        for sha in sorted(set(shas)):
            if tx.one(_SQL_STILL_USED, (app, sha, app, sha)) is None:
                for table in ("tl_attachment_chunks", "tl_attachments"):
                    tx.send(f"DELETE FROM {table} WHERE app = ? AND sha256 = ?", (app, sha))

    @staticmethod
    def _blob_data(tx: Tx, app: str, sha: str) -> bytes:
        rows = tx.all(_SQL_CHUNKS, (app, sha))
        if not rows:
            raise AttachmentNotFoundError(f"app {app!r} has no attachment sha256:{sha[:12]}…")
        return b"".join(bytes(row[0]) for row in rows)

    def _session_rows(
        self,
        tx: Tx,
        app: str,
        session_id: str,
        query: tuple[str, Sequence[Any]],
        column: int,
        mode: str,
    ) -> list[Row]:
        """Rows of a query over one session's messages, made whole as by
        :meth:`_with_attachments`. The query and a probe for the session's attachments go
        in one round trip (``Tx.many``): a session without any costs no scan of the rows."""
        if mode == "ref":
            return tx.all(*query)
        rows, refs = tx.many([query, (SQL_SESSION_HAS_REFS, (app, session_id))])
        return self._with_attachments(tx, app, rows, column, mode) if refs else rows

    def _with_attachments(
        self, tx: Tx, app: str, rows: list[Row], column: int, mode: str
    ) -> list[Row]:
        """``rows`` with the JSON at ``column`` made whole (``mode`` ``"inline"``) or left
        holding references (``"ref"``)."""
        if mode == "ref" or not rows:
            return rows
        if not any(map(_HAS_REFS, map(itemgetter(column), rows))):  # C-level test per row
            return rows
        out: list[Row] = []
        for row in rows:
            data = row[column]
            if has_refs(data):
                row = (*row[:column], self._full(tx, app, data), *row[column + 1 :])
            out.append(row)
        return out

    def _one_message(self, tx: Tx, app: str, sql: str, params: Sequence[Any]) -> Message | None:
        row = tx.one(sql, params)
        return None if row is None else self._full_message(tx, app, row[0])

    def _full(self, tx: Tx, app: str, data: str) -> str:
        """Stored row JSON with its attachments put back (unchanged when it has none)."""
        if not has_refs(data):
            return data
        return restore_json(data, lambda sha: self._blob_data(tx, app, sha))

    def _full_message(self, tx: Tx, app: str, data: str) -> Message:
        return decode_message(self._full(tx, app, data))

    def read_attachment(self, app: str, ref: Any, *, session_id: str | None = None) -> bytes | str:
        """The content of an attachment of ``app``: ``bytes`` for file data, ``str`` for text.

        ``ref`` is a reference dict (``get_history(attachments="ref")``) or ``"sha256:<hex>"``.
        ``AttachmentNotFoundError`` for an attachment the app does not have (with
        ``session_id``: that no message of that session refers to).

        >>> import threadline
        >>> from threadline._attachments import ATTACH_MIN_BYTES
        >>> store = threadline.connect(":memory:")
        >>> long = "many words " * ATTACH_MIN_BYTES
        >>> part = {"type": "text", "text": long}
        >>> _ = store.append_messages("app", "s", [{"id": "m", "role": "user", "parts": [part]}])
        >>> ref = store.get_path("app", "s", attachments="ref")[0]["parts"][0]["text"]
        >>> ref["kind"], store.read_attachment("app", ref) == long
        ('text', True)
        """
        sha = ref_sha(ref)

        def run(tx: Tx) -> bytes | str:
            refers = (app, sha, session_id)
            if session_id is not None and tx.one(_SQL_SESSION_REFERS, refers) is None:
                raise AttachmentNotFoundError(
                    f"session {session_id!r} has no attachment sha256:{sha[:12]}…"
                )
            data = self._blob_data(tx, app, sha)
            kind = ref.get("kind") if isinstance(ref, dict) else None
            if kind is None:
                row = tx.one(_SQL_KIND, (app, sha))
                kind = row[0] if row else "bytes"
            return file_bytes(data) if kind == "bytes" else content_of(str(kind), data)

        return self._read("read_attachment", run)
