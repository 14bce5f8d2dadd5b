"""SQLite: the schema, its migrations and the schema version (DDL is each backend's own)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

from threadline._search_query import search_form, split_glued
from threadline.store.sqlite._search import _ENTRIES, _MESSAGES, _Corpus

# --------------------------------------------------------------------------- schema

_SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS tl_sessions (
        app TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, name TEXT, parent_session_id TEXT,
        model TEXT, source TEXT, input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0, estimated_cost REAL NOT NULL DEFAULT 0,
        end_reason TEXT, metadata TEXT NOT NULL DEFAULT '{}', head_id TEXT,
        last_seq INTEGER NOT NULL DEFAULT 0, message_count INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
        PRIMARY KEY (app, id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tl_sessions_recent ON tl_sessions (app, updated_at DESC, id DESC)",
    "CREATE INDEX IF NOT EXISTS tl_sessions_user "
    "ON tl_sessions (app, user_id, updated_at DESC, id DESC)",
    # A rowid table: FTS rows are keyed by tl_messages.rowid. ``data`` last (see MESSAGE_COLUMNS).
    """CREATE TABLE IF NOT EXISTS tl_messages (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
        parent_id TEXT, role TEXT NOT NULL, byte_size INTEGER NOT NULL, depth INTEGER NOT NULL,
        path_bytes INTEGER NOT NULL, created_at TEXT, state_undo TEXT, data TEXT NOT NULL,
        PRIMARY KEY (app, session_id, id), UNIQUE (app, session_id, seq))""",
    "CREATE INDEX IF NOT EXISTS tl_messages_parent "
    "ON tl_messages (app, session_id, parent_id, seq)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_messages_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    # detail=none: substring lookups go through LIKE, which re-checks the stored text anyway.
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_messages_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    # Texts holding CJK-like scripts or symbols (see _WIDE), kept alongside the trigram index:
    # one- and two-character substrings ("東京", "🙂") cannot use trigrams and are scanned here.
    "CREATE TABLE IF NOT EXISTS tl_messages_cjk (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS tl_compactions (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, summary TEXT NOT NULL,
        from_message_id TEXT NOT NULL, to_message_id TEXT NOT NULL, seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL, PRIMARY KEY (app, session_id, id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_skill_loads (
        app TEXT NOT NULL, session_id TEXT NOT NULL, label TEXT NOT NULL,
        skill_key TEXT NOT NULL, message_id TEXT NOT NULL, tool_call_id TEXT,
        PRIMARY KEY (app, session_id, label, skill_key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_blocks (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, label TEXT NOT NULL,
        content TEXT NOT NULL, updated_at INTEGER NOT NULL,
        PRIMARY KEY (app, owner, owner_id, label)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_prompts (
        app TEXT NOT NULL, session_id TEXT NOT NULL, prompt TEXT NOT NULL,
        updated_at INTEGER NOT NULL, PRIMARY KEY (app, session_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_entries (
        app TEXT NOT NULL, label TEXT NOT NULL, key TEXT NOT NULL, content TEXT NOT NULL,
        description TEXT, updated_at INTEGER NOT NULL, PRIMARY KEY (app, label, key))""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_entries_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS tl_entries_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    """CREATE TABLE IF NOT EXISTS tl_state (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (app, owner, owner_id, key)) WITHOUT ROWID""",
)


# Messages reach the search index in batches (see SQLiteStore._catch_up_index): every message
# with rowid <= tl_meta.indexed_upto is indexed, later ones are pending. SQLite reuses the
# highest rowid after a delete, so deleting rows lowers the mark to the highest remaining
# rowid; a reused rowid is then pending again instead of silently unindexed.
_SCHEMA_V1_TRIGRAM = (
    "INSERT INTO tl_meta (key, value) VALUES ('indexed_upto', '0') ON CONFLICT (key) DO NOTHING",
    # No WHEN clause: rows of one DELETE go in any order, so every row re-checks the mark.
    """CREATE TRIGGER IF NOT EXISTS tl_messages_index_mark AFTER DELETE ON tl_messages
    BEGIN
        UPDATE tl_meta SET value = CAST((SELECT COALESCE(MAX(rowid), 0) FROM tl_messages) AS TEXT)
        WHERE key = 'indexed_upto'
        AND CAST(value AS INTEGER) > (SELECT COALESCE(MAX(rowid), 0) FROM tl_messages);
    END""",
)


# Version 2: attachments (store/_sql/attach.py). Chunks live in a rowid table: large blobs
# make poor WITHOUT ROWID rows.
_SCHEMA_V2 = (
    """CREATE TABLE IF NOT EXISTS tl_attachments (
        app TEXT NOT NULL, sha256 TEXT NOT NULL, kind TEXT NOT NULL,
        byte_size INTEGER NOT NULL, chunks INTEGER NOT NULL,
        PRIMARY KEY (app, sha256)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS tl_attachment_chunks (
        app TEXT NOT NULL, sha256 TEXT NOT NULL, idx INTEGER NOT NULL, data BLOB NOT NULL,
        UNIQUE (app, sha256, idx))""",
    """CREATE TABLE IF NOT EXISTS tl_message_refs (
        app TEXT NOT NULL, session_id TEXT NOT NULL, message_id TEXT NOT NULL,
        sha256 TEXT NOT NULL,
        PRIMARY KEY (app, session_id, message_id, sha256)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tl_message_refs_sha ON tl_message_refs (app, sha256)",
)


# Version 3: HTTP API keys (store/_sql/keys.py), only a hash of each key.
_SCHEMA_V3 = (
    """CREATE TABLE IF NOT EXISTS tl_api_keys (
        id TEXT NOT NULL PRIMARY KEY, app TEXT NOT NULL, user_id TEXT,
        key_hash TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, revoked_at INTEGER)""",
)


# Version 4: every append moves its session's updated_at, and SQLite rewrites each index
# entry holding that column: a session without a user no longer has one in the per-user
# listing index (a partial index now), so its appends write one page fewer. The listings by
# user (``user_id = ?`` implies NOT NULL) still use it; the sessions without a user, counted
# and searched by ``user_id IS NULL``, get an index of their own that no append touches.
_SCHEMA_V4 = (
    "DROP INDEX IF EXISTS tl_sessions_user",
    "CREATE INDEX IF NOT EXISTS tl_sessions_owned "
    "ON tl_sessions (app, user_id, updated_at DESC, id DESC) WHERE user_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS tl_sessions_ownerless "
    "ON tl_sessions (app, user_id) WHERE user_id IS NULL",
)


def _migrate_to_1(conn: sqlite3.Connection) -> None:
    for statement in (*_SCHEMA_V1, *_SCHEMA_V1_TRIGRAM):
        conn.execute(statement)


def _migrate_to_2(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V2:
        conn.execute(statement)


def _migrate_to_3(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V3:
        conn.execute(statement)


def _migrate_to_4(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V4:
        conn.execute(statement)


# Version 5: the search index holds text in NFC (``_search_query.search_form``), as queries
# are read, and its word table holds scripts written without spaces split from ASCII words
# glued to them (``split_glued``, which version 7 widened to every Latin letter). Texts
# indexed before in another form are indexed again; the FTS5 tables keep the text they
# index, so the messages need not be decoded.
def _non_ascii_rows(conn: sqlite3.Connection, fts: str) -> Iterator[tuple[int, str]]:
    """``(rowid, text)`` of the texts in ``fts`` holding a non-ASCII character (more bytes
    than characters), read a page at a time (the caller rewrites rows between pages)."""
    page = (
        f"SELECT rowid, text FROM {fts} WHERE rowid > ? "
        "AND length(CAST(text AS BLOB)) > length(text) ORDER BY rowid LIMIT 500"
    )
    after = 0
    while rows := conn.execute(page, (after,)).fetchall():
        yield from rows
        after = rows[-1][0]


def _migrate_to_5(conn: sqlite3.Connection) -> None:
    for corpus in (_MESSAGES, _ENTRIES):
        for rowid, text in _non_ascii_rows(conn, corpus.fts):
            normal = search_form(text)
            words = split_glued(normal)
            if words == text:  # then normal == text too: split_glued only adds spaces
                continue
            conn.execute(corpus.delete_fts, (rowid,))
            conn.execute(corpus.insert_fts, (rowid, words))
            if normal != text:
                conn.execute(corpus.delete_tri, (rowid,))
                conn.execute(corpus.insert_tri, (rowid, normal))
                if corpus is _MESSAGES:  # only messages have a CJK side table
                    conn.execute(
                        f"UPDATE {corpus.cjk} SET text = ? WHERE rowid = ?", (normal, rowid)
                    )


# Version 6: a session's identity has a generation (docs/guarantees.md): every creation of an
# (app, id) takes the next value of one store-wide counter (tl_meta 'generation'), so a
# session deleted and created again is told apart from the old one; never reused, because
# the counter only grows. A trigger numbers the row in the inserting transaction, whatever
# statement inserts it (create, the upserts of appends and touches, usage, import); an
# upsert that finds the row updates it and fires no INSERT trigger. ``tl_changes`` logs the
# writes that appends do not tell (edits, deletes, blocks) for the event streams of
# docs/server.md, under the session's ``updated_at`` after the write (store/_sql/changes.py).
_SCHEMA_V6 = (
    "ALTER TABLE tl_sessions ADD COLUMN generation INTEGER",
    """CREATE TRIGGER IF NOT EXISTS tl_sessions_generation AFTER INSERT ON tl_sessions
    BEGIN
        UPDATE tl_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)
        WHERE key = 'generation';
        UPDATE tl_sessions SET generation =
            (SELECT CAST(value AS INTEGER) FROM tl_meta WHERE key = 'generation')
        WHERE app = NEW.app AND id = NEW.id;
    END""",
    """CREATE TABLE IF NOT EXISTS tl_changes (
        app TEXT NOT NULL, session_id TEXT NOT NULL, stamp INTEGER NOT NULL, kind TEXT NOT NULL,
        payload TEXT NOT NULL, PRIMARY KEY (app, session_id, stamp, kind)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS tl_changes_gone ON tl_changes (app, stamp) WHERE kind = 'gone'",
)


def _migrate_to_6(conn: sqlite3.Connection) -> None:
    # Idempotent, as every migration here: a store whose tl_meta was lost runs them all again.
    columns = {row[1] for row in conn.execute("PRAGMA table_info(tl_sessions)")}
    if "generation" not in columns:
        conn.execute(_SCHEMA_V6[0])
    # Sessions without one get the next numbers (oldest first), after any already given, and
    # the counter continues after them: a generation is never handed out twice.
    (last,) = conn.execute("SELECT COALESCE(MAX(generation), 0) FROM tl_sessions").fetchone()
    keys = conn.execute(
        "SELECT app, id FROM tl_sessions WHERE generation IS NULL ORDER BY created_at, app, id"
    ).fetchall()
    conn.executemany(
        "UPDATE tl_sessions SET generation = ? WHERE app = ? AND id = ?",
        [(n, app, sid) for n, (app, sid) in enumerate(keys, start=last + 1)],
    )
    conn.execute(
        "INSERT INTO tl_meta (key, value) VALUES ('generation', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = "
        "MAX(CAST(tl_meta.value AS INTEGER), CAST(excluded.value AS INTEGER))",
        (str(last + len(keys)),),
    )
    for statement in _SCHEMA_V6[1:]:
        conn.execute(statement)


# Version 7: split_glued also splits accented (any Latin-script) letters from scripts written
# without spaces (``私はCaféで``): message texts holding such scripts (the CJK side table lists
# them) and entries are split again where that adds a space.
def _migrate_to_7(conn: sqlite3.Connection) -> None:
    page = (
        f"SELECT c.rowid, f.text FROM {_MESSAGES.cjk} c JOIN {_MESSAGES.fts} f "
        "ON f.rowid = c.rowid WHERE c.rowid > ? ORDER BY c.rowid LIMIT 500"
    )
    after = 0
    while rows := conn.execute(page, (after,)).fetchall():
        _resplit(conn, _MESSAGES, rows)
        after = rows[-1][0]
    _resplit(conn, _ENTRIES, list(_non_ascii_rows(conn, _ENTRIES.fts)))


def _resplit(conn: sqlite3.Connection, corpus: _Corpus, rows: list[tuple[int, str]]) -> None:
    for rowid, text in rows:
        words = split_glued(text)  # the indexed text is in NFC (schema 5) and split before
        if words != text:
            conn.execute(corpus.delete_fts, (rowid,))
            conn.execute(corpus.insert_fts, (rowid, words))


# Version 8: each app's current profile (store/_sql/profiles.py), a JSON document with a write
# counter; a new table, so code of version 7 keeps reading the rest until it meets version 8.
def _migrate_to_8(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE IF NOT EXISTS tl_profiles (
        app TEXT NOT NULL PRIMARY KEY, document TEXT NOT NULL, version INTEGER NOT NULL,
        updated_at INTEGER NOT NULL)"""
    )


# Version 9: stored files with versions (store/_sql/artifacts.py, ADK artifacts), their
# content an attachment of the app; new tables only, as version 8.
def _migrate_to_9(conn: sqlite3.Connection) -> None:
    conn.execute(
        """CREATE TABLE IF NOT EXISTS tl_artifacts (
        app TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
        filename TEXT NOT NULL, version INTEGER NOT NULL, sha256 TEXT NOT NULL,
        kind TEXT NOT NULL, part TEXT NOT NULL, mime_type TEXT, metadata TEXT NOT NULL,
        created REAL NOT NULL, PRIMARY KEY (app, user_id, session_id, filename, version))"""
    )
    conn.execute("CREATE INDEX IF NOT EXISTS tl_artifacts_sha ON tl_artifacts (app, sha256)")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS tl_artifacts_session ON tl_artifacts (app, session_id)"
    )


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
    _migrate_to_6,
    _migrate_to_7,
    _migrate_to_8,
    _migrate_to_9,
)
"""``MIGRATIONS[i]`` upgrades a database from schema version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)

_SQL_VERSION = "SELECT value FROM tl_meta WHERE key = 'schema_version'"


def read_only_schema_problem(version: int) -> str:
    """Why a read-only open cannot use a database at schema ``version`` (not SCHEMA_VERSION)."""
    if version == 0:
        return "it has no threadline schema (not a threadline store, or empty)"
    if version < SCHEMA_VERSION:
        return (
            f"its schema version {version} is older than this threadline ({SCHEMA_VERSION}); "
            "open it once read-write to upgrade it"
        )
    return (
        f"its schema version {version} is newer than this threadline ({SCHEMA_VERSION}); "
        "upgrade threadline"
    )
