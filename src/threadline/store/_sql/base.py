"""The base of the SQL store: transactions and rows, shared helpers, the dialect hooks.

See :mod:`threadline.store._sql` for the dialect interface a backend implements.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, Protocol, Self, TypeVar

from threadline._attachments import ATTACH_MIN_BYTES, MARKER_JSON, Blob, extract, refuse_marker
from threadline._ownership import check_visible
from threadline._search_query import MatchMode, Term
from threadline._validate import check_max_message_bytes, check_size_policy
from threadline.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    MessageTooLargeError,
)
from threadline.messages import (
    check_message,
    encode_message,
    parse_timestamp,
)
from threadline.store._generation import (
    EXPECTED,
    OBSERVED,
    SQL_GENERATION,
    Expected,
    check_generation,
)
from threadline.store._sql.rows import (
    datetime_to_us,
    dumps,
    now_us,
    row_to_session_info,
    state_owner,
    us_to_datetime,
)
from threadline.store._sql.text import (
    SQL_HEAD_STATE,
    SQL_OWNER,
    SQL_SESSION,
    SQL_STATE_DELETE,
    SQL_STATE_UPSERT,
    SQL_TOUCH,
)
from threadline.types import (
    Compaction,
    Message,
    SessionInfo,
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

# The transaction ``Store.transaction`` holds open in this thread, per store (by ``id``):
# the writes and reads of that thread join it (``SQLBase._joined``).
_open = threading.local()
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

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads. A backend may hold it back and send it
        with the next query or the commit (PostgreSQL's pipeline): its error, if any, is
        raised there, and the transaction fails whole."""
        ...

    def many(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        """Run several queries (and whatever was sent before) in one round trip where the
        backend can; every row of each, in order."""
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
    The rule is :func:`threadline._ownership.check_visible`'s.
    """
    check_visible(app, session_id, owner, user_id)


def _undo(callbacks: list[Callable[[], None]]) -> None:
    """Call the rollback callbacks, latest first, and forget them."""
    while callbacks:
        callbacks.pop()()


def _in_list(count: int) -> str:
    return "(" + ", ".join("?" * count) + ")"


def _chunks(items: Sequence[str]) -> list[Sequence[str]]:
    return [items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK)]


def compactions_of(rows: Sequence[Row]) -> list[Compaction]:
    """:class:`Compaction` values of :data:`SQL_COMPACTIONS` rows."""
    return [Compaction(r[0], r[1], r[2], r[3], us_to_datetime(r[4])) for r in rows]


def _hit_time(message: Message) -> datetime | None:
    value = message.get("createdAt")
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


ROW_LIMIT = 1_800_000
"""Stored JSON bytes above which the ``"truncate"`` policy shrinks a message and the
``"error"`` policy refuses it (the ``"attach"`` policy moves long strings out of row)."""

MAX_MESSAGE_BYTES = 64 * 2**20
"""Default hard cap on one message's compact JSON, whatever the policy."""


class EncodedRow(NamedTuple):
    """A message ready for its row: the message as written (returned to the caller and
    indexed), the row's JSON (long strings replaced by references), the message's full
    UTF-8 size (what path byte totals count) and the attachments to store with it."""

    message: Message
    data: str
    size: int
    blobs: list[Blob]


def _utf8_size(text: str) -> int:
    """The UTF-8 size of ``text``, without encoding an ASCII text (most rows) again."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _encode_row(message: Message, policy: str, max_bytes: int) -> EncodedRow:
    """Check, size and encode one normalised message under a size policy.

    With ``"attach"`` the message is encoded first: a JSON shorter than
    :data:`ATTACH_MIN_BYTES` holds no string long enough to attach, and one without
    :data:`MARKER_JSON` no reference key, so nearly every message is stored without a walk
    for attachments. Otherwise the long strings are taken out and the rest encoded again
    (a large message is encoded twice; its hashing and storing cost far more).
    ``enforce_row_size`` only runs when the size measured here says it may be needed.
    """
    check_message(message)  # every way in: the shape normalize_message gives
    try:  # encoding is the check: nesting, lone surrogates, NaN and non-JSON values all fail
        data = encode_message(message)
        size = _utf8_size(data)
        blobs: list[Blob] = []
        if policy == "attach" and (size >= ATTACH_MIN_BYTES or MARKER_JSON in data):
            row, blobs, extra = extract(message)
            data = encode_message(row)
            size = _utf8_size(data) + extra
        else:  # stored whole: a forged reference would be resolved on read
            refuse_marker(message, data)
    except RecursionError:
        raise InvalidMessageError("message is nested too deeply") from None
    except InvalidMessageError:
        raise  # the reserved key: already says what is wrong
    except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidMessageError(f"message is not storable JSON: {exc}") from None
    if size > max_bytes:
        raise MessageTooLargeError(f"message is {size} bytes; this store takes at most {max_bytes}")
    if policy == "attach" or size <= ROW_LIMIT:
        return EncodedRow(message, data, size, blobs)
    if policy == "error":
        raise MessageTooLargeError(
            f"message is {size} bytes, over the {ROW_LIMIT}-byte row limit (size_policy='error')"
        )
    # Imported lazily: compaction depends on the store package, not the other way round.
    from threadline.compaction.micro import enforce_row_size

    message = enforce_row_size(message, ROW_LIMIT)
    data = encode_message(message)
    return EncodedRow(message, data, len(data.encode("utf-8")), [])


class SQLBase(ABC):
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

    #: Aggregate of ``tl_state`` rows aliased ``t`` into ONE JSON object text (key -> the
    #: stored JSON value), ``'{}'`` or NULL for no rows; PostgreSQL spells it its own way.
    _STATE_OBJECT = "json_group_object(t.key, json(t.value))"

    #: What "now" is for this store (``updated_at``, overlay and block times, purge cutoffs):
    #: ``None`` is the system clock; tests inject one (``clock=`` of the backends).
    _clock: Callable[[], datetime] | None = None

    #: What happens to a message too large for its row (``connect(size_policy=...)``) and the
    #: hard cap on one message (``connect(max_message_bytes=...)``); docs/attachments.md.
    _size_policy: str = "attach"
    #: The size options given to ``connect()`` (they win over a profile's size policy).
    size_options: frozenset[str] = frozenset()
    _max_message_bytes: int = MAX_MESSAGE_BYTES

    def _configure_size(self, size_policy: str, max_message_bytes: int) -> None:
        self._size_policy = check_size_policy("size_policy", size_policy)
        self._max_message_bytes = check_max_message_bytes("max_message_bytes", max_message_bytes)

    def _encode(self, message: Message, policy: str | None, max_bytes: int | None) -> EncodedRow:
        limit = self._max_message_bytes if max_bytes is None else max_bytes
        return _encode_row(message, policy or self._size_policy, limit)

    def _now_us(self) -> int:
        return now_us() if self._clock is None else datetime_to_us(self._clock())

    def now(self) -> datetime:
        """The store's current time (aware UTC): the system clock unless one was injected.

        >>> import threadline
        >>> threadline.connect(":memory:").now().tzinfo is not None
        True
        """
        return us_to_datetime(self._now_us())

    # ------------------------------------------------------------------ transactions

    def transaction(self, fn: Callable[[], T]) -> T:
        """Call ``fn()`` inside one transaction: every write this thread makes on this store
        while it runs joins it, and its reads see those writes; all of them commit when ``fn``
        returns, none if it raises. A nested call joins the open one. PostgreSQL may call
        ``fn`` again after a deadlock or serialisation failure (everything was rolled back).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> def both():
        ...     store.update_state("default", "s1", None, {"a": 1})
        ...     raise ValueError("changed my mind")
        >>> store.transaction(both)
        Traceback (most recent call last):
        ValueError: changed my mind
        >>> store.get_session("default", "s1") is None
        True
        """
        if self._joined() is not None:
            return fn()
        undo: list[Callable[[], None]] = []  # this attempt's _on_rollback callbacks

        def run(tx: Tx) -> T:
            _undo(undo)  # a retried attempt: the one before it rolled back
            joined = _open.__dict__.setdefault("tx", {})
            joined[id(self)] = tx
            undos = _open.__dict__.setdefault("undo", {})
            undos[id(self)] = undo
            try:
                return fn()
            finally:
                del joined[id(self)], undos[id(self)]

        try:
            result = self._write("transaction", run)
        except BaseException:
            _undo(undo)  # fn raised, or the COMMIT failed
            raise
        undo.clear()
        return result

    def _on_rollback(self, callback: Callable[[], None]) -> bool:
        """Inside :meth:`transaction` (this thread): call ``callback`` if that transaction
        (this attempt of it) rolls back, and return True; outside one: False, nothing noted.
        What a caller remembers of a write it made in the transaction (a handle's
        generation) is undone with the write."""
        undos: dict[int, list[Callable[[], None]]] | None = _open.__dict__.get("undo")
        undo = undos.get(id(self)) if undos else None
        if undo is None:
            return False
        undo.append(callback)
        return True

    def _joined(self) -> Tx | None:
        """The transaction ``transaction`` holds open in this thread on this store, if any."""
        joined: dict[int, Tx] | None = _open.__dict__.get("tx")
        return joined.get(id(self)) if joined else None

    # ------------------------------------------------------------------ dialect hooks

    @abstractmethod
    def _write(
        self, operation: str, fn: Callable[[Tx], T], *, lock: SessionKey | None = None
    ) -> T: ...

    @abstractmethod
    def _read(self, operation: str, fn: Callable[[Tx], T], *, snapshot: bool = False) -> T:
        """Run ``fn`` in a read; ``snapshot``: all its statements see one snapshot (SQLite
        reads always do)."""

    @abstractmethod
    def _insert_message(self, tx: Tx, row: MessageRow) -> bool: ...

    @abstractmethod
    def _reindex_message(
        self, tx: Tx, app: str, session_id: str, message_id: str, text: str
    ) -> None: ...

    @abstractmethod
    def _unindex_messages(
        self, tx: Tx, app: str, session_id: str, message_ids: Sequence[str] | None
    ) -> None: ...

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
    ) -> None: ...

    @abstractmethod
    def _unindex_entry(self, tx: Tx, app: str, label: str, key: str) -> None: ...

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
    ) -> list[Row]: ...

    @abstractmethod
    def _search_entry_rows(
        self, tx: Tx, app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
    ) -> list[Row]: ...

    @abstractmethod
    def close(self) -> None:
        """Release connections. Idempotent."""

    def _guarded(self, fn: Callable[[Tx], T], *, write: bool) -> Callable[[Tx], T]:
        """``fn`` with the ``generation=`` the running call expects (if any) checked first, in
        the same transaction (store/_generation.py): a write row-locks the registry row
        (:meth:`_expect_generation`), so no delete commits between the check and the write;
        a read here runs in one snapshot (a backend whose reads take a snapshot per
        statement checks them its own way: PostgreSQL's ``_trailed``). A write the caller
        binds to notes the generation it leaves the session at (``OBSERVED``)."""
        expected = EXPECTED.get()
        if expected is None:
            observation = OBSERVED.get() if write else None
            if observation is None:
                return fn
            app, session_id, noted = observation

            def observed_write(tx: Tx) -> T:
                result = fn(tx)
                row = tx.one(SQL_GENERATION, (app, session_id))
                noted[:] = [] if row is None else [row[0]]
                return result

            return observed_write

        def checked(tx: Tx) -> T:
            if write:
                self._expect_generation(tx, expected)
            else:
                check_generation(tx.one, expected)
            return fn(tx)

        return checked

    def _expect_generation(self, tx: Tx, expected: Expected) -> None:
        """Raise ``SessionNotFoundError`` (now or, for a backend that defers statements, at
        the latest by the commit) unless the session is the expected generation, and hold
        its registry row until the transaction ends."""
        check_generation(tx.one, expected, self._FOR_UPDATE)

    def _head_state_query(
        self, app: str, session_id: str, ids: Sequence[str]
    ) -> tuple[str, Sequence[Any]]:
        """The first read of an append: :data:`SQL_HEAD_STATE`. A backend whose inserts get
        no answer before the commit (PostgreSQL's pipeline) adds a sixth column, which of
        ``ids`` are stored already as 1-based positions in ``ids`` (exact: the session row
        is locked), and its ``_insert_message`` is then only called for the others; a
        backend whose session lock inserts a missing registry row adds a seventh, whether
        the row is that new one (the session did not exist)."""
        return SQL_HEAD_STATE, (app, session_id)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ registry helpers

    def _touch(self, tx: Tx, app: str, session_id: str, user_id: str | None = None) -> None:
        if user_id is not None:
            row = tx.one(SQL_OWNER, (app, session_id))
            _check_owner(app, session_id, row[0] if row else None, user_id)
        now = self._now_us()
        tx.send(SQL_TOUCH, (app, session_id, user_id, now, now))

    @staticmethod
    def _session_row(tx: Tx, app: str, session_id: str) -> SessionInfo | None:
        row = tx.one(SQL_SESSION, (app, session_id))
        return row_to_session_info(row) if row is not None else None

    @staticmethod
    def _apply_state(
        tx: Tx, app: str, session_id: str, user_id: str | None, delta: Mapping[str, Any]
    ) -> None:
        # Key order: two writers sharing app:/user: keys lock them in the same order.
        for key, value in sorted(delta.items()):
            owner, owner_id = state_owner(key, session_id, user_id)
            if value is None:
                tx.send(SQL_STATE_DELETE, (app, owner, owner_id, key))
            else:
                tx.send(SQL_STATE_UPSERT, (app, owner, owner_id, key, dumps(value)))
