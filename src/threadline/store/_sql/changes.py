"""The change log: writes to a session that its messages' ``seq`` does not tell.

An append is seen from ``seq`` alone; an edit (``update_message``), a delete
(``delete_messages``, ``clear_messages``) or a session block written leaves no such trace, so
each logs one ``tl_changes`` row in its own transaction: the session's ``updated_at`` after
the write (its *stamp*, strictly increasing per session), a kind and the ids or labels
involved (never a message body). Event streams (server/_events.py) read the rows above the
stamp they last saw, whichever process wrote them. Rows older than :data:`RETENTION_US` are
pruned by the next logged write to the session; a session's rows go with it.

A deleted session leaves one ``gone`` row (its generation and owner, stamped with the time of
the delete) for the streams of the session list (``GET /v1/events``); those rows are pruned
by later deletes in the app, over a partial index that no other row enters.
"""

from __future__ import annotations

import json
from typing import Any

from threadline.store._contract.values import Change
from threadline.store._sql.base import SQLBase, Tx

RETENTION_US = 3600 * 1_000_000
"""How long a logged change is kept (µs): far longer than any event poll interval."""

_SQL_LOG = (
    "INSERT INTO tl_changes (app, session_id, stamp, kind, payload) "
    "SELECT app, id, updated_at, ?, ? FROM tl_sessions WHERE app = ? AND id = ?"
)
_SQL_PRUNE = "DELETE FROM tl_changes WHERE app = ? AND session_id = ? AND stamp < ?"
_SQL_READ = (
    "SELECT stamp, kind, payload FROM tl_changes WHERE app = ? AND session_id = ? "
    "AND stamp > ? AND kind <> 'gone' ORDER BY stamp, kind"
)
_SQL_FORGET = "DELETE FROM tl_changes WHERE app = ? AND session_id = ? AND kind <> 'gone'"
_SQL_GONE = (
    "INSERT INTO tl_changes (app, session_id, stamp, kind, payload) "
    "SELECT app, id, ?, 'gone', ? FROM tl_sessions WHERE app = ? AND id = ? "
    "ON CONFLICT (app, session_id, stamp, kind) DO NOTHING"
)
_SQL_OWNER_GENERATION = "SELECT generation, user_id FROM tl_sessions WHERE app = ? AND id = ?"
_SQL_PRUNE_GONE = "DELETE FROM tl_changes WHERE app = ? AND kind = 'gone' AND stamp < ?"
_SQL_READ_GONE = (
    "SELECT stamp, session_id, payload FROM tl_changes WHERE app = ? AND kind = 'gone' "
    "AND stamp > ? ORDER BY stamp, session_id"
)


def log_change(
    tx: Tx, app: str, session_id: str, kind: str, payload: dict[str, Any], now_us: int
) -> None:
    """Log one change, under the stamp the session's row has now: call it after the write
    touched the session (``SQLBase._touch``), in the same transaction."""
    tx.send(_SQL_PRUNE, (app, session_id, now_us - RETENTION_US))
    tx.send(_SQL_LOG, (kind, json.dumps(payload, separators=(",", ":")), app, session_id))


def forget_changes(tx: Tx, app: str, session_id: str, now_us: int, existed: bool) -> None:
    """Drop the session's log and, if it ``existed``, leave a ``gone`` row: call it before
    its registry row is deleted, in the same transaction."""
    tx.send(_SQL_FORGET, (app, session_id))
    row = tx.one(_SQL_OWNER_GENERATION, (app, session_id)) if existed else None
    if row is None:
        return
    tx.send(_SQL_PRUNE_GONE, (app, now_us - RETENTION_US))
    payload = json.dumps({"generation": row[0], "user_id": row[1]}, separators=(",", ":"))
    tx.send(_SQL_GONE, (now_us, payload, app, session_id))


class ChangesMixin(SQLBase):
    """Reading the change log."""

    def get_changes(
        self, app: str, session_id: str, after_stamp: int = 0, *, generation: int | None = None
    ) -> list[Change]:
        """The logged changes of the session with a stamp above ``after_stamp``, oldest first."""
        rows = self._read(
            "get_changes", lambda tx: tx.all(_SQL_READ, (app, session_id, after_stamp))
        )
        return [Change(int(stamp), str(kind), json.loads(payload)) for stamp, kind, payload in rows]

    def get_session_deletions(self, app: str, after_stamp: int = 0) -> list[Change]:
        """The app's sessions deleted after ``after_stamp`` (µs), oldest first."""
        rows = self._read(
            "get_session_deletions", lambda tx: tx.all(_SQL_READ_GONE, (app, after_stamp))
        )
        return [
            Change(int(stamp), "gone", {"session_id": sid, **json.loads(payload)})
            for stamp, sid, payload in rows
        ]
