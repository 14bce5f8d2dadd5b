"""The field rules of export records (``threadline.export``): times as the format writes
them, and the checks each parsed field goes through, raising ``InvalidArgumentError``
naming the field. Pure functions, no I/O.

>>> parse_time("2026-01-02T03:04:05.000006Z", "session.created_at").microsecond
6
>>> as_int(-1, "last_seq")
Traceback (most recent call last):
threadline.errors.InvalidArgumentError: last_seq must be a non-negative 64-bit integer
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from threadline._validate import INT64_MAX
from threadline.errors import InvalidArgumentError

__all__ = [
    "as_int",
    "as_object",
    "as_strings",
    "isoformat_utc",
    "optional_text",
    "parse_time",
    "reason",
]


def isoformat_utc(value: datetime) -> str:
    """An aware datetime as the format writes it: ISO 8601, UTC, microseconds, ``Z``.

    >>> isoformat_utc(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    '2026-01-02T03:04:05.000006Z'
    """
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: Any, what: str) -> datetime:
    """An ISO 8601 time with a zone, as an aware UTC datetime.

    >>> parse_time("2026-01-02T03:04:05", "created_at")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: created_at needs a time zone: '2026-01-02T03:04:05'
    """
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be an ISO 8601 string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgumentError(f"{what} is not an ISO 8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise InvalidArgumentError(f"{what} needs a time zone: {value!r}")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59-14:00 is in year 10000 in UTC
        raise InvalidArgumentError(f"{what} is outside years 1-9999 in UTC: {value!r}") from None


def reason(exc: BaseException) -> str:
    """What was wrong with a record, from the error its parse raised.

    >>> reason(KeyError("app"))
    "missing field 'app'"
    """
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def as_object(value: Any, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object.

    >>> as_object([], "usage")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: usage must be a JSON object
    """
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{what} must be a JSON object")
    return value


def as_strings(value: Any, what: str) -> dict[str, str]:
    """``value`` if it is a JSON object of strings (blocks: label -> content).

    >>> as_strings({"notes": 1}, "blocks")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: blocks['notes'] must be a string
    """
    mapping = as_object(value, what)
    for key, content in mapping.items():
        if not isinstance(content, str):
            raise InvalidArgumentError(f"{what}[{key!r}] must be a string")
    return mapping


def as_int(value: Any, what: str) -> int:
    """``value`` if it is a non-negative 64-bit integer (``bool`` is not one).

    >>> as_int(True, "seq")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: seq must be a non-negative 64-bit integer
    """
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= INT64_MAX:
        raise InvalidArgumentError(f"{what} must be a non-negative 64-bit integer")
    return value


def optional_text(value: Any, what: str) -> str | None:
    """``value`` if it is a string or ``None``.

    >>> optional_text(3, "session.name")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: session.name must be a string or null
    """
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string or null")
    return value
