"""The SQL of PostgreSQL's own writes: a message row with its search text, the session
lock, an append's head-state read, an entry upsert, and the word index of a long text."""

from __future__ import annotations

import functools

from threadline.store._sql.base import MESSAGE_COLUMNS, Tx, _in_list
from threadline.store._sql.text import SQL_HEAD_STATE
from threadline.store.postgres._schema import CHUNK_OVERLAP, CHUNK_TSV, TSV_CHARS
from threadline.store.postgres._search import lowered_form

__all__ = [
    "INSERT_MESSAGE",
    "IN_LIST_MAX",
    "LOCK_SESSION",
    "UPSERT_ENTRY",
    "head_state_sql",
    "index_long_text",
    "search_text",
]

# No ON CONFLICT: the append read which ids are stored before (head_state_sql), under the
# session's lock, so a conflict here is a bug and fails the transaction loudly.
INSERT_MESSAGE = (
    f"INSERT INTO tl_messages ({MESSAGE_COLUMNS}, search_text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# Registers the session if missing and row-locks it, in one statement: "ON CONFLICT DO
# UPDATE ... WHERE false" locks the existing row without writing a new version of it (the
# same as "ON CONFLICT DO NOTHING" + "SELECT ... FOR UPDATE", one round trip fewer); a row
# this statement inserts is ours until COMMIT anyway.
LOCK_SESSION = (
    "INSERT INTO tl_sessions (app, id, user_id, metadata, created_at, updated_at) "
    "VALUES (?, ?, ?, '{}', ?, ?) ON CONFLICT (app, id) DO UPDATE SET id = excluded.id "
    "WHERE false"
)


@functools.lru_cache(maxsize=64)
def head_state_sql(count: int) -> str:
    """SQL_HEAD_STATE and which of the append's ``count`` ids are stored already, as their
    positions in the batch (numbers: nothing to decode). The ids are listed one by one
    (``CASE``/``IN (?, ...)``, each id twice): a prepared statement's generic plan then probes
    the primary key per id, where an array parameter of unknown length may be planned as a
    scan of the session's messages (and an array costs psycopg more to send). Past
    :data:`IN_LIST_MAX` ids they go as one array (each array twice). A seventh column says
    whether the registry row is new, made by this transaction's lock (``LOCK_SESSION``):
    the session did not exist before the append (``if_head`` appends need it)."""
    if count <= IN_LIST_MAX:
        position = "CASE i.id " + " ".join(f"WHEN ? THEN {n}" for n in range(1, count + 1))
        position, ids = position + " END", _in_list(count)
    else:
        position = "array_position(CAST(? AS TEXT[]), i.id)"
        ids = "(SELECT unnest(CAST(? AS TEXT[])))"
    return SQL_HEAD_STATE.replace(
        " FROM tl_sessions s ",
        f", ARRAY(SELECT {position} FROM tl_messages i "
        f"WHERE i.app = s.app AND i.session_id = s.id AND i.id IN {ids}), "
        "s.xmin = pg_current_xact_id()::xid FROM tl_sessions s ",
    )


IN_LIST_MAX = 400
UPSERT_ENTRY = (
    "INSERT INTO tl_entries (app, label, key, content, description, updated_at, search_text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app, label, key) DO UPDATE SET "
    "content = excluded.content, description = excluded.description, "
    "updated_at = excluded.updated_at, search_text = excluded.search_text"
)


def index_long_text(tx: Tx, app: str, session_id: str, message_id: str, text: str) -> None:
    """Word-index the part of a long text that ``tl_messages.tsv`` does not hold, in chunks
    (each overlapping the previous by a little, so a phrase across a boundary is found)."""
    for idx, start in enumerate(range(TSV_CHARS, len(text), TSV_CHARS), start=1):
        chunk = text[start - CHUNK_OVERLAP : start + TSV_CHARS]
        tx.send(_INSERT_CHUNK, (app, session_id, message_id, idx, chunk, chunk))


_INSERT_CHUNK = (
    f"INSERT INTO tl_message_chunks (app, session_id, message_id, idx, tsv) "
    f"VALUES (?, ?, ?, ?, {CHUNK_TSV})"
)


def search_text(text: str) -> str:
    """Text of the search columns (``_search.lowered_form``: lowercased by Python, like
    the query's substrings, so a plain, trigram-indexed ``LIKE`` finds them); NUL becomes a
    space."""
    return lowered_form(text.replace("\x00", " "))
