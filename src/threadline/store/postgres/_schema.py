"""PostgreSQL: the schema, its migrations (under an advisory lock) and the trigram indexes."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from threadline._search_query import GLUED, WIDE_CLASS
from threadline.errors import StoreError
from threadline.store._sql.rows import schema_version_of

if TYPE_CHECKING:  # psycopg is an optional extra: imported lazily at run time
    from psycopg import Connection

    PgConn = Connection[tuple[Any, ...]]

_log = logging.getLogger("threadline")

# --------------------------------------------------------------------------- schema

_DDL_LOCK_KEY = 0x74686C6E64646C  # "thlnddl": one advisory lock serialises every schema change
# to_tsvector fails when a text's lexemes exceed 1 MiB: only this many characters (4 bytes each
# at most) are word-indexed. Substring search (pg_trgm / LIKE) still sees the whole text.
TSV_CHARS = 250_000
# PostgreSQL's parser keeps emails, hosts and URL paths as single tokens ("bob@example.com"), so
# the words inside them would never match on their own: index the text as written (whole emails,
# URLs and versions still match) and again with punctuation turned into spaces.
CHUNK_TSV = (
    "to_tsvector('english'::regconfig, ?) || to_tsvector('english'::regconfig, "
    "regexp_replace(?, '[^[:alnum:][:space:]]+', ' ', 'g'))"
)
"""The word index of one chunk of a long text (the text passed twice), as ``tsv`` is built."""
CHUNK_OVERLAP = 200
"""Characters each chunk of a long text repeats from the one before (a phrase across a
boundary is found)."""
_TSV_EXPR = (
    f"to_tsvector('english'::regconfig, left(search_text, {TSV_CHARS})) || "
    f"to_tsvector('english'::regconfig, regexp_replace(left(search_text, {TSV_CHARS}), "
    "'[^[:alnum:][:space:]]+', ' ', 'g'))"
)

_V1 = [
    """CREATE TABLE IF NOT EXISTS tl_sessions (
        app TEXT NOT NULL, id TEXT NOT NULL, user_id TEXT, name TEXT, parent_session_id TEXT,
        model TEXT, source TEXT, input_tokens BIGINT NOT NULL DEFAULT 0,
        output_tokens BIGINT NOT NULL DEFAULT 0,
        estimated_cost DOUBLE PRECISION NOT NULL DEFAULT 0, end_reason TEXT,
        metadata TEXT NOT NULL DEFAULT '{}', head_id TEXT, last_seq BIGINT NOT NULL DEFAULT 0,
        message_count BIGINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL, PRIMARY KEY (app, id))""",
    "CREATE INDEX IF NOT EXISTS tl_sessions_updated ON tl_sessions (app, updated_at DESC, id DESC)",
    """CREATE INDEX IF NOT EXISTS tl_sessions_user
        ON tl_sessions (app, user_id, updated_at DESC, id DESC)""",
    f"""CREATE TABLE IF NOT EXISTS tl_messages (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, seq BIGINT NOT NULL,
        parent_id TEXT, role TEXT NOT NULL, byte_size BIGINT NOT NULL, depth BIGINT NOT NULL,
        path_bytes BIGINT NOT NULL, created_at TEXT, state_undo TEXT, data TEXT NOT NULL,
        search_text TEXT NOT NULL DEFAULT '',
        tsv tsvector GENERATED ALWAYS AS
            ({_TSV_EXPR}) STORED,
        PRIMARY KEY (app, session_id, id), UNIQUE (app, session_id, seq))""",
    """CREATE INDEX IF NOT EXISTS tl_messages_parent
        ON tl_messages (app, session_id, parent_id, seq)""",
    "CREATE INDEX IF NOT EXISTS tl_messages_tsv ON tl_messages USING gin (tsv)",
    """CREATE TABLE IF NOT EXISTS tl_compactions (
        app TEXT NOT NULL, session_id TEXT NOT NULL, id TEXT NOT NULL, summary TEXT NOT NULL,
        from_message_id TEXT NOT NULL, to_message_id TEXT NOT NULL, seq BIGINT NOT NULL,
        created_at BIGINT NOT NULL, PRIMARY KEY (app, session_id, id))""",
    """CREATE TABLE IF NOT EXISTS tl_skill_loads (
        app TEXT NOT NULL, session_id TEXT NOT NULL, label TEXT NOT NULL,
        skill_key TEXT NOT NULL, message_id TEXT NOT NULL, tool_call_id TEXT,
        PRIMARY KEY (app, session_id, label, skill_key))""",
    """CREATE TABLE IF NOT EXISTS tl_blocks (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, label TEXT NOT NULL,
        content TEXT NOT NULL, updated_at BIGINT NOT NULL,
        PRIMARY KEY (app, owner, owner_id, label))""",
    """CREATE TABLE IF NOT EXISTS tl_prompts (
        app TEXT NOT NULL, session_id TEXT NOT NULL, prompt TEXT NOT NULL,
        updated_at BIGINT NOT NULL, PRIMARY KEY (app, session_id))""",
    f"""CREATE TABLE IF NOT EXISTS tl_entries (
        app TEXT NOT NULL, label TEXT NOT NULL, key TEXT NOT NULL, content TEXT NOT NULL,
        description TEXT, updated_at BIGINT NOT NULL, search_text TEXT NOT NULL DEFAULT '',
        tsv tsvector GENERATED ALWAYS AS
            ({_TSV_EXPR}) STORED,
        PRIMARY KEY (app, label, key))""",
    "CREATE INDEX IF NOT EXISTS tl_entries_tsv ON tl_entries USING gin (tsv)",
    """CREATE TABLE IF NOT EXISTS tl_state (
        app TEXT NOT NULL, owner TEXT NOT NULL, owner_id TEXT NOT NULL, key TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (app, owner, owner_id, key))""",
]

# Version 2: attachments (store/_sql/attach.py) and the word index of long texts in chunks
# (one tsvector holds at most 1 MiB: the first _TSV_CHARS characters stay in tl_messages.tsv,
# the rest is indexed here, _TSV_CHARS characters per row, idx from 1).
_V2 = [
    """CREATE TABLE IF NOT EXISTS tl_attachments (
        app TEXT NOT NULL, sha256 TEXT NOT NULL, kind TEXT NOT NULL,
        byte_size BIGINT NOT NULL, chunks INTEGER NOT NULL, PRIMARY KEY (app, sha256))""",
    """CREATE TABLE IF NOT EXISTS tl_attachment_chunks (
        app TEXT NOT NULL, sha256 TEXT NOT NULL, idx INTEGER NOT NULL, data BYTEA NOT NULL,
        PRIMARY KEY (app, sha256, idx))""",
    "ALTER TABLE tl_attachment_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
    """CREATE TABLE IF NOT EXISTS tl_message_refs (
        app TEXT NOT NULL, session_id TEXT NOT NULL, message_id TEXT NOT NULL,
        sha256 TEXT NOT NULL, PRIMARY KEY (app, session_id, message_id, sha256))""",
    "CREATE INDEX IF NOT EXISTS tl_message_refs_sha ON tl_message_refs (app, sha256)",
    """CREATE TABLE IF NOT EXISTS tl_message_chunks (
        app TEXT NOT NULL, session_id TEXT NOT NULL, message_id TEXT NOT NULL,
        idx INTEGER NOT NULL, tsv tsvector NOT NULL,
        PRIMARY KEY (app, session_id, message_id, idx))""",
    "CREATE INDEX IF NOT EXISTS tl_message_chunks_tsv ON tl_message_chunks USING gin (tsv)",
]

# Version 3: HTTP API keys (store/_sql/keys.py), only a hash of each key.
_V3 = [
    """CREATE TABLE IF NOT EXISTS tl_api_keys (
        id TEXT NOT NULL PRIMARY KEY, app TEXT NOT NULL, user_id TEXT,
        key_hash TEXT NOT NULL UNIQUE, created_at BIGINT NOT NULL, revoked_at BIGINT)""",
]

WIDE_TEXT = f"search_text ~ '{WIDE_CLASS}'"
"""True for texts that can hold a one- or two-character CJK / symbol substring: trigrams
cannot find such terms, so they are looked for among these texts only (the partial index
``tl_messages_wide``; a query must repeat this very condition for the planner to use it)."""

# Version 4: search text in NFC (threadline._search_query.search_form), as queries are
# read, with scripts written without spaces split from ASCII words glued to them
# (split_glued, the same two patterns here; version 6 widened them to every Latin letter):
# text written before in another form is rewritten, which recomputes its generated tsv,
# and the chunks of a long one are indexed again (first NFC, then the split; a row may be
# rewritten by both). Both need a UTF8 database (another encoding cannot hold such text
# anyway); normalize() also needs PostgreSQL 13: on an older server that part, run by
# EXECUTE so that the block still parses there, is skipped.
_CHUNK_EXPR = CHUNK_TSV.replace("?", "chunk")
_NOT_NFC = "search_text IS NOT NFC NORMALIZED"
_GLUED_TEXT = " OR ".join(f"search_text ~ '{pattern}'" for pattern in GLUED)


def _split_glued_sql(expr: str) -> str:
    for pattern in GLUED:
        expr = f"regexp_replace({expr}, '{pattern}', '\\1 \\2', 'g')"
    return expr


def _rewrite_messages(where: str, value: str) -> str:
    """PL/pgSQL: set ``search_text = value`` where ``where``, re-indexing long texts' chunks."""
    return f"""
        FOR r IN EXECUTE $q$UPDATE tl_messages SET search_text = {value} WHERE {where}
                RETURNING app, session_id, id, search_text$q$ LOOP
            -- Before the length test: a text NFC made short keeps no chunk.
            DELETE FROM tl_message_chunks
                WHERE app = r.app AND session_id = r.session_id AND message_id = r.id;
            CONTINUE WHEN length(r.search_text) <= {TSV_CHARS};
            i := 1;
            WHILE i * {TSV_CHARS} < length(r.search_text) LOOP
                chunk := substr(r.search_text, i * {TSV_CHARS} - {CHUNK_OVERLAP} + 1,
                                {TSV_CHARS} + {CHUNK_OVERLAP});
                INSERT INTO tl_message_chunks (app, session_id, message_id, idx, tsv)
                    VALUES (r.app, r.session_id, r.id, i, {_CHUNK_EXPR});
                i := i + 1;
            END LOOP;
        END LOOP;"""


# Split the texts that split_glued splits at more places than they are (PL/pgSQL).
_RESPLIT = f"""EXECUTE $q$UPDATE tl_entries SET search_text = {_split_glued_sql("search_text")}
            WHERE {_GLUED_TEXT}$q$;
        {_rewrite_messages(f"{WIDE_TEXT} AND ({_GLUED_TEXT})", _split_glued_sql("search_text"))}"""


def _utf8_rewrite(body: str) -> str:
    """A PL/pgSQL block running ``body`` (with the variables _rewrite_messages uses) on a
    UTF8 database only: another encoding cannot hold the text these rewrites are about."""
    return f"""DO $$
    DECLARE
        r record;
        i integer;
        chunk text;
    BEGIN
        IF current_setting('server_encoding') <> 'UTF8' THEN
            RETURN;
        END IF;
        {body}
    END $$"""


_V4 = [
    _utf8_rewrite(
        f"""IF current_setting('server_version_num')::integer >= 130000 THEN
            EXECUTE $q$UPDATE tl_entries SET search_text = normalize(search_text, NFC)
                WHERE {_NOT_NFC}$q$;
            {_rewrite_messages(_NOT_NFC, "normalize(search_text, NFC)")}
        END IF;
        {_RESPLIT}"""
    ),
]

# Version 5: a session's identity has a generation (docs/guarantees.md): every creation of an
# (app, id) takes a value of one sequence, so a session deleted and created again is told
# apart from the old one, whatever statement inserts the row. An upsert that finds the row
# may draw a value and drop it: generations are unique and never reused, not gapless.
# Existing sessions are numbered oldest first. ``tl_changes`` logs the writes that appends do
# not tell (edits, deletes, blocks) for the event streams of docs/server.md, under the
# session's ``updated_at`` after the write (store/_sql/changes.py).
_V5 = [
    "CREATE SEQUENCE IF NOT EXISTS tl_session_generation AS BIGINT",
    "ALTER TABLE tl_sessions ADD COLUMN IF NOT EXISTS generation BIGINT",
    """UPDATE tl_sessions s SET generation = n.g FROM (
        SELECT app, id, nextval('tl_session_generation') AS g FROM (
            SELECT app, id FROM tl_sessions ORDER BY created_at, app, id) o) n
        WHERE s.app = n.app AND s.id = n.id AND s.generation IS NULL""",
    "ALTER TABLE tl_sessions ALTER COLUMN generation SET DEFAULT nextval('tl_session_generation')",
    "ALTER TABLE tl_sessions ALTER COLUMN generation SET NOT NULL",
    """CREATE TABLE IF NOT EXISTS tl_changes (
        app TEXT NOT NULL, session_id TEXT NOT NULL, stamp BIGINT NOT NULL, kind TEXT NOT NULL,
        payload TEXT NOT NULL, PRIMARY KEY (app, session_id, stamp, kind))""",
    "CREATE INDEX IF NOT EXISTS tl_changes_gone ON tl_changes (app, stamp) WHERE kind = 'gone'",
]

# Version 6: split_glued also splits accented (any Latin-script) letters from scripts written
# without spaces (``私はCaféで``): texts it splits at more places are rewritten (version 4's
# second part again, now with the wider patterns).
_V6 = [_utf8_rewrite(_RESPLIT)]

# Version 7: each app's current profile (store/_sql/profiles.py), a JSON document with a
# write counter.
_V7 = [
    """CREATE TABLE IF NOT EXISTS tl_profiles (
        app TEXT NOT NULL PRIMARY KEY, document TEXT NOT NULL, version BIGINT NOT NULL,
        updated_at BIGINT NOT NULL)""",
]

# Version 8: stored files with versions (store/_sql/artifacts.py, ADK artifacts), their
# content an attachment of the app.
_V8 = [
    """CREATE TABLE IF NOT EXISTS tl_artifacts (
        app TEXT NOT NULL, user_id TEXT NOT NULL, session_id TEXT NOT NULL,
        filename TEXT NOT NULL, version BIGINT NOT NULL, sha256 TEXT NOT NULL,
        kind TEXT NOT NULL, part TEXT NOT NULL, mime_type TEXT, metadata TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (app, user_id, session_id, filename, version))""",
    "CREATE INDEX IF NOT EXISTS tl_artifacts_sha ON tl_artifacts (app, sha256)",
    "CREATE INDEX IF NOT EXISTS tl_artifacts_session ON tl_artifacts (app, session_id)",
]

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8]
"""``MIGRATIONS[i]`` upgrades schema version ``i`` to ``i + 1`` (version 0: no tables yet)."""

SCHEMA_VERSION = len(MIGRATIONS)  # derived, so adding a migration cannot leave it behind

# Trigram indexes are checked on every open, outside the version scheme: they need pg_trgm,
# which may only become available after the tables were created.
_TRGM_INDEXES = ("tl_messages", "tl_entries")
# Like the trigram indexes, checked on every open (an index, not a table: no data to migrate).
_WIDE_INDEX = f"CREATE INDEX IF NOT EXISTS tl_messages_wide ON tl_messages (app) WHERE {WIDE_TEXT}"
_trgm_warned = False


# Tables are created in the first schema of the search path, so that is where to look for
# them: a bare to_regclass('tl_meta') would also find another schema's tables later on the
# path (an older install in public) and then read and write those instead.
_HERE = "to_regclass(quote_ident(current_schema()) || '.{name}')"


def _schema_is_current(conn: PgConn) -> bool:
    """Cheap check without the lock: right version and both trigram indexes present."""
    indexes = [t + "_trgm" for t in _TRGM_INDEXES] + ["tl_messages_wide"]
    names = ", ".join(f"{_HERE.format(name=name)} IS NOT NULL" for name in indexes)
    row = conn.execute(f"SELECT {_HERE.format(name='tl_meta')} IS NOT NULL, {names}").fetchone()
    if row is None or not all(row):
        return False
    found = conn.execute("SELECT value FROM tl_meta WHERE key = 'schema_version'").fetchone()
    return found is not None and found[0] == str(SCHEMA_VERSION)


def _stored_version(conn: PgConn) -> int:
    row = conn.execute(f"SELECT {_HERE.format(name='tl_meta')} IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    found = conn.execute("SELECT value FROM tl_meta WHERE key = 'schema_version'").fetchone()
    return schema_version_of(found[0]) if found else 0


def _trgm_schema(conn: PgConn) -> str | None:
    """Schema holding pg_trgm (created if allowed), quoted; None when it is unavailable."""
    global _trgm_warned
    query = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
    row = conn.execute(query).fetchone()
    if row is None:
        try:
            with conn.transaction():  # a savepoint: a refusal must not abort the DDL transaction
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        except Exception as exc:  # any refusal (privileges, not installed) means "unavailable"
            if not _trgm_warned:
                _trgm_warned = True
                _log.warning(
                    "threadline: pg_trgm is not available (%s); substring search (CJK, e-mails, "
                    "URLs, versions) uses unindexed LIKE scans",
                    str(exc).strip(),
                )
            return None
        row = conn.execute(query).fetchone()
    return str(row[0]) if row is not None else None


def _ensure_trgm_indexes(conn: PgConn) -> None:
    schema = _trgm_schema(conn)
    if schema is None:
        return
    # Qualified: the extension may live in a schema that is not on the search path.
    for table in _TRGM_INDEXES:
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {table}_trgm ON {table} "
            f"USING gin (search_text {schema}.gin_trgm_ops)"
        )


def ensure_schema(conn: PgConn) -> None:
    """Create or upgrade the tables in the first schema of the search path.

    Race-safe across processes: the work runs in one transaction holding a transaction-level
    advisory lock, so concurrent first opens wait for each other instead of colliding.
    """
    if _schema_is_current(conn):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [_DDL_LOCK_KEY])
        version = _stored_version(conn)
        if version > SCHEMA_VERSION:
            # StoreError, as on SQLite: a deployment upgraded in steps meets this in old workers.
            raise StoreError(
                "open",
                RuntimeError(
                    f"the store's schema version {version} is newer than this threadline "
                    f"({SCHEMA_VERSION}); upgrade threadline"
                ),
            )
        conn.execute("CREATE TABLE IF NOT EXISTS tl_meta (key TEXT PRIMARY KEY, value TEXT)")
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute(
            "INSERT INTO tl_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [str(SCHEMA_VERSION)],
        )
        _ensure_trgm_indexes(conn)
        conn.execute(_WIDE_INDEX)
