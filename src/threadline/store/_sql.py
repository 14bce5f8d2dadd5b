"""Dialect-neutral SQL store: every ``Store`` method written once for SQLite and PostgreSQL.

:class:`SQLStore` implements the whole :class:`~threadline.store.base.Store` contract — the
message tree (``seq``, head, ``depth``, ``path_bytes``), the session registry, overlays,
state with undo records, skill loads, blocks, prompts, entries and session-list pagination —
on top of a small **dialect interface** that a backend subclass fills in.

Dialect interface (what ``SQLiteStore`` / ``PostgresStore`` provide)
--------------------------------------------------------------------

SQL in this module is written with ``?`` placeholders and contains no literal ``?`` or
``%`` characters, so a backend may translate placeholders mechanically (PostgreSQL:
``sql.replace("?", "%s")``). Only portable SQL is used: ``WITH RECURSIVE``, ``INSERT ...
ON CONFLICT (...) DO UPDATE/NOTHING`` with ``excluded.``, row-value comparisons,
``CAST(? AS TEXT)`` for untyped parameters in CTE anchors, ``CASE`` instead of
``MAX(a, b)``/``GREATEST``. No ``RETURNING`` is needed. Tables and columns are
described in docs/architecture.md; ``tl_messages`` columns are :data:`MESSAGE_COLUMNS` (plus
whatever the backend adds for search, e.g. PostgreSQL's ``search_text``).

A backend implements these hooks (all receive a :class:`Tx`, the open transaction):

``_write(operation, fn, *, lock=None) -> T``
    Run ``fn(tx)`` in ONE write transaction and commit; roll back if it raises.
    ``lock=(app, session_id, user_id)`` means "this write changes that session": the backend
    must serialise it against every other write to the session (SQLite: ``BEGIN IMMEDIATE``
    already does; PostgreSQL: insert the registry row if missing (``ON CONFLICT DO
    NOTHING``, with ``user_id``) then ``SELECT ... FOR UPDATE`` it) before calling ``fn``.
    ``fn`` itself reads ``head_id``/``last_seq`` and upserts the registry row. Driver
    errors become ``StoreError(operation, cause)``; ``ThreadlineError`` passes untouched.
    May retry ``fn`` on serialisation failures (``fn`` has no side effects outside ``tx``).
``_read(operation, fn) -> T``
    Run ``fn(tx)`` for reading (no writes); same error wrapping. Multi-statement reads in
    the base are rare and tolerate concurrent commits between statements.
``_insert_message(tx, row: MessageRow) -> bool``
    Insert one message row unless ``(app, session_id, id)`` exists (``ON CONFLICT DO
    NOTHING``), plus its search-index entry from ``row.text``. True if it was written.
``_reindex_message(tx, app, session_id, message_id, text) -> None``
    After the base updated a message row: replace its search text.
``_unindex_messages(tx, app, session_id, message_ids | None) -> None``
    Before the base deletes message rows (``None`` = every message of the session): drop
    their search entries (no-op when the index lives in the row).
``_upsert_entry(tx, app, label, key, content, description, now_us) -> None``
    Insert or replace a ``tl_entries`` row and its search entry.
``_unindex_entry(tx, app, label, key) -> None``
    Before the base deletes an entry row: drop its search entry.
``_search_message_rows(tx, app, terms, mode, session_id, owner, limit)``
    ``-> list[(session_id, message_id, role, data, score)]``, best first (score higher is
    better; ties newest ``seq`` first), implementing the per-term rules of docs/search.md for
    ``mode`` ``"all"`` or ``"any"``. ``terms`` is non-empty. The base runs "all", then
    "any" if nothing matched and there are several terms, and builds the ``SearchHit``s.
    ``owner`` (an :data:`OwnerFilter`) limits it to sessions of one user or without one.
``_search_entry_rows(tx, app, label, terms, mode, limit)``
    ``-> list[(key, content, description)]``, best first, same rules.
``close() -> None``
    Idempotent.

Schema creation and upgrades (DDL differs) are the backend's own business; both record
``tl_meta.schema_version``.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> isinstance(store, SQLStore)
True
"""

from __future__ import annotations

import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol, TypeVar

from threadline._checks import check_every_public_method
from threadline.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    MessageNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
)
from threadline.messages import (
    decode_message,
    encode_message,
    parse_timestamp,
    skill_loads_of,
    text_of,
)
from threadline.search_query import MatchMode, Term, parse_query
from threadline.store._common import (
    SESSION_COLUMNS,
    datetime_to_us,
    decode_cursor,
    dumps,
    encode_cursor,
    merge_undo,
    now_us,
    row_to_session_info,
    state_owner,
    state_undo,
    stored_delta,
    us_to_datetime,
)
from threadline.store.base import UNSET, Entry, OwnerKind, RecentPath, SkillLoad
from threadline.types import (
    AUTO,
    AutoType,
    Compaction,
    Message,
    SearchHit,
    SessionInfo,
    SessionPage,
)

T = TypeVar("T")

OwnerFilter = tuple[str | None] | None
"""Which sessions a search covers by owner: ``None`` every session, ``(user,)`` only that
user's, ``(None,)`` only sessions without a user."""


def owner_clause(owner: OwnerFilter, column: str) -> tuple[str, list[Any]]:
    """`` AND <column> = ?`` / `` AND <column> IS NULL`` / nothing, and its parameters."""
    if owner is None:
        return "", []
    if owner[0] is None:
        return f" AND {column} IS NULL", []
    return f" AND {column} = ?", [owner[0]]


SessionKey = tuple[str, str, str | None]
"""``(app, session_id, user_id)`` of the session a write changes (see ``_write``)."""

Row = tuple[Any, ...]

MESSAGE_COLUMNS = (
    "app, session_id, id, seq, parent_id, role, byte_size, depth, path_bytes, created_at, "
    "state_undo, data"
)
"""``tl_messages`` columns in :class:`MessageRow` order (``data`` last: SQLite then reads
``byte_size``/``parent_id`` without touching a large body's overflow pages)."""

OWNERS = ("session", "user", "app")
_CHUNK = 400  # ids per IN (...) list: far below every driver's parameter limit


class Tx(Protocol):
    """An open transaction/connection as the base sees it (``?`` placeholders)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""
        ...

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """Run a query; return its first row or ``None``."""
        ...

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query; return every row."""
        ...


class MessageRow(NamedTuple):
    """One ``tl_messages`` row (:data:`MESSAGE_COLUMNS` order) plus its search ``text``."""

    app: str
    session_id: str
    id: str
    seq: int
    parent_id: str | None
    role: str
    byte_size: int
    depth: int
    path_bytes: int
    created_at: str | None
    state_undo: str | None
    data: str
    text: str

    def values(self) -> Row:
        """The column values without ``text``, for ``INSERT ... (MESSAGE_COLUMNS)``."""
        return tuple(self)[:12]


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


def _owner_filter(user_id: str | None, without_user: bool) -> OwnerFilter:
    """``user_id``/``without_user`` of the public API as one value for the dialect hooks."""
    if without_user:
        if user_id is not None:
            raise InvalidArgumentError("pass user_id or without_user=True, not both")
        return (None,)
    return (user_id,) if user_id is not None else None


def _check_owner(app: str, session_id: str, owner: str | None, user_id: str | None) -> None:
    """A write naming a user to a session another user owns finds no such session.

    The owner is fixed when the session is created; later writes never claim or change it.
    """
    if user_id is not None and owner is not None and owner != user_id:
        raise SessionNotFoundError(f"session {session_id!r} not found in app {app!r}")


def _in_list(count: int) -> str:
    return "(" + ", ".join("?" * count) + ")"


def _chunks(items: Sequence[str]) -> list[Sequence[str]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


def _hit_time(message: Message) -> datetime | None:
    value = message.get("createdAt")
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


ROW_LIMIT = 1_800_000
"""Stored JSON bytes above which ``enforce_row_size`` shrinks a message before writing."""


def _encode_row(message: Message) -> tuple[Message, str, int]:
    """``(message, compact JSON, UTF-8 size)`` after ``enforce_row_size``.

    ``enforce_row_size`` returns a message unchanged when its compact JSON fits, so it only
    runs when the size measured here says it may not (saves a JSON encode per append).
    """
    if (
        not isinstance(message, dict)
        or not isinstance(message.get("id"), str)
        or not isinstance(message.get("role"), str)
    ):
        raise InvalidMessageError("the store takes normalised messages (string id and role)")
    try:  # encoding is the check: nesting, lone surrogates, NaN and non-JSON values all fail
        data = encode_message(message)
        size = len(data.encode("utf-8"))
    except RecursionError:
        raise InvalidMessageError("message is nested too deeply") from None
    except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidMessageError(f"message is not storable JSON: {exc}") from None
    if size > ROW_LIMIT:
        # Imported lazily: compaction depends on the store package, not the other way round.
        from threadline.compaction.micro import enforce_row_size

        message = enforce_row_size(message, ROW_LIMIT)
        data = encode_message(message)
        size = len(data.encode("utf-8"))
    return message, data, size


class SQLStore(ABC):
    """Shared implementation of the Store protocol; subclasses supply the dialect hooks
    (abstract: a dialect that misses one cannot be constructed).

    Lock order, the same for every write so that two writes never wait on each other in a
    cycle: (1) session registry rows, several in ``id`` order; (2) the rows hanging off those
    sessions (messages, overlays, skill loads, prompt, session blocks and state); (3) rows
    shared between sessions (``user:``/``app:`` state in key order, user/app blocks, entries).
    Deleting a session therefore locks its registry row before touching its messages.
    """

    #: Suffix that row-locks what a ``SELECT`` returns; empty where a write transaction
    #: already excludes every other writer (SQLite's ``BEGIN IMMEDIATE``).
    _FOR_UPDATE = ""

    #: What "now" is for this store (``updated_at``, overlay and block times, purge cutoffs):
    #: ``None`` is the system clock; tests inject one (``clock=`` of the backends).
    _clock: Callable[[], datetime] | None = None

    def _now_us(self) -> int:
        return now_us() if self._clock is None else datetime_to_us(self._clock())

    def now(self) -> datetime:
        """The store's current time (aware UTC): the system clock unless one was injected.

        >>> import threadline
        >>> threadline.connect(":memory:").now().tzinfo is not None
        True
        """
        return us_to_datetime(self._now_us())

    # ------------------------------------------------------------------ dialect hooks

    @abstractmethod
    def _write(self, operation: str, fn: Callable[[Tx], T], *, lock: SessionKey | None = None) -> T:
        ...

    @abstractmethod
    def _read(self, operation: str, fn: Callable[[Tx], T]) -> T:
        ...

    @abstractmethod
    def _insert_message(self, tx: Tx, row: MessageRow) -> bool:
        ...

    @abstractmethod
    def _reindex_message(
        self, tx: Tx, app: str, session_id: str, message_id: str, text: str
    ) -> None:
        ...

    @abstractmethod
    def _unindex_messages(
        self, tx: Tx, app: str, session_id: str, message_ids: Sequence[str] | None
    ) -> None:
        ...

    @abstractmethod
    def _upsert_entry(
        self,
        tx: Tx,
        app: str,
        label: str,
        key: str,
        content: str,
        description: str | None,
        now: int,
    ) -> None:
        ...

    @abstractmethod
    def _unindex_entry(self, tx: Tx, app: str, label: str, key: str) -> None:
        ...

    @abstractmethod
    def _search_message_rows(
        self,
        tx: Tx,
        app: str,
        terms: Sequence[Term],
        mode: MatchMode,
        session_id: str | None,
        owner: OwnerFilter,
        limit: int,
    ) -> list[Row]:
        ...

    @abstractmethod
    def _search_entry_rows(
        self, tx: Tx, app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
    ) -> list[Row]:
        ...

    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ registry helpers

    def _touch(self, tx: Tx, app: str, session_id: str, user_id: str | None = None) -> None:
        if user_id is not None:
            row = tx.one(SQL_OWNER, (app, session_id))
            _check_owner(app, session_id, row[0] if row else None, user_id)
        now = self._now_us()
        tx.execute(SQL_TOUCH, (app, session_id, user_id, now, now))

    @staticmethod
    def _session_row(tx: Tx, app: str, session_id: str) -> SessionInfo | None:
        row = tx.one(SQL_SESSION, (app, session_id))
        return row_to_session_info(row) if row is not None else None

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
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise InvalidArgumentError(f"limit must be a positive integer, got {limit!r}")
        where: list[str] = ["app = ?"]
        params: list[Any] = [app]
        if user_id is not None:
            where.append("user_id = ?")
            params.append(user_id)
        if cursor is not None:
            position = decode_cursor(cursor)
            where.append("(updated_at, id) < (?, ?)")
            params.extend(position)
        sql = (
            f"SELECT {SESSION_COLUMNS} FROM tl_sessions WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        rows = self._read("list_sessions", lambda tx: tx.all(sql, (*params, limit + 1)))
        infos = [row_to_session_info(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = rows[limit - 1]
            next_cursor = encode_cursor(last[14], last[0])
        return SessionPage(sessions=infos, next_cursor=next_cursor)

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

    def touch_session(self, app: str, session_id: str, *, user_id: str | None = None) -> None:
        """Create the registry row if missing and move ``updated_at``."""
        self._write(
            "touch_session",
            lambda tx: self._touch(tx, app, session_id, user_id),
            lock=(app, session_id, user_id),
        )

    def delete_session(self, app: str, session_id: str) -> bool:
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
        changed = tx.execute("DELETE FROM tl_messages WHERE app = ? AND session_id = ?", key)
        for table in ("tl_compactions", "tl_skill_loads", "tl_prompts"):
            changed += tx.execute(f"DELETE FROM {table} WHERE app = ? AND session_id = ?", key)
        changed += tx.execute(
            "DELETE FROM tl_blocks WHERE app = ? AND owner = 'session' AND owner_id = ?", key
        )
        changed += tx.execute(
            "DELETE FROM tl_state WHERE app = ? AND owner = 'session' AND owner_id = ?", key
        )
        tx.execute("DELETE FROM tl_sessions WHERE app = ? AND id = ?", key)
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
        self, app: str, session_id: str, input_tokens: int, output_tokens: int, cost: float
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
        self._write("add_usage", lambda tx: tx.execute(sql, params), lock=(app, session_id, None))

    def count_sessions(
        self, app: str, *, user_id: str | None = None, without_user: bool = False
    ) -> int:
        """Number of registry rows of ``app`` (only ``user_id``'s, or only those without a
        user)."""
        where, params = owner_clause(_owner_filter(user_id, without_user), "user_id")
        sql = f"SELECT COUNT(*) FROM tl_sessions WHERE app = ?{where}"
        row = self._read("count_sessions", lambda tx: tx.one(sql, (app, *params)))
        return int(row[0]) if row else 0

    def forget_user(self, app: str, user_id: str) -> int:
        """Delete everything of ``user_id`` in ``app`` in one transaction: their sessions
        (with all that hangs off them), user-scoped blocks and ``user:`` state. Returns the
        number of sessions deleted."""

        def run(tx: Tx) -> int:
            ids = self._lock_sessions(tx, app, "user_id = ?", (user_id,))
            for session_id in ids:
                self._delete_session(tx, app, session_id)
            for table in ("tl_blocks", "tl_state"):
                tx.execute(
                    f"DELETE FROM {table} WHERE app = ? AND owner = 'user' AND owner_id = ?",
                    (app, user_id),
                )
            return len(ids)

        return self._write("forget_user", run)

    # ------------------------------------------------------------------ appends

    def append_messages(
        self,
        app: str,
        session_id: str,
        messages: Sequence[Message],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
        state_delta: Mapping[str, Any] | None = None,
    ) -> list[Message]:
        """Append normalised messages in one transaction; each parents the next."""
        delta = stored_delta(state_delta, user_id)
        if delta and len(messages) != 1:
            raise InvalidArgumentError("state_delta needs exactly one message")
        if not messages:
            return []
        encoded = [_encode_row(message) for message in messages]
        return self._write(
            "append_messages",
            lambda tx: self._append(tx, app, session_id, encoded, parent_id, user_id, delta),
            lock=(app, session_id, user_id),
        )

    def _append(
        self,
        tx: Tx,
        app: str,
        session_id: str,
        encoded: list[tuple[Message, str, int]],
        parent_id: str | AutoType | None,
        user_id: str | None,
        delta: dict[str, Any],
    ) -> list[Message]:
        state = tx.one(SQL_HEAD_STATE, (app, session_id))
        _check_owner(app, session_id, state[4] if state else None, user_id)
        head_id, last_seq = (state[0], state[1]) if state else (None, 0)
        parent = self._start_parent(tx, app, session_id, parent_id, state)
        undo = dumps(self._undo_record(tx, app, session_id, delta)) if delta else None
        out: list[Message] = []
        seq, written = last_seq, 0
        for message, data, size in encoded:
            message_id = message["id"]
            if parent is None:  # explicit parent unknown: fine only if this message exists
                if tx.one(SQL_MESSAGE, (app, session_id, message_id)) is None:
                    raise MessageNotFoundError(f"message {parent_id!r} not in session")
                parent = (None, 0, 0)
            row = MessageRow(
                app, session_id, message_id, seq + 1, parent[0], message["role"], size,
                parent[1] + 1, parent[2] + size, message.get("createdAt"), undo, data,
                text_of(message),
            )  # fmt: skip
            if self._insert_message(tx, row):
                seq, written, head_id = seq + 1, written + 1, message_id
                parent = (message_id, row.depth, row.path_bytes)
                self._index_skill_loads(tx, app, session_id, message)
                if delta:
                    self._apply_state(tx, app, session_id, user_id, delta)
                out.append(message)
            else:
                stored = tx.one(SQL_STORED, (app, session_id, message_id))
                assert stored is not None
                parent = (message_id, stored[1], stored[2])
                out.append(decode_message(stored[0]))
        now = self._now_us()
        tx.execute(
            SQL_SESSION_AFTER_APPEND,
            (app, session_id, user_id, now, now, head_id, seq, written),
        )
        return out

    @staticmethod
    def _start_parent(
        tx: Tx, app: str, session_id: str, parent_id: str | AutoType | None, state: Row | None
    ) -> tuple[str | None, int, int] | None:
        """``(parent id, depth, path_bytes)`` of the first message; None = unknown id."""
        if parent_id is AUTO:
            if state is None or state[0] is None or state[2] is None:
                return (None, 0, 0)
            return (state[0], int(state[2]), int(state[3]))
        if parent_id is None:
            return (None, 0, 0)
        node = tx.one(SQL_NODE, (app, session_id, parent_id))
        return (parent_id, int(node[0]), int(node[1])) if node else None

    @staticmethod
    def _index_skill_loads(tx: Tx, app: str, session_id: str, message: Message) -> None:
        for label, key, call_id in skill_loads_of(message):
            tx.execute(SQL_SKILL_UPSERT, (app, session_id, label, key, message["id"], call_id))

    # ------------------------------------------------------------------ update / delete

    def update_message(self, app: str, session_id: str, message: Message) -> Message:
        """Replace an existing message's content; ``MessageNotFoundError`` if unknown."""
        encoded = _encode_row(message)
        return self._write(
            "update_message",
            lambda tx: self._update(tx, app, session_id, encoded),
            lock=(app, session_id, None),
        )

    def _update(
        self, tx: Tx, app: str, session_id: str, encoded: tuple[Message, str, int]
    ) -> Message:
        message, data, size = encoded
        message_id = message.get("id")
        old = tx.one(
            "SELECT data, byte_size FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?",
            (app, session_id, message_id),
        )
        if old is None or not isinstance(message_id, str):
            raise MessageNotFoundError(f"message {message_id!r} not in session")
        if "createdAt" not in message:
            created = decode_message(old[0]).get("createdAt")
            if created is not None:
                # Only a kept createdAt changes the JSON _encode_row already produced.
                message = {**message, "createdAt": created}
                data = encode_message(message)
                size = len(data.encode("utf-8"))
        tx.execute(
            "UPDATE tl_messages SET role = ?, data = ?, byte_size = ?, created_at = ? "
            "WHERE app = ? AND session_id = ? AND id = ?",
            (message["role"], data, size, message.get("createdAt"), app, session_id, message_id),
        )
        if size != old[1]:
            key = (message_id, app, session_id)
            tx.execute(SQL_SHIFT_SUBTREE, (*key, 0, old[1] - size, app, session_id))
        self._reindex_message(tx, app, session_id, message_id, text_of(message))
        tx.execute(SQL_SKILL_DELETE_FOR, (app, session_id, message_id))
        self._index_skill_loads(tx, app, session_id, message)
        self._touch(tx, app, session_id)
        return message

    def delete_messages(self, app: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Delete those messages; orphaned children become roots; returns the count deleted."""
        ids = list(dict.fromkeys(i for i in message_ids if isinstance(i, str)))
        return self._write(
            "delete_messages",
            lambda tx: self._delete(tx, app, session_id, ids),
            lock=(app, session_id, None),
        )

    def _delete(self, tx: Tx, app: str, session_id: str, ids: list[str]) -> int:
        key = (app, session_id)
        found: list[str] = []
        for chunk in _chunks(ids):
            found += [
                row[0]
                for row in tx.all(
                    "SELECT id FROM tl_messages WHERE app = ? AND session_id = ? "
                    f"AND id IN {_in_list(len(chunk))}",
                    (*key, *chunk),
                )
            ]
        self._touch(tx, app, session_id)
        if not found:
            return 0
        gone = set(found)
        orphans: list[Row] = []
        for chunk in _chunks(found):
            orphans += tx.all(
                "SELECT id, depth, path_bytes, byte_size FROM tl_messages WHERE app = ? "
                f"AND session_id = ? AND parent_id IN {_in_list(len(chunk))}",
                (*key, *chunk),
            )
        self._unindex_messages(tx, app, session_id, found)
        for chunk in _chunks(found):
            marks = _in_list(len(chunk))
            tx.execute(
                "DELETE FROM tl_skill_loads WHERE app = ? AND session_id = ? "
                f"AND message_id IN {marks}",
                (*key, *chunk),
            )
            tx.execute(
                f"DELETE FROM tl_messages WHERE app = ? AND session_id = ? AND id IN {marks}",
                (*key, *chunk),
            )
        for orphan_id, depth, path_bytes, size in orphans:
            if orphan_id not in gone:
                self._make_root(tx, app, session_id, orphan_id, depth, path_bytes, size)
        self._after_delete(tx, app, session_id, gone)
        return len(found)

    @staticmethod
    def _make_root(
        tx: Tx, app: str, session_id: str, node_id: str, depth: int, path_bytes: int, size: int
    ) -> None:
        """Detach a message whose parent was deleted and renumber its subtree."""
        tx.execute(
            "UPDATE tl_messages SET parent_id = NULL WHERE app = ? AND session_id = ? AND id = ?",
            (app, session_id, node_id),
        )
        tx.execute(
            SQL_SHIFT_SUBTREE,
            (node_id, app, session_id, depth - 1, path_bytes - size, app, session_id),
        )

    @staticmethod
    def _after_delete(tx: Tx, app: str, session_id: str, gone: set[str]) -> None:
        head = tx.one("SELECT head_id FROM tl_sessions WHERE app = ? AND id = ?", (app, session_id))
        head_id = head[0] if head else None
        if head_id in gone:
            leaf = tx.one(SQL_NEWEST_LEAF, (app, session_id))
            head_id = leaf[0] if leaf else None
        tx.execute(
            "UPDATE tl_sessions SET head_id = ?, message_count = message_count - ? "
            "WHERE app = ? AND id = ?",
            (head_id, len(gone), app, session_id),
        )

    def clear_messages(self, app: str, session_id: str) -> None:
        """Delete every message, search row, overlay and skill load; head = None."""

        def run(tx: Tx) -> None:
            key = (app, session_id)
            self._unindex_messages(tx, app, session_id, None)
            for table in ("tl_messages", "tl_compactions", "tl_skill_loads"):
                tx.execute(f"DELETE FROM {table} WHERE app = ? AND session_id = ?", key)
            self._touch(tx, app, session_id)
            tx.execute(
                "UPDATE tl_sessions SET head_id = NULL, message_count = 0 WHERE app = ? AND id = ?",
                key,
            )

        self._write("clear_messages", run, lock=(app, session_id, None))

    # ------------------------------------------------------------------ reads

    def get_message(self, app: str, session_id: str, message_id: str) -> Message | None:
        """One stored message, or ``None``."""
        row = self._read(
            "get_message", lambda tx: tx.one(SQL_MESSAGE, (app, session_id, message_id))
        )
        return decode_message(row[0]) if row else None

    def get_head(self, app: str, session_id: str) -> Message | None:
        """The head message, or ``None``."""
        row = self._read("get_head", lambda tx: tx.one(SQL_HEAD_MESSAGE, (app, session_id)))
        return decode_message(row[0]) if row else None

    def set_head(self, app: str, session_id: str, message_id: str) -> None:
        """Move the head to any message of the session."""

        def run(tx: Tx) -> None:
            if tx.one(SQL_MESSAGE, (app, session_id, message_id)) is None:
                raise MessageNotFoundError(f"message {message_id!r} not in session")
            self._touch(tx, app, session_id)
            tx.execute(SQL_SET_HEAD, (message_id, app, session_id))

        self._write("set_head", run, lock=(app, session_id, None))

    def get_path(self, app: str, session_id: str, leaf_id: str | None = None) -> list[Message]:
        """Root→leaf path ending at ``leaf_id`` (default: the head)."""
        rows = self._path_rows("get_path", SQL_PATH, SQL_PATH_HEAD, app, session_id, leaf_id)
        return [decode_message(row[1]) for row in rows]

    def get_path_encoded(
        self, app: str, session_id: str, leaf_id: str | None = None
    ) -> list[tuple[str, str]]:
        """``(id, stored JSON)`` of :meth:`get_path`, so callers decode only what they show."""
        rows = self._path_rows("get_path", SQL_PATH, SQL_PATH_HEAD, app, session_id, leaf_id)
        return [(row[0], row[1]) for row in rows]

    def get_path_tail(
        self, app: str, session_id: str, count: int, leaf_id: str | None = None
    ) -> list[tuple[str, str, int]]:
        """The newest ``count`` messages of the path as ``(id, stored JSON, depth)``, root side
        first; reads ``count`` rows at most. ``MessageNotFoundError`` for an unknown leaf."""
        key = (app, session_id)
        if leaf_id is None:
            params: tuple[Any, ...] = (*key, *key, *key, count)
            rows = self._read("get_path_tail", lambda tx: tx.all(SQL_TAIL_HEAD, params))
        else:
            params = (*key, leaf_id, *key, count)
            rows = self._read("get_path_tail", lambda tx: tx.all(SQL_TAIL, params))
            if not rows:
                raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return [(row[0], row[1], int(row[2])) for row in rows]

    def get_path_ids(self, app: str, session_id: str, leaf_id: str | None = None) -> list[str]:
        """Ids of :meth:`get_path` without loading bodies."""
        rows = self._path_rows(
            "get_path_ids", SQL_PATH_IDS, SQL_PATH_IDS_HEAD, app, session_id, leaf_id
        )
        return [row[0] for row in rows]

    def _path_rows(
        self,
        operation: str,
        sql_leaf: str,
        sql_head: str,
        app: str,
        session_id: str,
        leaf_id: str | None,
    ) -> list[Row]:
        key = (app, session_id)
        if leaf_id is None:
            params: tuple[Any, ...] = (*key, *key, *key)
            return self._read(operation, lambda tx: tx.all(sql_head, params))
        rows = self._read(operation, lambda tx: tx.all(sql_leaf, (*key, leaf_id, *key)))
        if not rows:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return rows

    def get_recent_path(
        self, app: str, session_id: str, max_bytes: int, min_messages: int = 1
    ) -> RecentPath:
        """Newest contiguous suffix of the head path within ``max_bytes`` (see base)."""
        key = (app, session_id)
        params = (*key, *key, max(int(min_messages), 1), int(max_bytes), *key)
        rows = self._read("get_recent_path", lambda tx: tx.all(SQL_RECENT, params))
        if not rows:
            return RecentPath(messages=[], truncated=False, total_content_bytes=0)
        return RecentPath(
            messages=[decode_message(row[0]) for row in rows],
            truncated=int(rows[0][1]) > 1,
            total_content_bytes=int(rows[-1][2]),
        )

    def get_path_length(self, app: str, session_id: str, leaf_id: str | None = None) -> int:
        """Number of messages on the path (O(1): the leaf's stored depth)."""
        operation = "get_path_length"
        if leaf_id is None:
            row = self._read(operation, lambda tx: tx.one(SQL_HEAD_DEPTH, (app, session_id)))
            return int(row[0]) if row else 0
        node = self._read(operation, lambda tx: tx.one(SQL_NODE, (app, session_id, leaf_id)))
        if node is None:
            raise MessageNotFoundError(f"message {leaf_id!r} not in session")
        return int(node[0])

    def get_children(self, app: str, session_id: str, message_id: str) -> list[Message]:
        """Children of that message, oldest first."""
        sql = (
            "SELECT data FROM tl_messages WHERE app = ? AND session_id = ? AND parent_id = ? "
            "ORDER BY seq"
        )
        rows = self._read("get_children", lambda tx: tx.all(sql, (app, session_id, message_id)))
        return [decode_message(row[0]) for row in rows]

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
    ) -> list[SearchHit]:
        """Full-text search (docs/search.md); never raises on query text."""
        terms = parse_query(query)
        if not terms or limit < 1:
            return []
        owner = _owner_filter(user_id, without_user)

        def run(tx: Tx) -> list[Row]:
            args = (session_id, owner, limit)
            rows = self._search_message_rows(tx, app, terms, "all", *args)
            if rows or len(terms) == 1:  # one term: "any" would repeat the same search
                return rows
            return self._search_message_rows(tx, app, terms, "any", *args)

        hits = []
        for sid, message_id, role, data, score in self._read("search_messages", run):
            message = decode_message(data)
            hits.append(
                SearchHit(
                    id=message_id,
                    role=role,
                    content=text_of(message),
                    created_at=_hit_time(message),
                    session_id=sid,
                    score=float(score),
                )
            )
        return hits

    # ------------------------------------------------------------------ overlays

    def add_compaction(
        self, app: str, session_id: str, summary: str, from_message_id: str, to_message_id: str
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
            tx.execute(
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

    def get_compactions(self, app: str, session_id: str) -> list[Compaction]:
        """Every overlay of the session, oldest first."""
        sql = (
            "SELECT id, summary, from_message_id, to_message_id, created_at FROM tl_compactions "
            "WHERE app = ? AND session_id = ? ORDER BY seq"
        )
        rows = self._read("get_compactions", lambda tx: tx.all(sql, (app, session_id)))
        return [Compaction(r[0], r[1], r[2], r[3], us_to_datetime(r[4])) for r in rows]

    def get_skill_loads(self, app: str, session_id: str) -> list[SkillLoad]:
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

    def get_block(self, app: str, owner: OwnerKind, owner_id: str, label: str) -> str | None:
        """Stored content of a block, or ``None``."""
        sql = (
            "SELECT content FROM tl_blocks WHERE app = ? AND owner = ? AND owner_id = ? "
            "AND label = ?"
        )
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
            tx.execute(sql, (app, owner, owner_id, label, content, self._now_us()))
            if owner == "session":
                self._touch(tx, app, owner_id, user_id)

        lock = (app, owner_id, user_id) if owner == "session" else None
        self._write("set_block", run, lock=lock)

    def get_prompt(self, app: str, session_id: str) -> str | None:
        """The persisted frozen system prompt, if any."""
        sql = "SELECT prompt FROM tl_prompts WHERE app = ? AND session_id = ?"
        row = self._read("get_prompt", lambda tx: tx.one(sql, (app, session_id)))
        return row[0] if row else None

    def set_prompt(self, app: str, session_id: str, prompt: str | None) -> None:
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
            tx.execute(sql, params)
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

    # ------------------------------------------------------------------ scoped state

    def get_state(self, app: str, session_id: str, user_id: str | None) -> dict[str, Any]:
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
        return {key: json.loads(value) for _, key, value in rows}

    def update_state(
        self, app: str, session_id: str, user_id: str | None, delta: Mapping[str, Any]
    ) -> None:
        """Apply a delta atomically (``None`` deletes; ``temp:`` keys ignored)."""
        stored = stored_delta(delta, user_id)
        if not stored:
            return

        def run(tx: Tx) -> None:
            self._apply_state(tx, app, session_id, user_id, stored)
            self._touch(tx, app, session_id, user_id)

        self._write("update_state", run, lock=(app, session_id, user_id))

    @staticmethod
    def _undo_record(
        tx: Tx, app: str, session_id: str, delta: Mapping[str, Any]
    ) -> dict[str, list[Any]]:
        current = {row[0]: row[1] for row in tx.all(SQL_SESSION_STATE, (app, session_id))}
        return state_undo(delta, current)

    @staticmethod
    def _apply_state(
        tx: Tx, app: str, session_id: str, user_id: str | None, delta: Mapping[str, Any]
    ) -> None:
        # Key order: two writers sharing app:/user: keys lock them in the same order.
        for key, value in sorted(delta.items()):
            owner, owner_id = state_owner(key, session_id, user_id)
            if value is None:
                tx.execute(SQL_STATE_DELETE, (app, owner, owner_id, key))
            else:
                tx.execute(SQL_STATE_UPSERT, (app, owner, owner_id, key, dumps(value)))

    def rewind(self, app: str, session_id: str, before_message_id: str) -> None:
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
                    tx.execute(SQL_STATE_UPSERT, (app, "session", session_id, key, dumps(old)))
                else:
                    tx.execute(SQL_STATE_DELETE, (app, "session", session_id, key))
            self._touch(tx, app, session_id)
            tx.execute(SQL_SET_HEAD, (node[3], app, session_id))

        self._write("rewind", run, lock=(app, session_id, None))


check_every_public_method(SQLStore)

__all__ = ["MESSAGE_COLUMNS", "MessageRow", "Row", "SQLStore", "SessionKey", "Tx"]
