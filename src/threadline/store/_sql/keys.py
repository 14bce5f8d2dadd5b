"""HTTP API keys (schema version 3): rows of ``tl_api_keys``, looked up by hash."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import ApiKey
from threadline.store._sql.base import SQLBase, Tx
from threadline.store._sql.rows import us_to_datetime

_COLUMNS = "id, app, user_id, created_at, revoked_at"


def _row_to_key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], us_to_datetime(row[3]), row[4] is not None)


class KeysMixin(SQLBase):
    """HTTP API keys: add by hash, find by hash, list, revoke."""

    def add_api_key(self, key_id: str, app: str, user_id: str | None, key_hash: str) -> ApiKey:
        """Record a key by its hash (``KeysContract.add_api_key``)."""

        def run(tx: Tx) -> ApiKey:
            taken = tx.one(
                "SELECT id FROM tl_api_keys WHERE id = ? OR key_hash = ?", (key_id, key_hash)
            )
            if taken is not None:
                raise InvalidArgumentError(f"API key {taken[0]!r} already exists")
            tx.send(
                "INSERT INTO tl_api_keys (id, app, user_id, key_hash, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (key_id, app, user_id, key_hash, self._now_us()),
            )
            row = tx.one(f"SELECT {_COLUMNS} FROM tl_api_keys WHERE id = ?", (key_id,))
            assert row is not None
            return _row_to_key(row)

        return self._write("add_api_key", run)

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, or ``None`` (``KeysContract.find_api_key``)."""
        sql = f"SELECT {_COLUMNS} FROM tl_api_keys WHERE key_hash = ?"
        row = self._read("find_api_key", lambda tx: tx.one(sql, (key_hash,)))
        return _row_to_key(row) if row is not None else None

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, oldest first (``KeysContract.list_api_keys``)."""
        sql = f"SELECT {_COLUMNS} FROM tl_api_keys ORDER BY created_at, id"
        return [_row_to_key(row) for row in self._read("list_api_keys", lambda tx: tx.all(sql))]

    def revoke_api_key(self, key_id: str) -> bool:
        """Mark a key revoked (``KeysContract.revoke_api_key``)."""
        sql = "UPDATE tl_api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
        now = self._now_us()
        return bool(self._write("revoke_api_key", lambda tx: tx.execute(sql, (now, key_id))))
