"""A whole session dumped and loaded verbatim (``Store.dump_session`` / ``load_session``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from threadline._state import split_internal
from threadline.errors import InvalidArgumentError, SessionExistsError
from threadline.messages import decode_message, text_of
from threadline.store._contract.values import SessionDump, TreeNode
from threadline.store._sql.attach import SQL_SESSION_SHAS
from threadline.store._sql.base import EncodedRow, MessageRow, Row, Tx
from threadline.store._sql.dump_check import check_dump
from threadline.store._sql.registry import RegistryMixin
from threadline.store._sql.rows import datetime_to_us, dumps, us_to_datetime
from threadline.store._sql.text import SQL_STATE_UPSERT
from threadline.store._sql.tree import TreeMixin
from threadline.types import Compaction, SessionInfo

_SQL_ROWS = (
    "SELECT id, seq, parent_id, state_undo, data FROM tl_messages "
    "WHERE app = ? AND session_id = ? ORDER BY seq"
)
_SQL_HEAD = "SELECT head_id, last_seq FROM tl_sessions WHERE app = ? AND id = ?"
_SQL_OVERLAYS = (
    "SELECT id, summary, from_message_id, to_message_id, created_at FROM tl_compactions "
    "WHERE app = ? AND session_id = ? ORDER BY seq"
)
_SQL_SCOPED = (
    "SELECT owner, label, {value} FROM {table} WHERE app = ? AND ("
    "(owner = 'session' AND owner_id = ?) OR (owner = 'user' AND owner_id = ?) "
    "OR (owner = 'app' AND owner_id = '')) ORDER BY owner, label"
)
_SQL_BLOCKS = _SQL_SCOPED.format(value="content", table="tl_blocks")
_SQL_STATE = _SQL_SCOPED.format(value="value", table="tl_state").replace("label", "key")
_SQL_PROMPT = "SELECT prompt FROM tl_prompts WHERE app = ? AND session_id = ?"
_SQL_INSERT_SESSION = (
    "INSERT INTO tl_sessions (app, id, user_id, name, parent_session_id, model, source, "
    "input_tokens, output_tokens, estimated_cost, end_reason, metadata, head_id, last_seq, "
    "message_count, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_INSERT_OVERLAY = (
    "INSERT INTO tl_compactions (app, session_id, id, summary, from_message_id, "
    "to_message_id, seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SQL_UPSERT_BLOCK = (
    "INSERT INTO tl_blocks (app, owner, owner_id, label, content, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app, owner, owner_id, label) DO UPDATE SET "
    "content = excluded.content, updated_at = excluded.updated_at"
)
_SQL_INSERT_PROMPT = (
    "INSERT INTO tl_prompts (app, session_id, prompt, updated_at) VALUES (?, ?, ?, ?)"
)


def _by_owner(rows: list[Row], decode: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"session": {}, "user": {}, "app": {}}
    for owner, key, value in rows:
        out[owner][key] = json.loads(value) if decode else value
    return out


class TransferMixin(RegistryMixin, TreeMixin):
    """``dump_session`` and ``load_session`` on the shared SQL (both backends)."""

    def dump_session(self, app: str, session_id: str) -> SessionDump | None:
        """Everything stored for one session, or ``None`` (``Store.dump_session``)."""
        # One snapshot: a dump is several queries, and must be loadable (check_dump).
        return self._read("dump_session", lambda tx: self._dump(tx, app, session_id), snapshot=True)

    def _dump(self, tx: Tx, app: str, session_id: str) -> SessionDump | None:
        info = self._session_row(tx, app, session_id)
        head = tx.one(_SQL_HEAD, (app, session_id))
        if info is None or head is None:
            return None
        key = (app, session_id)
        rows = self._session_rows(tx, app, session_id, (_SQL_ROWS, key), 4, "inline")
        messages = [TreeNode(int(row[1]), row[2], decode_message(row[4])) for row in rows]
        undo = {row[0]: json.loads(row[3]) for row in rows if row[3]}
        overlays = [
            Compaction(r[0], r[1], r[2], r[3], us_to_datetime(int(r[4])))
            for r in tx.all(_SQL_OVERLAYS, key)
        ]
        scoped = (app, session_id, info.user_id if info.user_id is not None else "")
        blocks = _by_owner(tx.all(_SQL_BLOCKS, scoped), decode=False)
        state = _by_owner(tx.all(_SQL_STATE, scoped), decode=True)
        split_internal(state["session"])
        prompt = tx.one(_SQL_PROMPT, key)
        owned = info.user_id is not None
        return SessionDump(
            info, head[0], int(head[1]), messages, undo, overlays,
            blocks["session"], prompt[0] if prompt else None, state["session"],
            blocks["user"] if owned else {}, state["user"] if owned else {},
            blocks["app"], state["app"],
        )  # fmt: skip

    def load_session(self, app: str, dump: SessionDump, *, replace: bool = False) -> SessionInfo:
        """Write a dump as session ``dump.info.id`` of ``app`` (``Store.load_session``)."""
        return self.load_sessions([(app, dump)], replace=replace)[0]

    def load_sessions(
        self, items: Sequence[tuple[str, SessionDump]], *, replace: bool = False
    ) -> list[SessionInfo]:
        """Write ``(app, dump)`` pairs in one transaction (``Store.load_sessions``)."""
        items = list(items)
        keys: set[tuple[str, str]] = set()
        for app, dump in items:
            check_dump(dump)
            if (app, dump.info.id) in keys:
                raise InvalidArgumentError(f"session {dump.info.id!r} appears twice")
            keys.add((app, dump.info.id))
        encoded = [
            [self._encode(m.message, "attach", None) for m in dump.messages] for _, dump in items
        ]  # outside the transaction: encoding is the slow part
        return self._write("load_sessions", lambda tx: self._load(tx, items, encoded, replace))

    def _load(
        self,
        tx: Tx,
        items: list[tuple[str, SessionDump]],
        encoded: list[list[EncodedRow]],
        replace: bool,
    ) -> list[SessionInfo]:
        # Lock order (SQLBase): the registry rows in id order, then each session's own rows,
        # then the shared user/app rows of all of them in key order.
        order = sorted(range(len(items)), key=lambda i: (items[i][0], items[i][1].info.id))
        for i in order:
            app, session_id = items[i][0], items[i][1].info.id
            if self._claim_session_row(tx, app, session_id) and not replace:
                raise SessionExistsError(f"session {session_id!r} already exists in app {app!r}")
        # The attachments replaced sessions drop and the dumps refer to, locked up front in
        # one order (``_lock_attachments``).
        shas: dict[str, set[str]] = {}
        for i in order:
            app, session_id = items[i][0], items[i][1].info.id
            used = shas.setdefault(app, set())
            used.update(blob.sha256 for *_, blobs in encoded[i] for blob in blobs)
            if replace and self._FOR_UPDATE:
                used.update(row[0] for row in tx.all(SQL_SESSION_SHAS, (app, session_id)))
        for app in sorted(shas):
            self._lock_attachments(tx, app, shas[app])
        for i in order:
            self._load_one(tx, items[i][0], items[i][1], encoded[i])
        self._load_shared(tx, [items[i] for i in order])
        loaded = [self._session_row(tx, app, dump.info.id) for app, dump in items]
        assert all(info is not None for info in loaded)
        return [info for info in loaded if info is not None]

    def _load_one(self, tx: Tx, app: str, dump: SessionDump, encoded: list[EncodedRow]) -> None:
        info, session_id = dump.info, dump.info.id
        self._delete_session(tx, app, session_id)
        tx.send(
            _SQL_INSERT_SESSION,
            (app, session_id, info.user_id, info.name, info.parent_session_id, info.model,
             info.source, info.input_tokens, info.output_tokens, info.estimated_cost,
             info.end_reason, dumps(info.metadata), None, dump.last_seq, len(dump.messages),
             datetime_to_us(info.created_at), datetime_to_us(info.updated_at)),
        )  # fmt: skip
        self._load_messages(tx, app, session_id, dump, encoded)
        now = self._now_us()
        if dump.prompt is not None:
            tx.send(_SQL_INSERT_PROMPT, (app, session_id, dump.prompt, now))
        for key, value in sorted(dump.state.items()):
            tx.send(SQL_STATE_UPSERT, (app, "session", session_id, key, dumps(value)))
        for label, content in sorted(dump.blocks.items()):
            tx.send(_SQL_UPSERT_BLOCK, (app, "session", session_id, label, content, now))

    def _load_messages(
        self, tx: Tx, app: str, session_id: str, dump: SessionDump, encoded: list[EncodedRow]
    ) -> None:
        """Insert the (already checked, see ``check_dump``) tree, head and overlays."""
        nodes: dict[str, tuple[int, int]] = {}  # id -> (depth, path_bytes)
        for node, (message, data, size, blobs) in zip(dump.messages, encoded, strict=True):
            message_id, parent_id = message["id"], node.parent_id
            depth, path_bytes = nodes[parent_id] if parent_id is not None else (0, 0)
            record = dump.state_undo.get(message_id)
            undo = dumps(record) if record else None
            row = MessageRow(
                app, session_id, message_id, node.seq, parent_id, message["role"], size,
                depth + 1, path_bytes + size, message.get("createdAt"), undo, data,
                text_of(message),
            )  # fmt: skip
            self._insert_message(tx, row)
            if blobs:
                self._put_blobs(tx, app, session_id, message_id, blobs)
            self._index_skill_loads(tx, app, session_id, message)
            nodes[message_id] = (depth + 1, path_bytes + size)
        tx.send(
            "UPDATE tl_sessions SET head_id = ? WHERE app = ? AND id = ?",
            (dump.head_id, app, session_id),
        )
        for seq, overlay in enumerate(dump.compactions, start=1):
            tx.send(
                _SQL_INSERT_OVERLAY,
                (app, session_id, overlay.id, overlay.summary, overlay.from_message_id,
                 overlay.to_message_id, seq, datetime_to_us(overlay.created_at)),
            )  # fmt: skip

    def _load_shared(self, tx: Tx, items: list[tuple[str, SessionDump]]) -> None:
        """Upsert the user/app state and blocks of the dumps (a later dump's value wins)."""
        state: dict[tuple[str, str, str, str], Any] = {}
        blocks: dict[tuple[str, str, str, str], str] = {}
        for app, dump in items:
            user_id = dump.info.user_id or ""
            for owner, owner_id, values, labels in (
                ("user", user_id, dump.user_state, dump.user_blocks),
                ("app", "", dump.app_state, dump.app_blocks),
            ):
                state.update({(app, owner, owner_id, k): v for k, v in values.items()})
                blocks.update({(app, owner, owner_id, k): v for k, v in labels.items()})
        now = self._now_us()
        for (app, owner, owner_id, key), value in sorted(state.items()):
            tx.send(SQL_STATE_UPSERT, (app, owner, owner_id, key, dumps(value)))
        for (app, owner, owner_id, label), content in sorted(blocks.items()):
            tx.send(_SQL_UPSERT_BLOCK, (app, owner, owner_id, label, content, now))
