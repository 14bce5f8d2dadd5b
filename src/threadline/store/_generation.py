"""The ``generation=`` precondition of the per-session store methods (api.md Amendment 11).

Every creation of an (app, session id) gets a generation, distinct in the store and never
reused (``tl_sessions.generation``; the schemas number it). A method that acts on one session
takes ``generation=``: given, the call runs only while the session is still that creation —
otherwise it raises ``SessionNotFoundError`` and stores nothing.

The methods declare the keyword and leave it alone: :func:`bind_generations` wraps each one
that declares it, notes the expectation for the duration of the call, and every transaction
the call opens checks it first (``SQLBase._guarded``), in the same transaction as the work —
so a delete cannot slip between the check and a write.

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

from threadline.errors import InvalidArgumentError, SessionNotFoundError

__all__ = ["EXPECTED", "Expected", "bind_generations", "check_generation", "takes_generation"]

F = TypeVar("F", bound=Callable[..., Any])

Expected = tuple[str, str, int]
"""``(app, session_id, generation)`` a call expects."""

EXPECTED: ContextVar[Expected | None] = ContextVar("threadline_generation", default=None)
"""The expectation of the store call running in this thread (``None``: unchecked)."""

_SQL_GENERATION = "SELECT generation FROM tl_sessions WHERE app = ? AND id = ?"


def check_generation(
    one: Callable[[str, Sequence[Any]], Any], expected: Expected, lock: str = ""
) -> None:
    """Raise ``SessionNotFoundError`` unless the session is the expected generation.

    ``one`` runs a query in the open transaction (``Tx.one``); ``lock`` is the backend's
    row-lock suffix for a write, so the row cannot be deleted before the transaction ends.
    """
    app, session_id, generation = expected
    row = one(_SQL_GENERATION + lock, (app, session_id))
    if row is None or row[0] != generation:
        state = "was deleted" if row is None else "was deleted and created again"
        raise SessionNotFoundError(
            f"session {session_id!r} in app {app!r} is not generation {generation} "
            f"any more: it {state}"
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
        return args[at] if at < len(args) else kwargs[params[at].name]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        generation = kwargs.get("generation")
        if generation is None:
            return method(self, *args, **kwargs)
        if owner_at is not None and argument(args, kwargs, owner_at) != "session":
            raise InvalidArgumentError("generation= applies to session-scoped blocks only")
        app, session_id = argument(args, kwargs, app_at), argument(args, kwargs, session_at)
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
    seen: set[str] = set()
    for klass in cls.__mro__[:-1]:
        for name, member in list(vars(klass).items()):
            if name in seen or name.startswith("_") or not inspect.isfunction(member):
                continue
            seen.add(name)
            if "generation" in inspect.signature(member).parameters:
                setattr(cls, name, _checked(getattr(cls, name)))
