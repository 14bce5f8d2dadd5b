"""Message timestamps: the canonical ``YYYY-MM-DDTHH:MM:SS.mmmZ`` form and ISO 8601 parsing.

Re-exported by :mod:`threadline.messages`, the public home of these names.

>>> format_timestamp(parse_timestamp("2026-11-21T11:00:00+01:00"))
'2026-11-21T10:00:00.000Z'
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from threadline.errors import InvalidMessageError


def format_timestamp(dt: datetime) -> str:
    """Format ``dt`` as canonical ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (naive means UTC).

    >>> format_timestamp(datetime(2026, 11, 21, 10, 0, 0, 123456))
    '2026-11-21T10:00:00.123Z'
    """
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    dt = dt.astimezone(UTC)
    # Truncate (not round) to milliseconds so a timestamp never moves into the future.
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        f".{dt.microsecond // 1000:03d}Z"
    )


def now_iso() -> str:
    """Return the current UTC time in canonical message form.

    >>> now_iso().endswith("Z")
    True
    """
    return format_timestamp(datetime.now(UTC))


_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


def _parse_offset(text: str | None) -> timezone:
    if text is None or text in ("Z", "z"):
        return UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or "0")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_timestamp(value: str | datetime) -> datetime:
    """Parse an ISO 8601 string (``Z``, offsets, optional fraction) or datetime to aware UTC.

    Naive inputs are taken as UTC. Anything unparseable raises ``InvalidMessageError``.

    >>> parse_timestamp("2026-11-21T11:00:00+01:00").isoformat()
    '2026-11-21T10:00:00+00:00'
    """
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        try:
            return dt.astimezone(UTC)
        except (ValueError, OverflowError) as exc:  # e.g. year 1 with a positive offset
            raise InvalidMessageError(f"timestamp out of range: {value!r}") from exc
    if not isinstance(value, str):
        raise InvalidMessageError(
            f"timestamp must be a string or datetime, got {type(value).__name__}"
        )
    match = _ISO_RE.fullmatch(value.strip())
    if match is None:
        raise InvalidMessageError(f"invalid ISO 8601 timestamp: {value!r}")
    year, month, day, hour, minute, second, frac, offset = match.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    try:
        dt = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            micro,
            tzinfo=_parse_offset(offset),
        )
        return dt.astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # month 13, offset +25:00, year overflow...
        raise InvalidMessageError(f"invalid ISO 8601 timestamp: {value!r}") from exc
