"""What an app holds outside its sessions, dumped and loaded verbatim (``Store.dump_app`` /
``load_app``): its profile, app- and user-scoped blocks and state, keyed entries, API keys'
rows, stored files (every version, content included)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from threadline.errors import InvalidArgumentError
from threadline.store._contract.values import AppDump, Entry, StoredKey, StoredProfile
from threadline.store._sql.artifacts import SQL_APP_ARTIFACTS, ArtifactsMixin
from threadline.store._sql.base import Tx
from threadline.store._sql.dump_check import check_app_dump
from threadline.store._sql.profiles import _document_text
from threadline.store._sql.rows import datetime_to_us, dumps, us_to_datetime
from threadline.store._sql.text import SQL_STATE_UPSERT

_SQL_APPS = (
    "SELECT app FROM tl_sessions UNION SELECT app FROM tl_blocks UNION SELECT app FROM tl_state "
    "UNION SELECT app FROM tl_entries UNION SELECT app FROM tl_api_keys "
    "UNION SELECT app FROM tl_profiles UNION SELECT app FROM tl_artifacts ORDER BY 1"
)
_SQL_LABELS = "SELECT DISTINCT label FROM tl_entries WHERE app = ? ORDER BY label"
_SQL_SHARED = (
    "SELECT owner, owner_id, {key}, {value} FROM {table} "
    "WHERE app = ? AND owner IN ('app', 'user') ORDER BY owner, owner_id, {key}"
)
_SQL_BLOCKS = _SQL_SHARED.format(key="label", value="content", table="tl_blocks")
_SQL_STATE = _SQL_SHARED.format(key="key", value="value", table="tl_state")
_SQL_ENTRIES = (
    "SELECT label, key, content, description FROM tl_entries WHERE app = ? ORDER BY label, key"
)
_KEY_COLUMNS = "id, app, user_id, key_hash, created_at, revoked_at"
_SQL_KEYS = f"SELECT {_KEY_COLUMNS} FROM tl_api_keys WHERE app = ? ORDER BY created_at, id"
_SQL_KEY_CLASH = f"SELECT {_KEY_COLUMNS} FROM tl_api_keys WHERE id = ? OR key_hash = ?"
_SQL_INSERT_KEY = f"INSERT INTO tl_api_keys ({_KEY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
_SQL_PROFILE = "SELECT app, document, version, updated_at FROM tl_profiles WHERE app = ?"
_SQL_INSERT_PROFILE = (
    "INSERT INTO tl_profiles (app, document, version, updated_at) VALUES (?, ?, ?, ?)"
)
_SQL_UPSERT_BLOCK = (
    "INSERT INTO tl_blocks (app, owner, owner_id, label, content, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app, owner, owner_id, label) DO UPDATE SET "
    "content = excluded.content, updated_at = excluded.updated_at"
)


def _profile_of(row: Any) -> StoredProfile:
    return StoredProfile(row[0], json.loads(row[1]), int(row[2]), us_to_datetime(int(row[3])))


def _key_of(row: Any) -> StoredKey:
    revoked = us_to_datetime(int(row[5])) if row[5] is not None else None
    return StoredKey(row[0], row[1], row[2], row[3], us_to_datetime(int(row[4])), revoked)


class AppTransferMixin(ArtifactsMixin):
    """``list_app_names``, ``list_entry_labels``, ``dump_app`` and ``load_app`` on the
    shared SQL (both backends)."""

    def list_app_names(self) -> list[str]:
        """Every app holding anything, sorted (``Store.list_app_names``)."""
        return [str(row[0]) for row in self._read("list_app_names", lambda tx: tx.all(_SQL_APPS))]

    def list_entry_labels(self, app: str) -> list[str]:
        """The labels holding keyed entries in ``app`` (``Store.list_entry_labels``)."""
        rows = self._read("list_entry_labels", lambda tx: tx.all(_SQL_LABELS, (app,)))
        return [str(row[0]) for row in rows]

    def dump_app(self, app: str, *, keys: bool = False) -> AppDump:
        """The app's own data in one snapshot (``Store.dump_app``)."""
        return self._read("dump_app", lambda tx: self._dump_app(tx, app, keys), snapshot=True)

    def _dump_app(self, tx: Tx, app: str, keys: bool) -> AppDump:
        stored = tx.one(_SQL_PROFILE, (app,))
        dump = AppDump(
            keys=[_key_of(row) for row in tx.all(_SQL_KEYS, (app,))] if keys else None,
            profile=_profile_of(stored) if stored is not None else None,
        )
        for owner, owner_id, label, content in tx.all(_SQL_BLOCKS, (app,)):
            into = dump.blocks if owner == "app" else dump.user_blocks.setdefault(owner_id, {})
            into[label] = content
        for owner, owner_id, key, value in tx.all(_SQL_STATE, (app,)):
            into = dump.state if owner == "app" else dump.user_state.setdefault(owner_id, {})
            into[key] = json.loads(value)
        for label, key, content, description in tx.all(_SQL_ENTRIES, (app,)):
            dump.entries.setdefault(label, []).append(Entry(key, content, description))
        rows = tx.all(SQL_APP_ARTIFACTS, (app,))
        dump.artifacts.extend(self._row_of(tx, app, row) for row in rows)
        return dump

    def load_app(self, app: str, dump: AppDump, *, replace: bool = False) -> None:
        """Write an app's own data in one transaction (``Store.load_app``)."""
        check_app_dump(dump)
        self._write("load_app", lambda tx: self._load_app(tx, app, dump, replace))

    def _load_app(self, tx: Tx, app: str, dump: AppDump, replace: bool) -> None:
        now = self._now_us()
        if replace:
            for table in ("tl_blocks", "tl_state"):
                tx.send(f"DELETE FROM {table} WHERE app = ? AND owner IN ('app', 'user')", (app,))
            for label, key in tx.all("SELECT label, key FROM tl_entries WHERE app = ?", (app,)):
                self._unindex_entry(tx, app, label, key)
            tx.send("DELETE FROM tl_entries WHERE app = ?", (app,))
            if dump.keys is not None:
                tx.send("DELETE FROM tl_api_keys WHERE app = ?", (app,))
            tx.send("DELETE FROM tl_profiles WHERE app = ?", (app,))
            self._drop_artifacts(tx, "app = ?", (app,))
        shared = [("app", "", dump.blocks, dump.state)] + [
            ("user", user_id, dump.user_blocks.get(user_id, {}), dump.user_state.get(user_id, {}))
            for user_id in sorted(set(dump.user_blocks) | set(dump.user_state))
        ]
        for owner, owner_id, blocks, state in shared:
            for key, value in sorted(state.items()):
                tx.send(SQL_STATE_UPSERT, (app, owner, owner_id, key, dumps(value)))
            for label, content in sorted(blocks.items()):
                tx.send(_SQL_UPSERT_BLOCK, (app, owner, owner_id, label, content, now))
        for label, entries in sorted(dump.entries.items()):
            for entry in entries:
                self._upsert_entry(tx, app, label, entry.key, entry.content, entry.description, now)
        for key in dump.keys or ():
            self._load_key(tx, app, key)
        if dump.profile is not None:
            self._load_app_profile(tx, app, dump.profile)
        for artifact in dump.artifacts:
            self._load_artifact(tx, app, artifact)

    def _load_app_profile(self, tx: Tx, app: str, profile: StoredProfile) -> None:
        held = tx.one(_SQL_PROFILE, (app,))
        if held is not None:
            if _profile_of(held) == dataclasses.replace(profile, app=app):
                return  # the same profile, already here
            raise InvalidArgumentError(
                f"app {app!r} already has another profile (version {held[2]}); "
                "replace=True (threadline import --replace) overwrites it"
            )
        values = (app, _document_text(profile.document), profile.version,
                  datetime_to_us(profile.updated_at))  # fmt: skip
        tx.send(_SQL_INSERT_PROFILE, values)

    def _load_key(self, tx: Tx, app: str, key: StoredKey) -> None:
        created = datetime_to_us(key.created_at)
        revoked = datetime_to_us(key.revoked_at) if key.revoked_at is not None else None
        row = (key.id, app, key.user_id, key.key_hash, created, revoked)
        for held in tx.all(_SQL_KEY_CLASH, (key.id, key.key_hash)):
            if tuple(held) == row:
                return  # the same key, already here
            what = f"API key {held[0]!r}" if held[0] == key.id else "another API key's hash"
            raise InvalidArgumentError(f"{what} already exists with other values (key {key.id!r})")
        tx.send(_SQL_INSERT_KEY, row)
