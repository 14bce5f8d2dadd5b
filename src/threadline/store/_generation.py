"""The ``generation=`` precondition of the per-session store methods (api.md Amendment 11).

Every creation of an (app, session id) gets a generation, distinct in the store and never
reused (``tl_sessions.generation``; the schemas number it). A method that acts on one session
takes ``generation=``: given, the call runs only while the session is still that creation —
otherwise it raises ``SessionNotFoundError`` and stores nothing.

The methods declare the keyword and leave it alone: :func:`bind_generations` wraps each one
that declares it and notes the expectation for the duration of the call; every transaction
the call opens checks it (``SQLBase._guarded``) in the same transaction as the work — a write
first, row-locking the session so that no delete slips between the check and the write; a
read in one snapshot first, and a PostgreSQL read of one snapshot per statement after each
of its queries (generations are never reused, so a session still the expected one after a
query was that one during it).

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> first = store.create_session("default", "s1").generation
>>> _ = store.delete_session("default", "s1")
>>> _ = store.create_session("default", "s1")
>>> store.get_head("default", "s1", generation=first)
Traceback (most recent call last):
threadline.errors.SessionNotFoundError: session 's1' in app 'default' is not generation 1 ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from threadline._checks import public_methods
from threadline.errors import InvalidArgumentError, SessionNotFoundError

__all__ = [
    "EXPECTED",
    "OBSERVED",
    "SQL_EXPECT_GENERATION",
    "SQL_GENERATION",
    "SQL_GENERATION_IS",
    "STALE_MARKER",
    "Expected",
    "Observation",
    "bind_generations",
    "check_generation",
    "stale_error",
    "takes_generation",
]

F = TypeVar("F", bound=Callable[..., Any])

Expected = tuple[str, str, int]
"""``(app, session_id, generation)`` a call expects."""

EXPECTED: ContextVar[Expected | None] = ContextVar("threadline_generation", default=None)
"""The expectation of the store call running in this thread (``None``: unchecked)."""

Observation = tuple[str, str, list[int]]
"""``(app, session_id, [generation])``: where a write notes the session's generation."""

OBSERVED: ContextVar[Observation | None] = ContextVar("threadline_observed", default=None)
"""Set by a caller about to bind to the session a write leaves (``SessionStore``): the
write, without ``generation=``, notes the session's generation in its own transaction, so
the caller binds to the creation it wrote to even if another writer deletes and creates the
session right after. A store that does not note it leaves the list empty."""

SQL_GENERATION = "SELECT generation FROM tl_sessions WHERE app = ? AND id = ?"
"""The generation of a session (no row: none)."""


def check_generation(
    one: Callable[[str, Sequence[Any]], Any], expected: Expected, lock: str = ""
) -> None:
    """Raise ``SessionNotFoundError`` unless the session is the expected generation.

    ``one`` runs a query in the open transaction (``Tx.one``); ``lock`` is the backend's
    row-lock suffix for a write, so the row cannot be deleted before the transaction ends.
    """
    row = one(SQL_GENERATION + lock, expected[:2])
    if row is None or row[0] != expected[2]:
        raise stale_error(expected, "deleted" if row is None else "deleted and created again")


STALE_MARKER = "threadline: stale generation"
"""In the error of :data:`SQL_EXPECT_GENERATION` (the backend turns it into
``SessionNotFoundError``)."""

_CHECK = (
    f"SELECT CAST(CASE WHEN COUNT(*) = 1 THEN '1' ELSE '{STALE_MARKER}' END AS INTEGER) "
    "FROM (SELECT 1 FROM tl_sessions WHERE app = ? AND id = ? AND generation = ?{lock}) g"
)
"""The check as one statement that fails unless the session is the expected generation: a
backend that sends statements ahead without waiting for their answer (PostgreSQL's
pipeline) checks without a round trip of its own. ``SQL_EXPECT_GENERATION`` also
row-locks the session (a write)."""
SQL_GENERATION_IS = _CHECK.format(lock="")
SQL_EXPECT_GENERATION = _CHECK.format(lock=" FOR UPDATE")


def stale_error(expected: Expected, what: str = "deleted") -> SessionNotFoundError:
    """What a call expecting ``expected`` raises when the session is not that one.

    >>> stale_error(("default", "s1", 3))
    SessionNotFoundError("session 's1' in app 'default' is not generation 3 any more: deleted")
    """
    app, session_id, generation = expected
    return SessionNotFoundError(
        f"session {session_id!r} in app {app!r} is not generation {generation} any more: {what}"
    )


def _position(params: list[inspect.Parameter], name: str) -> int | None:
    names = [p.name for p in params]
    return names.index(name) if name in names else None


def _checked(method: F) -> F:
    params = list(inspect.signature(method).parameters.values())[1:]  # without self
    app_at = _position(params, "app")
    session_at = _position(params, "session_id")
    owner_at = _position(params, "owner")
    if session_at is None:  # a block: (app, owner, owner_id, ...), owner "session"
        session_at = _position(params, "owner_id")
    assert app_at is not None and session_at is not None, method.__name__

    def argument(args: tuple[Any, ...], kwargs: dict[str, Any], at: int) -> Any:
        return args[at] if at < len(args) else kwargs.get(params[at].name)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        generation = kwargs.get("generation")
        if generation is None:
            return method(self, *args, **kwargs)
        if owner_at is not None and argument(args, kwargs, owner_at) != "session":
            raise InvalidArgumentError("generation= applies to session-scoped blocks only")
        app, session_id = argument(args, kwargs, app_at), argument(args, kwargs, session_at)
        if session_id is None:  # a search across sessions
            raise InvalidArgumentError("generation= needs the session_id of one session")
        token = EXPECTED.set((app, session_id, generation))
        try:
            return method(self, *args, **kwargs)
        finally:
            EXPECTED.reset(token)

    return wrapper  # type: ignore[return-value]


def takes_generation(method: Callable[..., Any]) -> bool:
    """True if ``method`` declares the ``generation=`` keyword (third-party stores may not).

    >>> import threadline
    >>> takes_generation(threadline.connect(":memory:").get_head)
    True
    >>> takes_generation(lambda app, session_id: None)
    False
    """
    try:
        return "generation" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


def bind_generations(cls: type) -> None:
    """Make every public method of ``cls`` that declares ``generation`` honour it."""
    for name, member in public_methods(cls):
        if "generation" in inspect.signature(member).parameters:
            setattr(cls, name, _checked(getattr(cls, name)))
