"""Search, overlays, skill loads, blocks, the cached prompt and keyed entries."""

from __future__ import annotations

import uuid
from typing import Any

from threadline._search_query import parse_query, snippet
from threadline.errors import (
    InvalidArgumentError,
)
from threadline.messages import (
    decode_message,
    text_of,
)
from threadline.store._contract.values import Entry, OwnerKind, SkillLoad
from threadline.store._sql.attach import AttachmentMixin
from threadline.store._sql.base import (
    OWNERS,
    Row,
    Tx,
    _hit_time,
    _owner_filter,
    compactions_of,
)
from threadline.store._sql.changes import log_change
from threadline.store._sql.rows import (
    us_to_datetime,
)
from threadline.store._sql.text import (
    SQL_COMPACTIONS,
    SQL_IS_ANCESTOR,
    SQL_NODE,
)
from threadline.types import (
    Compaction,
    SearchHit,
)


class ContentMixin(AttachmentMixin):
    """Search, overlays, skill loads, blocks, the cached prompt and keyed entries."""

    # ------------------------------------------------------------------ search

    def search_messages(
        self,
        app: str,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        without_user: bool = False,
        limit: int = 20,
        generation: int | None = None,
    ) -> list[SearchHit]:
        """Full-text search (docs/search.md); never raises on query text."""
        terms = parse_query(query)
        if not terms or limit < 1:
            return []
        owner = _owner_filter(user_id, without_user)

        def run(tx: Tx) -> list[Row]:
            args = (session_id, owner, limit)
            rows = self._search_message_rows(tx, app, terms, "all", *args)
            if not rows and len(terms) > 1:  # one term: "any" would repeat the same search
                rows = self._search_message_rows(tx, app, terms, "any", *args)
            return self._with_attachments(tx, app, rows, 3, "inline")

        hits = []
        for sid, message_id, role, data, score in self._read("search_messages", run):
            message = decode_message(data)
            hits.append(
                SearchHit(
                    id=message_id,
                    role=role,
                    content=snippet(text_of(message), terms),
                    created_at=_hit_time(message),
                    session_id=sid,
                    score=float(score),
                )
            )
        return hits

    # ------------------------------------------------------------------ overlays

    def add_compaction(
        self,
        app: str,
        session_id: str,
        summary: str,
        from_message_id: str,
        to_message_id: str,
        *,
        generation: int | None = None,
    ) -> Compaction:
        """Store an overlay; ``from`` must be an ancestor-or-self of ``to``."""

        def run(tx: Tx) -> Compaction:
            start = tx.one(SQL_NODE, (app, session_id, from_message_id))
            end = tx.one(SQL_NODE, (app, session_id, to_message_id))
            if start is None or end is None:
                raise InvalidArgumentError("both overlay ends must be messages of the session")
            up = (app, session_id, to_message_id, app, session_id, int(start[0]), from_message_id)
            if int(start[0]) > int(end[0]) or tx.one(SQL_IS_ANCESTOR, up) is None:
                raise InvalidArgumentError(
                    f"{from_message_id!r} is not an ancestor of {to_message_id!r}"
                )
            row = tx.one(
                "SELECT COALESCE(MAX(seq), 0) FROM tl_compactions WHERE app = ? AND session_id = ?",
                (app, session_id),
            )
            overlay_id, now = uuid.uuid4().hex, self._now_us()
            tx.send(
                "INSERT INTO tl_compactions (app, session_id, id, summary, from_message_id, "
                "to_message_id, seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (app, session_id, overlay_id, summary, from_message_id, to_message_id,
                 int(row[0] if row else 0) + 1, now),
            )  # fmt: skip
            self._touch(tx, app, session_id)
            return Compaction(
                overlay_id, summary, from_message_id, to_message_id, us_to_datetime(now)
            )

        return self._write("add_compaction", run, lock=(app, session_id, None))

    def get_compactions(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> list[Compaction]:
        """Every overlay of the session, oldest first."""
        sql, key = SQL_COMPACTIONS, (app, session_id)
        return compactions_of(self._read("get_compactions", lambda tx: tx.all(sql, key)))

    def get_skill_loads(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> list[SkillLoad]:
        """Indexed skill loads, oldest message first."""
        sql = (
            "SELECT s.label, s.skill_key, s.message_id, s.tool_call_id FROM tl_skill_loads s "
            "LEFT JOIN tl_messages m ON m.app = s.app AND m.session_id = s.session_id "
            "AND m.id = s.message_id WHERE s.app = ? AND s.session_id = ? "
            "ORDER BY m.seq, s.label, s.skill_key"
        )
        rows = self._read("get_skill_loads", lambda tx: tx.all(sql, (app, session_id)))
        return [SkillLoad(r[0], r[1], r[2], r[3]) for r in rows]

    # ------------------------------------------------------------------ blocks and prompt

    def get_block(
        self,
        app: str,
        owner: OwnerKind,
        owner_id: str,
        label: str,
        *,
        generation: int | None = None,
    ) -> str | None:
        """Stored content of a block, or ``None``. Inside ``transaction`` the row stays locked
        until it ends: a write back of what was read cannot overwrite another writer's edit."""
        sql = (
            "SELECT content FROM tl_blocks WHERE app = ? AND owner = ? AND owner_id = ? "
            "AND label = ?"
        )
        if self._joined() is not None:
            sql += self._FOR_UPDATE
        row = self._read("get_block", lambda tx: tx.one(sql, (app, owner, owner_id, label)))
        return row[0] if row else None

    def set_block(
        self,
        app: str,
        owner: OwnerKind,
        owner_id: str,
        label: str,
        content: str,
        *,
        user_id: str | None = None,
        generation: int | None = None,
    ) -> None:
        """Upsert a block; a session-owned write also touches the session."""
        if owner not in OWNERS:
            raise InvalidArgumentError(f"owner must be one of {OWNERS}, got {owner!r}")
        sql = (
            "INSERT INTO tl_blocks (app, owner, owner_id, label, content, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (app, owner, owner_id, label) DO UPDATE SET "
            "content = excluded.content, updated_at = excluded.updated_at"
        )

        def run(tx: Tx) -> None:
            tx.send(sql, (app, owner, owner_id, label, content, self._now_us()))
            if owner == "session":
                self._touch(tx, app, owner_id, user_id)
                log_change(tx, app, owner_id, "block", {"label": label}, self._now_us())

        lock = (app, owner_id, user_id) if owner == "session" else None
        self._write("set_block", run, lock=lock)

    def get_prompt(self, app: str, session_id: str, *, generation: int | None = None) -> str | None:
        """The persisted frozen system prompt, if any."""
        sql = "SELECT prompt FROM tl_prompts WHERE app = ? AND session_id = ?"
        row = self._read("get_prompt", lambda tx: tx.one(sql, (app, session_id)))
        return row[0] if row else None

    def set_prompt(
        self, app: str, session_id: str, prompt: str | None, *, generation: int | None = None
    ) -> None:
        """Persist (or with ``None`` forget) the frozen system prompt."""
        if prompt is None:
            sql = "DELETE FROM tl_prompts WHERE app = ? AND session_id = ?"
            params: tuple[Any, ...] = (app, session_id)
        else:
            sql = (
                "INSERT INTO tl_prompts (app, session_id, prompt, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (app, session_id) DO UPDATE SET prompt = excluded.prompt, "
                "updated_at = excluded.updated_at"
            )
            params = (app, session_id, prompt, self._now_us())

        def run(tx: Tx) -> None:
            # Like every write to a session it registers the session: a prompt is never left
            # behind by a racing delete_session without its session.
            tx.send(sql, params)
            self._touch(tx, app, session_id)

        self._write("set_prompt", run, lock=(app, session_id, None))

    # ------------------------------------------------------------------ keyed entries

    def put_entry(
        self, app: str, label: str, key: str, content: str, description: str | None = None
    ) -> None:
        """Insert or replace an entry (search index kept in step)."""
        self._write(
            "put_entry",
            lambda tx: self._upsert_entry(
                tx, app, label, key, content, description, self._now_us()
            ),
        )

    def get_entry(self, app: str, label: str, key: str) -> Entry | None:
        """One entry, or ``None``."""
        sql = (
            "SELECT key, content, description FROM tl_entries WHERE app = ? AND label = ? "
            "AND key = ?"
        )
        row = self._read("get_entry", lambda tx: tx.one(sql, (app, label, key)))
        return Entry(row[0], row[1], row[2]) if row else None

    def list_entries(self, app: str, label: str) -> list[Entry]:
        """All entries of the label, ordered by key."""
        sql = (
            "SELECT key, content, description FROM tl_entries WHERE app = ? AND label = ? "
            "ORDER BY key"
        )
        rows = self._read("list_entries", lambda tx: tx.all(sql, (app, label)))
        return [Entry(r[0], r[1], r[2]) for r in rows]

    def count_entries(self, app: str, label: str) -> int:
        """Number of entries of the label."""
        sql = "SELECT COUNT(*) FROM tl_entries WHERE app = ? AND label = ?"
        row = self._read("count_entries", lambda tx: tx.one(sql, (app, label)))
        return int(row[0]) if row else 0

    def delete_entry(self, app: str, label: str, key: str) -> bool:
        """Delete one entry; ``False`` if it did not exist."""

        def run(tx: Tx) -> bool:
            self._unindex_entry(tx, app, label, key)
            return (
                tx.execute(
                    "DELETE FROM tl_entries WHERE app = ? AND label = ? AND key = ?",
                    (app, label, key),
                )
                > 0
            )

        return self._write("delete_entry", run)

    def search_entries(self, app: str, label: str, query: str, limit: int = 10) -> list[Entry]:
        """Same search rules as messages, best first; never raises on query text."""
        terms = parse_query(query)
        if not terms or limit < 1:
            return []

        def run(tx: Tx) -> list[Row]:
            rows = self._search_entry_rows(tx, app, label, terms, "all", limit)
            if rows or len(terms) == 1:
                return rows
            return self._search_entry_rows(tx, app, label, terms, "any", limit)

        return [Entry(r[0], r[1], r[2]) for r in self._read("search_entries", run)]
