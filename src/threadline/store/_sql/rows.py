"""Pure helpers shared by the SQL backends: time, cursors, registry rows and state undo.

Nothing here touches a database; every function is deterministic given its inputs
(except :func:`now_us`, which reads the clock).

>>> decode_cursor(encode_cursor(1_700_000_000_000_000, "s1"))
(1700000000000000, 's1')
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from threadline._state import scope_of
from threadline._validate import INT64_MAX
from threadline.errors import InvalidArgumentError, StoreError
from threadline.messages import dumps
from threadline.types import SessionInfo

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

SESSION_COLUMNS = (
    "id, app, user_id, name, parent_session_id, model, source, input_tokens, output_tokens, "
    "estimated_cost, end_reason, metadata, message_count, created_at, updated_at, generation"
)
"""Column list of ``tl_sessions`` in the order :func:`row_to_session_info` expects."""


# --------------------------------------------------------------------------- time


def now_us() -> int:
    """Current time as integer unix microseconds.

    >>> now_us() > 1_600_000_000_000_000
    True
    """
    return time.time_ns() // 1000


def us_to_datetime(us: int) -> datetime:
    """Unix microseconds to an aware UTC datetime (exact, no float rounding).

    >>> us_to_datetime(1_500_000).isoformat()
    '1970-01-01T00:00:01.500000+00:00'
    """
    return _EPOCH + timedelta(microseconds=int(us))


def datetime_to_us(value: datetime) -> int:
    """An aware or naive (= UTC) datetime to unix microseconds.

    >>> datetime_to_us(datetime(1970, 1, 1, 0, 0, 1))
    1000000
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# --------------------------------------------------------------------------- JSON


# The decoder's C scanner (an instance attribute, untyped in typeshed), without the wrappers.
_scan_json: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def loads_stored(text: str) -> Any:
    """Decode JSON text the database produced (no surrounding whitespace), at a third of
    ``json.loads``' cost on small documents (it skips the decoder's whitespace passes):
    listings decode one state object per session.

    >>> loads_stored('{"a":[1,null]}')
    {'a': [1, None]}
    >>> loads_stored(' {"a":1}')  # anything else still decodes (through json.loads)
    {'a': 1}
    """
    try:
        value, end = _scan_json(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return json.loads(text)
    return value


# --------------------------------------------------------------------------- list cursors


def encode_cursor(updated_at_us: int, session_id: str) -> str:
    """Opaque keyset cursor for ``list_sessions`` (position after that row).

    >>> isinstance(encode_cursor(1, "a"), str)
    True
    """
    raw = dumps([int(updated_at_us), session_id]).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[int, str]:
    """Inverse of :func:`encode_cursor`; anything malformed raises ``InvalidArgumentError``.

    >>> decode_cursor("not a cursor")
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: malformed session list cursor
    """
    if not isinstance(cursor, str) or not cursor or len(cursor) > 4096:
        raise InvalidArgumentError("malformed session list cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError("malformed session list cursor") from exc
    if (
        not isinstance(value, list)
        or len(value) != 2
        or type(value[0]) is not int
        or not isinstance(value[1], str)
    ):
        raise InvalidArgumentError("malformed session list cursor")
    return value[0], value[1]


# --------------------------------------------------------------------------- registry rows


_new_info = object.__new__
_set_dict = object.__setattr__


def row_to_session_info(row: Sequence[Any]) -> SessionInfo:
    """Build a :class:`SessionInfo` from a row selected with :data:`SESSION_COLUMNS`.

    The frozen dataclass is filled in one step (its ``__init__`` sets fifteen fields one
    ``object.__setattr__`` at a time, which cost more than reading the row): a listing of
    50 sessions is mostly this function.

    >>> row = ("s1", "app", None, None, None, None, None, 0, 0, 0.0, None, "{}", 0, 0, 1, 7)
    >>> info = row_to_session_info(row)
    >>> info.updated_at.microsecond, info.generation, info == SessionInfo(**info.to_dict() | {
    ...     "created_at": info.created_at, "updated_at": info.updated_at})
    (1, 7, True)
    """
    text = row[11]
    # Most sessions carry no metadata: skip the JSON decoder for the stored default '{}'.
    metadata = json.loads(text) if text and text != "{}" else {}
    info = _new_info(SessionInfo)
    _set_dict(
        info,
        "__dict__",
        {
            "id": row[0],
            "app_name": row[1],
            "user_id": row[2],
            "name": row[3],
            "parent_session_id": row[4],
            "model": row[5],
            "source": row[6],
            "input_tokens": int(row[7] or 0),
            "output_tokens": int(row[8] or 0),
            "estimated_cost": float(row[9] or 0.0),
            "end_reason": row[10],
            "metadata": metadata if isinstance(metadata, dict) else {},
            "message_count": int(row[12] or 0),
            "created_at": _EPOCH + timedelta(microseconds=row[13]),
            "updated_at": _EPOCH + timedelta(microseconds=row[14]),
            "generation": int(row[15] or 0),
        },
    )
    return info


# --------------------------------------------------------------------------- path reads


def chained_tail(rows: Sequence[Sequence[Any]]) -> list[tuple[str, str, int]] | None:
    """The path tail in ``rows`` — newest-first ``(id, data, depth, parent_id, head_id)`` by
    ``seq`` — as ``(id, data, depth)`` root side first, when they chain from the head (each
    row the parent of the one before, the first the head); ``None`` when they do not (a
    branch or a moved head: the caller walks the tree instead). Rows after the root are
    dropped.

    >>> rows = [("m3", "{}", 3, "m2", "m3"), ("m2", "{}", 2, "m1", "m3")]
    >>> chained_tail(rows)
    [('m2', '{}', 2), ('m3', '{}', 3)]
    >>> chained_tail([("m3", "{}", 3, "m2", "m9")]) is None  # the head is elsewhere
    True
    """
    expected = rows[0][4] if rows else None
    out: list[tuple[str, str, int]] = []
    for message_id, data, depth, parent_id, _ in rows:
        if message_id != expected:
            return None
        out.append((message_id, data, int(depth)))
        expected = parent_id
        if expected is None:
            break
    out.reverse()
    return out


# --------------------------------------------------------------------------- scoped state


def state_owner(key: str, session_id: str, user_id: str | None) -> tuple[str, str]:
    """``(owner, owner_id)`` of a stored state key; ``user:`` keys need ``user_id``. Internal
    keys (``_state.INTERNAL_PREFIX``) are stored with the session's keys (one index range:
    a listing reads both with one lookup); reads take them out (``_state.split_internal``).

    >>> state_owner("app:x", "s1", None), state_owner("x", "s1", None)
    (('app', ''), ('session', 's1'))
    >>> state_owner("__threadline__:adk", "s1", None)
    ('session', 's1')
    """
    scope = scope_of(key)
    if scope == "app":
        return "app", ""
    if scope == "user":
        if user_id is None:
            raise InvalidArgumentError(f"state key {key!r} needs a user_id")
        return "user", user_id
    return "session", session_id


def stored_delta(delta: Mapping[str, Any] | None, user_id: str | None) -> dict[str, Any]:
    """Validate a delta for storage: drops ``temp:`` keys, checks keys and ``user:`` scoping.

    >>> stored_delta({"temp:a": 1, "b": None}, None)
    {'b': None}
    """
    out: dict[str, Any] = {}
    for key, value in (delta or {}).items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"state keys must be non-empty strings, got {key!r}")
        if scope_of(key) == "temp":
            continue
        if scope_of(key) == "user" and user_id is None:
            raise InvalidArgumentError(f"state key {key!r} needs a user_id")
        out[key] = value
    return out


def is_session_key(key: str) -> bool:
    """True for keys stored per session (no ``app:``/``user:``/``temp:`` prefix).

    >>> is_session_key("topic"), is_session_key("user:name")
    (True, False)
    """
    return scope_of(key) == "session"


def state_undo(delta: Mapping[str, Any], current: Mapping[str, str]) -> dict[str, list[Any]]:
    """Undo record of the session-scoped keys of ``delta``: ``{key: [existed, old_value]}``.

    ``current`` maps the session keys that exist now to their stored JSON text.

    >>> state_undo({"a": 2, "b": None, "app:x": 1}, {"a": "1"})
    {'a': [True, 1], 'b': [False, None]}
    """
    undo: dict[str, list[Any]] = {}
    for key in delta:
        if not is_session_key(key):
            continue
        if key in current:
            undo[key] = [True, json.loads(current[key])]
        else:
            undo[key] = [False, None]
    return undo


def merge_undo(records: Iterable[str | None]) -> dict[str, tuple[bool, Any]]:
    """Combine undo records (JSON text, oldest first): the earliest record of a key wins.

    >>> merge_undo(['{"a":[true,1]}', None, '{"a":[true,5],"b":[false,null]}'])
    {'a': (True, 1), 'b': (False, None)}
    """
    merged: dict[str, tuple[bool, Any]] = {}
    for text in records:
        if not text:
            continue
        record = json.loads(text)
        if not isinstance(record, dict):
            continue
        for key, entry in record.items():
            if key not in merged and isinstance(entry, list) and len(entry) == 2:
                merged[key] = (bool(entry[0]), entry[1])
    return merged


__all__ = [
    "SESSION_COLUMNS",
    "chained_tail",
    "datetime_to_us",
    "decode_cursor",
    "dumps",
    "encode_cursor",
    "is_session_key",
    "loads_stored",
    "merge_undo",
    "now_us",
    "row_to_session_info",
    "schema_version_of",
    "state_owner",
    "state_undo",
    "stored_delta",
    "us_to_datetime",
]


def check_usage_sums(current: Sequence[Any], added: Sequence[Any]) -> None:
    """Raise ``InvalidArgumentError`` if adding usage would overflow a counter (tokens past
    the largest signed 64-bit integer, cost past the largest finite float).

    >>> check_usage_sums((1, 2, 0.5), (10, 20, 0.25))
    >>> check_usage_sums((2**63 - 1, 0, 0.0), (1, 0, 0.0))
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: usage counters would overflow: input_tokens
    """
    names = ("input_tokens", "output_tokens", "estimated_cost")
    for name, old, new in zip(names, current, added, strict=True):
        total = old + new
        if (isinstance(total, int) and total > INT64_MAX) or not math.isfinite(float(total)):
            raise InvalidArgumentError(f"usage counters would overflow: {name}")


def schema_version_of(value: object) -> int:
    """The schema version stored in ``tl_meta`` (text), or ``StoreError`` when it is not a
    version number — a damaged or foreign ``tl_meta``, which no migration may touch.

    >>> schema_version_of("5")
    5
    >>> schema_version_of("abc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.StoreError: store operation 'open' failed: ... schema_version 'abc', not ...
    """
    text = value if isinstance(value, str) else None
    if text is None or not text.isascii() or not text.isdigit():
        raise StoreError(
            "open",
            ValueError(
                f"tl_meta holds schema_version {value!r}, not a version number "
                "(a damaged or foreign database)"
            ),
        )
    return int(text)
