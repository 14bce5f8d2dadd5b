"""The session registry: create, list, update, delete, purge, usage, forget a user."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

from threadline._state import INTERNAL_JSON, partition_internal
from threadline.errors import (
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
)
from threadline.store._contract.values import UNSET
from threadline.store._sql.artifacts import ArtifactsMixin
from threadline.store._sql.base import (
    Tx,
    _owner_filter,
    owner_clause,
)
from threadline.store._sql.changes import forget_changes
from threadline.store._sql.rows import (
    SESSION_COLUMNS,
    check_usage_sums,
    datetime_to_us,
    decode_cursor,
    dumps,
    encode_cursor,
    loads_stored,
    row_to_session_info,
)
from threadline.store._sql.text import (
    _BUMP_UPDATED_AT,
    _UPDATED_AT,
)
from threadline.types import (
    SessionInfo,
    SessionListing,
    SessionListingPage,
    SessionPage,
    SessionState,
    SessionStatePage,
)

_PREFIXED_COLUMNS = ", ".join("s." + column for column in SESSION_COLUMNS.split(", "))


def _list_filter(
    app: str, user_id: str | None, limit: int, cursor: str | None, *, prefix: str = ""
) -> tuple[str, list[Any]]:
    """WHERE clause and parameters of one session-list page (checks ``limit``/``cursor``)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidArgumentError(f"limit must be a positive integer, got {limit!r}")
    where: list[str] = [f"{prefix}app = ?"]
    params: list[Any] = [app]
    if user_id is not None:
        where.append(f"{prefix}user_id = ?")
        params.append(user_id)
    if cursor is not None:
        where.append(f"({prefix}updated_at, {prefix}id) < (?, ?)")
        params.extend(decode_cursor(cursor))
    return " AND ".join(where), params


def _next_cursor(rows: Sequence[Sequence[Any]], limit: int, updated: int = 14) -> str | None:
    """Cursor after the last row of a page fetched with ``limit + 1`` (``None``: no more);
    ``updated`` is the position of ``updated_at`` in a row (the id is first)."""
    if len(rows) <= limit:
        return None
    last = rows[limit - 1]
    return encode_cursor(last[updated], last[0])


def _stored_state(text: str | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A session's state object as the listings read it, and its internal keys apart
    (``None`` when it has none)."""
    if not text or text == "{}":
        return {}, None
    state = loads_stored(text)
    if INTERNAL_JSON not in text:
        return state, None
    return partition_internal(state)


def _listing(row: tuple[Any, ...]) -> SessionListing:
    """A row of ``list_sessions_with_state``: its state object decoded, internal keys apart."""
    state, internal = _stored_state(row[16])
    info = partial(row_to_session_info, row)  # decoded when first read
    return SessionListing(row[0], row[2], info, state, row[17], row[18], internal)


def _session_state(row: tuple[Any, ...]) -> SessionState:
    """A row ``(id, user_id, head_id, state JSON, updated_at)`` of ``list_session_states``."""
    state, internal = _stored_state(row[3])
    return (row[0], row[1], row[2], state, internal or {})


class RegistryMixin(ArtifactsMixin):
    """The session registry: create, list, update, delete, purge, usage, forget a user."""

    # ------------------------------------------------------------------ session registry

    def create_session(
        self,
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Insert a registry row; ``SessionExistsError`` if it exists.

        >>> store.create_session("default", "s1").id  # doctest: +SKIP
        's1'
        """
        meta = dumps(dict(metadata or {}))

        def run(tx: Tx) -> SessionInfo:
            now = self._now_us()
            changed = tx.execute(
                "INSERT INTO tl_sessions (app, id, user_id, name, parent_session_id, model, "
                "source, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (app, id) DO NOTHING",
                (app, session_id, user_id, name, parent_session_id, model, source, meta, now, now),
            )
            if not changed:
                raise SessionExistsError(f"session {session_id!r} already exists in app {app!r}")
            info = self._session_row(tx, app, session_id)
            assert info is not None
            return info

        return self._write("create_session", run)

    def get_session(self, app: str, session_id: str) -> SessionInfo | None:
        """The registry row, or ``None``."""
        return self._read("get_session", lambda tx: self._session_row(tx, app, session_id))

    def list_sessions(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest ``updated_at`` first (ties: ``id`` descending), keyset-paginated."""
        where, params = _list_filter(app, user_id, limit, cursor)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM tl_sessions WHERE {where} "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        rows = self._read("list_sessions", lambda tx: tx.all(sql, (*params, limit + 1)))
        infos = [row_to_session_info(row) for row in rows[:limit]]
        return SessionPage(sessions=infos, next_cursor=_next_cursor(rows, limit))

    def _state_of_s(self) -> str:
        """The state rows of session ``s`` (a ``tl_sessions`` alias) as one JSON object: a
        correlated subquery, aggregated by the dialect."""
        return (
            f"(SELECT {self._STATE_OBJECT} FROM tl_state t WHERE t.app = s.app "
            "AND t.owner = 'session' AND t.owner_id = s.id)"
        )

    def list_sessions_with_state(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionListingPage:
        """``list_sessions`` with each session's state, head id and head ``createdAt``, in one
        query per page (the dialect aggregates the state rows into one JSON object). The
        session's internal keys come apart, in ``internal`` (never in ``state``)."""
        where, params = _list_filter(app, user_id, limit, cursor, prefix="s.")
        sql = (
            f"SELECT {_PREFIXED_COLUMNS}, {self._state_of_s()}, s.head_id, m.created_at "
            "FROM tl_sessions s "
            "LEFT JOIN tl_messages m ON m.app = s.app AND m.session_id = s.id AND m.id = s.head_id "
            f"WHERE {where} ORDER BY s.updated_at DESC, s.id DESC LIMIT ?"
        )
        rows = self._read("list_sessions", lambda tx: tx.all(sql, (*params, limit + 1)))
        listings = [_listing(row) for row in rows[:limit]]
        return SessionListingPage(sessions=listings, next_cursor=_next_cursor(rows, limit))

    def list_session_states(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionStatePage:
        """``(id, user_id, head_id, state, internal)`` per session, one query per page: the
        columns the listing index holds (and the head id), the state aggregated by the
        dialect; nothing else read or decoded."""
        where, params = _list_filter(app, user_id, limit, cursor, prefix="s.")
        sql = (
            f"SELECT s.id, s.user_id, s.head_id, {self._state_of_s()}, s.updated_at "
            f"FROM tl_sessions s WHERE {where} ORDER BY s.updated_at DESC, s.id DESC LIMIT ?"
        )
        rows = self._read("list_session_states", lambda tx: tx.all(sql, (*params, limit + 1)))
        states = [_session_state(row) for row in rows[:limit]]
        return SessionStatePage(sessions=states, next_cursor=_next_cursor(rows, limit, updated=4))

    def update_session(
        self,
        app: str,
        session_id: str,
        *,
        name: Any = UNSET,
        end_reason: Any = UNSET,
        model: Any = UNSET,
        source: Any = UNSET,
        metadata: Any = UNSET,
        generation: int | None = None,
    ) -> SessionInfo:
        """Set the given fields and touch ``updated_at``; ``SessionNotFoundError`` if missing."""
        fields = {"name": name, "end_reason": end_reason, "model": model, "source": source}
        sets = [f"{column} = ?" for column, value in fields.items() if value is not UNSET]
        params: list[Any] = [value for value in fields.values() if value is not UNSET]
        if metadata is not UNSET:
            if metadata is not None and not isinstance(metadata, Mapping):
                raise InvalidArgumentError("metadata must be a mapping")
            sets.append("metadata = ?")
            params.append(dumps(dict(metadata or {})))
        now = self._now_us()
        sql = (
            f"UPDATE tl_sessions SET {', '.join([*sets, _BUMP_UPDATED_AT])} "
            "WHERE app = ? AND id = ?"
        )

        def run(tx: Tx) -> SessionInfo:
            if not tx.execute(sql, (*params, now, now, app, session_id)):
                raise SessionNotFoundError(f"session {session_id!r} not found in app {app!r}")
            info = self._session_row(tx, app, session_id)
            assert info is not None
            return info

        return self._write("update_session", run)

    def touch_session(
        self,
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        generation: int | None = None,
    ) -> None:
        """Create the registry row if missing and move ``updated_at``."""
        self._write(
            "touch_session",
            lambda tx: self._touch(tx, app, session_id, user_id),
            lock=(app, session_id, user_id),
        )

    def delete_session(self, app: str, session_id: str, *, generation: int | None = None) -> bool:
        """Delete the session and everything keyed by it; ``False`` if nothing existed."""
        return self._write("delete_session", lambda tx: self._delete_session(tx, app, session_id))

    def _lock_sessions(self, tx: Tx, app: str, where: str, params: Sequence[Any]) -> list[str]:
        """Row-lock the registry rows of ``app`` matching ``where``, in id order; their ids."""
        sql = f"SELECT id FROM tl_sessions WHERE app = ? AND {where} ORDER BY id{self._FOR_UPDATE}"
        return [row[0] for row in tx.all(sql, (app, *params))]

    def _claim_session_row(self, tx: Tx, app: str, session_id: str) -> bool:
        """Lock the session's registry row, holding its id even if it is missing; True if it
        existed. (SQLite: the write transaction already excludes every other writer.)"""
        return self._session_row(tx, app, session_id) is not None

    def _delete_session(self, tx: Tx, app: str, session_id: str) -> bool:
        key = (app, session_id)
        existed = self._claim_session_row(tx, app, session_id)
        self._unindex_messages(tx, app, session_id, None)
        self._drop_refs(tx, app, session_id, None)
        changed = tx.execute("DELETE FROM tl_messages WHERE app = ? AND session_id = ?", key)
        for table in ("tl_compactions", "tl_skill_loads", "tl_prompts"):
            changed += tx.execute(f"DELETE FROM {table} WHERE app = ? AND session_id = ?", key)
        changed += tx.execute(
            "DELETE FROM tl_blocks WHERE app = ? AND owner = 'session' AND owner_id = ?", key
        )
        changed += tx.execute(
            "DELETE FROM tl_state WHERE app = ? AND owner = 'session' AND owner_id = ?", key
        )
        changed += self._drop_artifacts(tx, "app = ? AND session_id = ?", key)
        forget_changes(tx, app, session_id, self._now_us(), existed)
        tx.send("DELETE FROM tl_sessions WHERE app = ? AND id = ?", key)
        return existed or changed > 0

    def purge_sessions(self, app: str, *, before: datetime, user_id: str | None = None) -> int:
        """Delete every session of ``app`` with ``updated_at < before``; returns the count."""
        cutoff = datetime_to_us(before)
        where = "updated_at < ?"
        params: tuple[Any, ...] = (cutoff,)
        if user_id is not None:
            where += " AND user_id = ?"
            params = (*params, user_id)

        def run(tx: Tx) -> int:
            ids = self._lock_sessions(tx, app, where, params)
            for session_id in ids:
                self._delete_session(tx, app, session_id)
            return len(ids)

        return self._write("purge_sessions", run)

    def add_usage(
        self,
        app: str,
        session_id: str,
        input_tokens: int,
        output_tokens: int,
        cost: float,
        *,
        generation: int | None = None,
    ) -> None:
        """Atomically add to the usage counters (creating the row if missing)."""
        now = self._now_us()
        sql = (
            "INSERT INTO tl_sessions (app, id, metadata, created_at, updated_at, input_tokens, "
            "output_tokens, estimated_cost) VALUES (?, ?, '{}', ?, ?, ?, ?, ?) "
            "ON CONFLICT (app, id) DO UPDATE SET "
            "input_tokens = tl_sessions.input_tokens + excluded.input_tokens, "
            "output_tokens = tl_sessions.output_tokens + excluded.output_tokens, "
            "estimated_cost = tl_sessions.estimated_cost + excluded.estimated_cost, " + _UPDATED_AT
        )
        params = (app, session_id, now, now, int(input_tokens), int(output_tokens), float(cost))

        def run(tx: Tx) -> None:
            # The session row is locked: check the sums before PostgreSQL raises on an
            # overflow (or SQLite turns the integer into a float, or the cost into inf).
            row = tx.one(
                "SELECT input_tokens, output_tokens, estimated_cost FROM tl_sessions "
                "WHERE app = ? AND id = ?",
                (app, session_id),
            )
            if row is not None:
                check_usage_sums(row, params[4:])
            tx.execute(sql, params)

        self._write("add_usage", run, lock=(app, session_id, None))

    def count_sessions(
        self, app: str, *, user_id: str | None = None, without_user: bool = False
    ) -> int:
        """Number of registry rows of ``app`` (only ``user_id``'s, or only those without a
        user)."""
        where, params = owner_clause(_owner_filter(user_id, without_user), "user_id")
        sql = f"SELECT COUNT(*) FROM tl_sessions WHERE app = ?{where}"
        row = self._read("count_sessions", lambda tx: tx.one(sql, (app, *params)))
        return int(row[0]) if row else 0

    def list_apps(self) -> dict[str, int]:
        """Every app with sessions and its session count, by name (``Store.list_apps``)."""
        sql = "SELECT app, COUNT(*) FROM tl_sessions GROUP BY app ORDER BY app"
        rows = self._read("list_apps", lambda tx: tx.all(sql))
        return {str(app): int(count) for app, count in rows}

    def forget_user(self, app: str, user_id: str) -> int:
        """Delete everything of ``user_id`` in ``app`` in one transaction: their sessions
        (with all that hangs off them), user-scoped blocks and ``user:`` state, and their
        stored files. Returns the number of sessions deleted."""

        def run(tx: Tx) -> int:
            ids = self._lock_sessions(tx, app, "user_id = ?", (user_id,))
            for session_id in ids:
                self._delete_session(tx, app, session_id)
            for table in ("tl_blocks", "tl_state"):
                tx.send(
                    f"DELETE FROM {table} WHERE app = ? AND owner = 'user' AND owner_id = ?",
                    (app, user_id),
                )
            self._drop_artifacts(tx, "app = ? AND user_id = ?", (app, user_id))
            return len(ids)

        return self._write("forget_user", run)
