"""Stored files with versions (schema version 9 on SQLite, 8 on PostgreSQL): one row of
``tl_artifacts`` per version, naming its content by SHA-256 in the attachment store
(``store/_sql/attach.py``). Content is stored as a message's would be: ``bytes`` as base64
text (kind ``"bytes"``, as a data URL's payload), text as UTF-8 (kind ``"text"``), so a file
and a message holding the same data share one attachment. A row going (file or session
deleted, user forgotten) collects its attachment in the same transaction when nothing else
refers to it. The user scope is stored as the session id ``""`` (never a session's id).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from threadline._attachments import Blob, file_bytes
from threadline._validate import check_id
from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import StoredArtifact
from threadline.store._sql.attach import AttachmentMixin
from threadline.store._sql.base import Tx

_COLUMNS = (
    "user_id, session_id, filename, version, sha256, kind, part, mime_type, metadata, created"
)
_SCOPE = "app = ? AND user_id = ? AND session_id = ?"
_SQL_INSERT = (
    f"INSERT INTO tl_artifacts (app, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (app, user_id, session_id, filename, version) DO NOTHING"
)
_SQL_NEXT = (
    f"SELECT COALESCE(MAX(version) + 1, 0) FROM tl_artifacts WHERE {_SCOPE} AND filename = ?"
)
_SQL_ONE = f"SELECT {_COLUMNS} FROM tl_artifacts WHERE {_SCOPE} AND filename = ? AND version = ?"
_SQL_LATEST = (
    f"SELECT {_COLUMNS} FROM tl_artifacts WHERE {_SCOPE} AND filename = ? "
    "ORDER BY version DESC LIMIT 1"
)
SQL_APP_ARTIFACTS = (
    f"SELECT {_COLUMNS} FROM tl_artifacts WHERE app = ? "
    "ORDER BY user_id, session_id, filename, version"
)


def _blob_of(content: bytes | str) -> Blob:
    if isinstance(content, bytes | bytearray | memoryview):
        kind, data = "bytes", base64.b64encode(bytes(content))
    elif isinstance(content, str):
        try:
            kind, data = "text", content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"a stored file's text must be UTF-8: {exc}") from None
    else:
        raise InvalidArgumentError(
            f"a stored file's content must be bytes or str, got {type(content).__name__}"
        )
    return Blob(hashlib.sha256(data).hexdigest(), kind, data)


def _json_text(value: object, what: str) -> str:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{what} must be a JSON object, got {type(value).__name__}")
    try:
        return json.dumps(dict(value), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{what} must be JSON: {exc}") from None


def _check_name(filename: object) -> str:
    if not isinstance(filename, str) or not filename or "\x00" in filename:
        raise InvalidArgumentError(f"filename must be a non-empty string, got {filename!r:.80}")
    return filename


def _scope(session: str | None) -> str:
    return "" if session is None else check_id("session", session)


class ArtifactsMixin(AttachmentMixin):
    """Stored files: put (next version), get, list, delete (collecting), load verbatim."""

    def _row_of(self, tx: Tx | None, app: str, row: Sequence[Any]) -> StoredArtifact:
        content: bytes | str | None = None
        if tx is not None:
            data = self._blob_data(tx, app, row[4])
            content = file_bytes(data) if row[5] == "bytes" else data.decode("utf-8")
        return StoredArtifact(
            user_id=row[0],
            session_id=row[1] or None,
            filename=row[2],
            version=int(row[3]),
            content=content,
            part=json.loads(row[6]),
            mime_type=row[7],
            metadata=json.loads(row[8]),
            created=float(row[9]),
        )

    def _insert_artifact(self, tx: Tx, app: str, stored: StoredArtifact, version: int) -> bool:
        assert stored.content is not None
        blob = _blob_of(stored.content)
        self._put_blob(tx, app, blob)
        values = (app, stored.user_id, _scope(stored.session_id), stored.filename, version,
                  blob.sha256, blob.kind, _json_text(stored.part, "part"), stored.mime_type,
                  _json_text(stored.metadata, "metadata"), float(stored.created))  # fmt: skip
        return bool(tx.execute(_SQL_INSERT, values))

    def put_artifact(
        self,
        app: str,
        user_id: str,
        session: str | None,
        filename: str,
        data: bytes | str,
        *,
        part: Mapping[str, Any] | None = None,
        mime_type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        created: float | None = None,
    ) -> StoredArtifact:
        """Save the file's next version (``ArtifactsContract.put_artifact``)."""
        when = self._now_us() / 1e6 if created is None else created
        if isinstance(when, bool) or not isinstance(when, int | float) or not math.isfinite(when):
            raise InvalidArgumentError(f"created must be a finite number, got {when!r:.80}")
        if mime_type is not None and not isinstance(mime_type, str):
            raise InvalidArgumentError(f"mime_type must be a string, got {mime_type!r:.80}")
        _blob_of(data)  # refused before the transaction
        stored = StoredArtifact(user_id, session, _check_name(filename), 0, data,
                                dict(part or {}), mime_type, dict(metadata or {}),
                                float(when))  # fmt: skip
        key = (app, user_id, _scope(session), filename)

        def run(tx: Tx) -> StoredArtifact:
            while True:  # a concurrent save took the version (PostgreSQL): take the next
                row = tx.one(_SQL_NEXT, key)
                version = int(row[0]) if row else 0
                if self._insert_artifact(tx, app, stored, version):
                    return dataclasses.replace(stored, version=version)

        return self._write("put_artifact", run)

    def get_artifact(
        self,
        app: str,
        user_id: str,
        session: str | None,
        filename: str,
        version: int | None = None,
    ) -> StoredArtifact | None:
        """One version with its content, or ``None`` (``ArtifactsContract.get_artifact``)."""
        key = (app, user_id, _scope(session), _check_name(filename))
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise InvalidArgumentError(f"version must be an int, got {version!r:.80}")

        def run(tx: Tx) -> StoredArtifact | None:
            row = tx.one(_SQL_LATEST, key) if version is None else tx.one(_SQL_ONE, (*key, version))
            return None if row is None else self._row_of(tx, app, row)

        return self._read("get_artifact", run)

    def list_artifacts(
        self,
        app: str,
        user_id: str,
        session: str | None = None,
        filename: str | None = None,
    ) -> list[StoredArtifact]:
        """Every version of the scope's files, content not read
        (``ArtifactsContract.list_artifacts``)."""
        params: tuple[Any, ...] = (app, user_id, _scope(session))
        sql = f"SELECT {_COLUMNS} FROM tl_artifacts WHERE {_SCOPE}"
        if filename is not None:
            sql, params = sql + " AND filename = ?", (*params, _check_name(filename))
        sql += " ORDER BY filename, version"
        rows = self._read("list_artifacts", lambda tx: tx.all(sql, params))
        return [self._row_of(None, app, row) for row in rows]

    def delete_artifact(self, app: str, user_id: str, session: str | None, filename: str) -> int:
        """Delete every version of the file (``ArtifactsContract.delete_artifact``)."""
        where = f"{_SCOPE} AND filename = ?"
        params = (app, user_id, _scope(session), _check_name(filename))
        return self._write("delete_artifact", lambda tx: self._drop_artifacts(tx, where, params))

    def _drop_artifacts(self, tx: Tx, where: str, params: Sequence[Any]) -> int:
        """Delete the rows of ``tl_artifacts`` matching ``where`` (its first parameter the
        app) and collect their attachments; how many rows went."""
        app = params[0]
        shas = [row[0] for row in tx.all(f"SELECT sha256 FROM tl_artifacts WHERE {where}", params)]
        if not shas:
            return 0
        gone = tx.execute(f"DELETE FROM tl_artifacts WHERE {where}", params)
        self._lock_attachments(tx, app, shas)
        self._collect(tx, app, shas)
        return int(gone)

    def load_artifact(self, app: str, stored: StoredArtifact) -> None:
        """Write ``stored`` verbatim (``ArtifactsContract.load_artifact``)."""
        self._write("load_artifact", lambda tx: self._load_artifact(tx, app, stored))

    def _load_artifact(self, tx: Tx, app: str, stored: StoredArtifact) -> None:
        if not isinstance(stored, StoredArtifact) or stored.content is None:
            raise InvalidArgumentError("stored must be a StoredArtifact with its content")
        version = stored.version
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise InvalidArgumentError(f"a stored file's version must be >= 0, got {version!r}")
        _check_name(stored.filename)
        key = (app, stored.user_id, _scope(stored.session_id), stored.filename, version)
        if self._insert_artifact(tx, app, stored, version):
            return
        held = self._row_of(tx, app, tx.one(_SQL_ONE, key) or ())
        if held != stored:
            raise InvalidArgumentError(
                f"file {stored.filename!r} version {version} of user {stored.user_id!r} "
                "already exists with other values"
            )
