"""SQL text shared by both backends (``?`` placeholders, portable SQL only).

Kept as module constants: identical strings let the drivers reuse prepared statements.
"""

from __future__ import annotations

from threadline.store._sql.rows import (
    SESSION_COLUMNS,
)

# --------------------------------------------------------------------------- SQL text
# Kept as module constants: identical strings let the drivers reuse prepared statements.

_UPDATED_AT = (
    "updated_at = CASE WHEN excluded.updated_at > tl_sessions.updated_at "
    "THEN excluded.updated_at ELSE tl_sessions.updated_at + 1 END"
)
_BUMP_UPDATED_AT = "updated_at = CASE WHEN ? > updated_at THEN ? ELSE updated_at + 1 END"

SQL_TOUCH = (
    "INSERT INTO tl_sessions (app, id, user_id, metadata, created_at, updated_at) "
    "VALUES (?, ?, ?, '{}', ?, ?) ON CONFLICT (app, id) DO UPDATE SET " + _UPDATED_AT
)
SQL_SESSION_AFTER_APPEND = (
    "INSERT INTO tl_sessions (app, id, user_id, metadata, created_at, updated_at, head_id, "
    "last_seq, message_count) VALUES (?, ?, ?, '{}', ?, ?, ?, ?, ?) "
    "ON CONFLICT (app, id) DO UPDATE SET head_id = excluded.head_id, "
    "last_seq = excluded.last_seq, "
    "message_count = tl_sessions.message_count + excluded.message_count, " + _UPDATED_AT
)
SQL_OWNER = "SELECT user_id FROM tl_sessions WHERE app = ? AND id = ?"
SQL_SESSION = f"SELECT {SESSION_COLUMNS} FROM tl_sessions WHERE app = ? AND id = ?"
SQL_HEAD_STATE = (
    "SELECT s.head_id, s.last_seq, m.depth, m.path_bytes, s.user_id FROM tl_sessions s "
    "LEFT JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id "
    "WHERE s.app = ? AND s.id = ?"
)
SQL_NODE = (
    "SELECT depth, path_bytes, byte_size, parent_id, seq FROM tl_messages "
    "WHERE app = ? AND session_id = ? AND id = ?"
)
SQL_STORED = (
    "SELECT data, depth, path_bytes FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?"
)
SQL_MESSAGE = "SELECT data FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?"
SQL_HEAD_MESSAGE = (
    "SELECT m.data FROM tl_sessions s JOIN tl_messages m "
    "ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id WHERE s.app = ? AND s.id = ?"
)
SQL_HEAD_DEPTH = (
    "SELECT m.depth FROM tl_sessions s JOIN tl_messages m "
    "ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id WHERE s.app = ? AND s.id = ?"
)
SQL_COMPACTIONS = (
    "SELECT id, summary, from_message_id, to_message_id, created_at FROM tl_compactions "
    "WHERE app = ? AND session_id = ? ORDER BY seq"
)
SQL_SET_HEAD = "UPDATE tl_sessions SET head_id = ? WHERE app = ? AND id = ?"
SQL_SKILL_UPSERT = (
    "INSERT INTO tl_skill_loads (app, session_id, label, skill_key, message_id, tool_call_id) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app, session_id, label, skill_key) DO UPDATE SET "
    "message_id = excluded.message_id, tool_call_id = excluded.tool_call_id"
)
SQL_SKILL_DELETE_FOR = (
    "DELETE FROM tl_skill_loads WHERE app = ? AND session_id = ? AND message_id = ?"
)

# Walks from a leaf to the root over the primary key; the path comes back root first.
_UP = (
    "WITH RECURSIVE p(id, parent_id, depth{extra}) AS ("
    "SELECT id, parent_id, depth{extra} FROM tl_messages "
    "WHERE app = ? AND session_id = ? AND id = {anchor} "
    "UNION ALL SELECT m.id, m.parent_id, m.depth{mextra} FROM p JOIN tl_messages m "
    "ON m.app = ? AND m.session_id = ? AND m.id = p.parent_id) "
)
_HEAD_ANCHOR = "(SELECT head_id FROM tl_sessions WHERE app = ? AND id = ?)"
SQL_PATH = (
    _UP.format(extra=", data", mextra=", m.data", anchor="?")
    + "SELECT id, data FROM p ORDER BY depth"
)
SQL_PATH_HEAD = (
    _UP.format(extra=", data", mextra=", m.data", anchor=_HEAD_ANCHOR)
    + "SELECT id, data FROM p ORDER BY depth"
)
# The newest ``n`` messages of the path up from a leaf (or the head), root side first: the
# walk stops after ``n`` rows, so it reads O(n) rows whatever the path's length.
_TAIL = (
    "WITH RECURSIVE p(id, parent_id, depth, data, n) AS ("
    "SELECT id, parent_id, depth, data, 1 FROM tl_messages "
    "WHERE app = ? AND session_id = ? AND id = {anchor} "
    "UNION ALL SELECT m.id, m.parent_id, m.depth, m.data, p.n + 1 FROM p JOIN tl_messages m "
    "ON m.app = ? AND m.session_id = ? AND m.id = p.parent_id WHERE p.n < ?) "
    "SELECT id, data, depth FROM p ORDER BY depth"
)
SQL_TAIL = _TAIL.format(anchor="?")
SQL_TAIL_HEAD = _TAIL.format(anchor=_HEAD_ANCHOR)
# The same tail read as the newest ``n`` rows by ``seq`` (one index range scan), with the
# head id on every row: right whenever those rows chain from the head (see chained_tail).
SQL_TAIL_BY_SEQ = (
    "SELECT m.id, m.data, m.depth, m.parent_id, s.head_id FROM tl_sessions s "
    "JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id "
    "WHERE s.app = ? AND s.id = ? ORDER BY m.seq DESC LIMIT ?"
)
SQL_PATH_IDS = _UP.format(extra="", mextra="", anchor="?") + "SELECT id FROM p ORDER BY depth"
SQL_PATH_IDS_HEAD = (
    _UP.format(extra="", mextra="", anchor=_HEAD_ANCHOR) + "SELECT id FROM p ORDER BY depth"
)
SQL_IS_ANCESTOR = (
    "WITH RECURSIVE p(id, parent_id, depth) AS ("
    "SELECT id, parent_id, depth FROM tl_messages WHERE app = ? AND session_id = ? AND id = ? "
    "UNION ALL SELECT m.id, m.parent_id, m.depth FROM p JOIN tl_messages m "
    "ON m.app = ? AND m.session_id = ? AND m.id = p.parent_id WHERE p.depth > ?) "
    "SELECT 1 FROM p WHERE id = ?"
)
# Newest-first walk from the head reading only byte_size/parent_id; stops past the budget.
SQL_RECENT = (
    "WITH RECURSIVE w(id, parent_id, n, acc) AS ("
    "SELECT m.id, m.parent_id, 1, CAST(m.byte_size AS BIGINT) FROM tl_sessions s "
    "JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id "
    "WHERE s.app = ? AND s.id = ? "
    "UNION ALL SELECT m.id, m.parent_id, w.n + 1, CAST(w.acc + m.byte_size AS BIGINT) FROM w "
    "JOIN tl_messages m ON m.app = ? AND m.session_id = ? AND m.id = w.parent_id "
    "WHERE w.n < ? OR w.acc + m.byte_size <= ?) "
    "SELECT m.data, m.depth, m.path_bytes FROM w JOIN tl_messages m "
    "ON m.app = ? AND m.session_id = ? AND m.id = w.id ORDER BY w.n DESC"
)
# Every message below (and including) one message, over the (app, session_id, parent_id) index.
_SUBTREE = (
    "WITH RECURSIVE sub(id) AS (SELECT CAST(? AS TEXT) UNION ALL SELECT m.id FROM tl_messages m "
    "JOIN sub ON m.app = ? AND m.session_id = ? AND m.parent_id = sub.id) "
)
SQL_SHIFT_SUBTREE = (
    _SUBTREE + "UPDATE tl_messages SET depth = depth - ?, path_bytes = path_bytes - ? "
    "WHERE app = ? AND session_id = ? AND id IN (SELECT id FROM sub)"
)
SQL_SUBTREE_UNDO = (
    _SUBTREE + "SELECT m.state_undo FROM sub JOIN tl_messages m "
    "ON m.app = ? AND m.session_id = ? AND m.id = sub.id "
    "WHERE m.state_undo IS NOT NULL ORDER BY m.seq"
)
SQL_NEWEST_LEAF = (
    "SELECT m.id FROM tl_messages m WHERE m.app = ? AND m.session_id = ? AND NOT EXISTS ("
    "SELECT 1 FROM tl_messages c WHERE c.app = m.app AND c.session_id = m.session_id "
    "AND c.parent_id = m.id) ORDER BY m.seq DESC LIMIT 1"
)
SQL_STATE_UPSERT = (
    "INSERT INTO tl_state (app, owner, owner_id, key, value) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (app, owner, owner_id, key) DO UPDATE SET value = excluded.value"
)
SQL_STATE_DELETE = "DELETE FROM tl_state WHERE app = ? AND owner = ? AND owner_id = ? AND key = ?"
SQL_SESSION_STATE = (
    "SELECT key, value FROM tl_state WHERE app = ? AND owner = 'session' AND owner_id = ?"
)
