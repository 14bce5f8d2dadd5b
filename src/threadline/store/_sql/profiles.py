"""Each app's current profile (schema version 8 on SQLite, 7 on PostgreSQL): one row of
``tl_profiles`` per app, the JSON document with a write counter and a time."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import StoredProfile
from threadline.store._sql.base import SQLBase, Tx
from threadline.store._sql.rows import datetime_to_us, us_to_datetime

_COLUMNS = "app, document, version, updated_at"


def _row_to_profile(row: Sequence[Any]) -> StoredProfile:
    return StoredProfile(row[0], json.loads(row[1]), int(row[2]), us_to_datetime(row[3]))


def _document_text(document: object) -> str:
    if not isinstance(document, Mapping):
        raise InvalidArgumentError(
            f"a profile document must be a JSON object, got {type(document).__name__}"
        )
    try:
        # ASCII (the default): a lone surrogate in a text cannot reach the database.
        return json.dumps(dict(document), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise InvalidArgumentError(f"a profile document must be JSON: {exc}") from None


class ProfilesMixin(SQLBase):
    """Profiles: get, put (the counter grows in the same transaction), load verbatim, list."""

    def get_profile(self, app: str) -> StoredProfile | None:
        """The app's profile, or ``None`` (``ProfilesContract.get_profile``)."""
        sql = f"SELECT {_COLUMNS} FROM tl_profiles WHERE app = ?"
        row = self._read("get_profile", lambda tx: tx.one(sql, (app,)))
        return _row_to_profile(row) if row is not None else None

    def put_profile(self, app: str, document: Mapping[str, Any]) -> StoredProfile:
        """Replace the app's profile, counter + 1 (``ProfilesContract.put_profile``)."""
        text = _document_text(document)

        def run(tx: Tx) -> StoredProfile:
            # One statement: two writers cannot both read version n and both write n + 1.
            tx.send(
                "INSERT INTO tl_profiles (app, document, version, updated_at) "
                "VALUES (?, ?, 1, ?) ON CONFLICT (app) DO UPDATE SET "
                "document = excluded.document, version = tl_profiles.version + 1, "
                "updated_at = excluded.updated_at",
                (app, text, self._now_us()),
            )
            row = tx.one(f"SELECT {_COLUMNS} FROM tl_profiles WHERE app = ?", (app,))
            assert row is not None
            return _row_to_profile(row)

        return self._write("put_profile", run)

    def load_profile(self, app: str, stored: StoredProfile) -> None:
        """Write ``stored`` verbatim (``ProfilesContract.load_profile``)."""
        if not isinstance(stored, StoredProfile):
            raise InvalidArgumentError(
                f"stored must be a StoredProfile, got {type(stored).__name__}"
            )
        if (
            isinstance(stored.version, bool)
            or not isinstance(stored.version, int)
            or (stored.version < 1)
        ):
            raise InvalidArgumentError(f"a profile's version must be >= 1, got {stored.version!r}")
        values = (app, _document_text(stored.document), stored.version,
                  datetime_to_us(stored.updated_at))  # fmt: skip
        sql = (
            "INSERT INTO tl_profiles (app, document, version, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (app) DO UPDATE SET document = excluded.document, "
            "version = excluded.version, updated_at = excluded.updated_at"
        )
        self._write("load_profile", lambda tx: tx.send(sql, values))

    def list_profiles(self) -> list[StoredProfile]:
        """Every app's profile, by app (``ProfilesContract.list_profiles``)."""
        sql = f"SELECT {_COLUMNS} FROM tl_profiles ORDER BY app"
        return [_row_to_profile(r) for r in self._read("list_profiles", lambda tx: tx.all(sql))]
