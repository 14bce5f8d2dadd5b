"""The longer steps of ``SessionManager``'s verbs, apart from the verbs' signatures and
examples (``threadline.manager``): argument rules, the fork copy, the overflow of a capped
append, the message an invocation starts with.

>>> SPLIT_PREFIX
'[Context from previous session]'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from threadline._ownership import owned_by
from threadline.errors import InvalidArgumentError, MessageNotFoundError
from threadline.messages import fold_role, new_id
from threadline.session import Session
from threadline.types import AppendResult, AutoType, Message, SessionInfo

__all__ = [
    "SPLIT_PREFIX",
    "append_capped",
    "check_usage",
    "copies_of",
    "cutoff",
    "first_of_invocation",
    "purged_by",
]

SPLIT_PREFIX = "[Context from previous session]"


def cutoff(now: Callable[[], datetime], older_than: datetime | timedelta) -> datetime:
    """The ``before`` of ``purge(older_than=...)``: a timedelta counts back from the store's
    clock, a naive datetime is UTC.

    >>> cutoff(lambda: datetime(2026, 1, 2, tzinfo=UTC), timedelta(days=1)).day
    1
    >>> cutoff(datetime.now, datetime(2026, 1, 1)).tzinfo
    datetime.timezone.utc
    """
    if isinstance(older_than, timedelta):
        try:
            return now() - older_than
        except OverflowError:
            raise InvalidArgumentError("older_than reaches before the year 1") from None
    if isinstance(older_than, datetime):
        return older_than if older_than.tzinfo else older_than.replace(tzinfo=UTC)
    raise InvalidArgumentError("older_than must be a datetime or a timedelta")


def purged_by(info: SessionInfo | None, before: datetime, user_id: str | None) -> bool:
    """Whether ``purge(before, user_id)`` deletes the session with this registry row (a
    purge naming a user deletes only that user's sessions: ``owned_by``).

    >>> purged_by(None, datetime.now(UTC), None)
    False
    """
    if info is None or info.updated_at >= before:
        return False
    return owned_by(info.user_id, user_id)


def check_usage(input_tokens: int, output_tokens: int, cost: float) -> float:
    """``cost`` as a float, once the counters are non-negative numbers (tokens: integers).

    >>> check_usage(10, 5, 0)
    0.0
    >>> check_usage(-1, 5, 0)
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: input_tokens must be a non-negative integer
    """
    for what, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgumentError(f"{what} must be a non-negative integer")
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0:
        raise InvalidArgumentError("cost must be a non-negative number")
    return float(cost)


def copies_of(history: Iterable[Message]) -> list[Message]:
    """A fork's copies of a history: new ids, and what an append takes (roles older
    releases stored from other APIs mapped as the converters map them, clarification 25).

    >>> [m["id"] == "m1" for m in copies_of([{"id": "m1", "role": "user", "parts": []}])]
    [False]
    """
    return [fold_role({**m, "id": new_id()}) for m in history]


def first_of_invocation(path: Iterable[Message], session_id: str, invocation_id: str) -> str:
    """Id of the first message of ``path`` (the active path) tagged ``metadata.invocationId``.

    >>> path = [{"id": "m1"}, {"id": "m2", "metadata": {"invocationId": "inv"}}]
    >>> first_of_invocation(path, "s1", "inv")
    'm2'
    """
    for message in path:
        metadata = message.get("metadata")
        if isinstance(metadata, dict) and metadata.get("invocationId") == invocation_id:
            return str(message["id"])
    raise MessageNotFoundError(
        f"no message of invocation {invocation_id!r} on the active path of {session_id!r}"
    )


def append_capped(
    session: Session,
    keep: int,
    messages: Sequence[Mapping[str, Any]],
    parent_id: str | AutoType | None,
) -> AppendResult:
    """``append_all`` with ``max_messages=keep``: the stored messages, and those this append
    pushed out of the last ``keep`` of the active path (RadarOS: overflow = the window
    before + what was appended - the window after).

    >>> from threadline import AUTO, SessionManager
    >>> s = SessionManager(":memory:").get_session("s1")
    >>> _ = s.append_message({"role": "user", "content": "hi"})
    >>> result = append_capped(s, 1, [{"role": "user", "content": "yo"}], AUTO)
    >>> [m["parts"][0]["text"] for m in result.overflow]
    ['hi']
    """
    window = [m["id"] for m in session.get_history(limit=keep, attachments="ref")]
    stored = session.append_messages(messages, parent_id)
    window.extend(m["id"] for m in stored)
    # What left the window sits right before it: the last keep + len(stored) suffice,
    # unless automatic compaction summarised some of it (those are read one by one).
    after = session.get_history(limit=keep + len(stored)) if stored else []
    left = {m["id"]: m for m in after[:-keep]}
    kept = {m["id"] for m in after[-keep:]}
    gone = [mid for mid in window if mid not in kept and mid not in left]
    # Gone from the history: off the active path now (an append that branches), or
    # inside a summary on it (compact_when); only the latter overflowed.
    on_path = set(session._backend.get_path_ids()) if gone else set()
    overflow = [
        left[mid] if mid in left else session.get_message(mid)
        for mid in window
        if mid in left or (mid in on_path and mid not in kept)
    ]
    return AppendResult(stored, [m for m in overflow if m is not None])
