"""Scoped state: merged reads, atomic deltas with undo records, rewind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from threadline._state import split_internal
from threadline.errors import (
    MessageNotFoundError,
)
from threadline.store._sql.base import (
    SQLBase,
    Tx,
)
from threadline.store._sql.rows import (
    dumps,
    merge_undo,
    stored_delta,
)
from threadline.store._sql.text import (
    SQL_NODE,
    SQL_SET_HEAD,
    SQL_STATE_DELETE,
    SQL_STATE_UPSERT,
    SQL_SUBTREE_UNDO,
)


class StateMixin(SQLBase):
    """Scoped state: merged reads, atomic deltas with undo records, rewind."""

    # ------------------------------------------------------------------ scoped state

    def get_state(
        self, app: str, session_id: str, user_id: str | None, *, generation: int | None = None
    ) -> dict[str, Any]:
        """Merged stored state: ``app:`` keys, ``user:`` keys of ``user_id``, session keys."""
        sql = (
            "SELECT owner, key, value FROM tl_state WHERE app = ? AND ("
            "(owner = 'app' AND owner_id = '') OR (owner = 'user' AND owner_id = ?) "
            "OR (owner = 'session' AND owner_id = ?))"
        )
        user = user_id if user_id is not None else ""
        rows = self._read("get_state", lambda tx: tx.all(sql, (app, user, session_id)))
        if user_id is None:
            rows = [row for row in rows if row[0] != "user"]
        state = {key: json.loads(value) for _, key, value in rows}
        split_internal(state)
        return state

    def update_state(
        self,
        app: str,
        session_id: str,
        user_id: str | None,
        delta: Mapping[str, Any],
        *,
        generation: int | None = None,
    ) -> None:
        """Apply a delta atomically (``None`` deletes; ``temp:`` keys ignored)."""
        stored = stored_delta(delta, user_id)
        if not stored:
            return

        def run(tx: Tx) -> None:
            self._apply_state(tx, app, session_id, user_id, stored)
            self._touch(tx, app, session_id, user_id)

        self._write("update_state", run, lock=(app, session_id, user_id))

    def rewind(
        self, app: str, session_id: str, before_message_id: str, *, generation: int | None = None
    ) -> None:
        """Head to the parent of ``before_message_id``; undo its subtree's session-state deltas."""

        def run(tx: Tx) -> None:
            node = tx.one(SQL_NODE, (app, session_id, before_message_id))
            if node is None:
                raise MessageNotFoundError(f"message {before_message_id!r} not in session")
            records = tx.all(
                SQL_SUBTREE_UNDO, (before_message_id, app, session_id, app, session_id)
            )
            for key, (existed, old) in merge_undo(row[0] for row in records).items():
                if existed:
                    tx.send(SQL_STATE_UPSERT, (app, "session", session_id, key, dumps(old)))
                else:
                    tx.send(SQL_STATE_DELETE, (app, "session", session_id, key))
            self._touch(tx, app, session_id)
            tx.send(SQL_SET_HEAD, (node[3], app, session_id))

        self._write("rewind", run, lock=(app, session_id, None))
