"""Scoped state rules (pure): which keys live where, and how deltas split.

Keys are scoped by prefix: ``app:`` (every session of the app), ``user:`` (every session of
one user), ``temp:`` (only the live session object, never stored), anything else (this
session). A ``None`` value in a delta deletes the key.

Keys under :data:`INTERNAL_PREFIX` are the bookkeeping of an adapter (e.g. the Google ADK
session service): stored with the session's own keys by the ``Store``'s writes, atomically
with them, but never part of any state a read returns (``get_state``, listings, exports: each
takes them out with :func:`split_internal`), and refused by every public write
(``validate_delta``).

>>> scope_of("user:name"), scope_of("temp:draft"), scope_of("topic")
('user', 'temp', 'session')
>>> scope_of(INTERNAL_PREFIX + "adk")
'internal'

>>> split_delta({"temp:x": 1, "topic": "tea"})
({'topic': 'tea'}, {'temp:x': 1})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from threadline._validate import check_id, json_problem
from threadline.errors import InvalidArgumentError, ThreadlineError

StateScope = Literal["app", "user", "temp", "session", "internal"]

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"
#: Reserved prefix of internal (adapter) keys: the one definition of what state reads hide.
INTERNAL_PREFIX = "__threadline__:"


def scope_of(key: str) -> StateScope:
    """Return the scope a state key belongs to, from its prefix.

    >>> scope_of("app:theme")
    'app'
    """
    if key.startswith(APP_PREFIX):
        return "app"
    if key.startswith(USER_PREFIX):
        return "user"
    if key.startswith(TEMP_PREFIX):
        return "temp"
    if key.startswith(INTERNAL_PREFIX):
        return "internal"
    return "session"


#: What a stored JSON object text holds when it has an internal key (a cheap test before
#: decoding it).
INTERNAL_JSON = '"' + INTERNAL_PREFIX


def partition_internal(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``state`` split into two new dicts: its other keys, and its internal keys.

    New dicts rather than deleting from ``state``: CPython's cyclic garbage collector keeps
    tracking a dict that once held a container (as an internal key's list), while a dict of
    plain values built afresh is not tracked at all; listings keep one state per session.

    >>> state = {"topic": "tea", INTERNAL_PREFIX + "adk": [None, 1.5]}
    >>> partition_internal(state)
    ({'topic': 'tea'}, {'__threadline__:adk': [None, 1.5]})
    """
    # Plain loops, no comprehensions: listings call this once per session (10,000 at once).
    kept: dict[str, Any] = {}
    hidden: dict[str, Any] = {}
    for key, value in state.items():
        if key.startswith(INTERNAL_PREFIX):
            hidden[key] = value
        else:
            kept[key] = value
    return kept, hidden


def split_internal(state: dict[str, Any]) -> dict[str, Any]:
    """Take the internal keys out of ``state`` (in place) and return them: the one place
    where reads hide them (:func:`partition_internal` is the same split into new dicts).

    >>> state = {"topic": "tea", INTERNAL_PREFIX + "adk": [None, 1.5]}
    >>> split_internal(state), state
    ({'__threadline__:adk': [None, 1.5]}, {'topic': 'tea'})
    """
    kept, hidden = partition_internal(state)
    if hidden:
        state.clear()
        state.update(kept)
    return hidden


def validate_delta(delta: object) -> dict[str, Any]:
    """Check a state delta: a mapping of non-empty string keys to JSON values (or ``None``).

    Returns a plain-dict copy. Raises ``InvalidArgumentError`` naming the bad key; keys
    under :data:`INTERNAL_PREFIX` are reserved (no public write reaches them).

    >>> validate_delta({"a": 1})
    {'a': 1}
    >>> validate_delta({"__threadline__:x": 1})
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: state key '__threadline__:x' is reserved
    """
    if not isinstance(delta, Mapping):
        raise InvalidArgumentError(f"a state delta must be a mapping, got {type(delta).__name__}")
    out: dict[str, Any] = {}
    for key, value in delta.items():
        check_id("state keys", key)
        scope = scope_of(key)
        if scope == "internal":
            raise InvalidArgumentError(f"state key {key!r} is reserved")
        if scope != "temp":
            problem = json_problem(value)
            if problem is not None:
                raise InvalidArgumentError(f"state value of {key!r} is not storable: {problem}")
        out[key] = value
    return out


def split_delta(delta: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a delta into (stored part, ``temp:`` part).

    >>> split_delta({"temp:a": 1, "app:b": 2})
    ({'app:b': 2}, {'temp:a': 1})
    """
    stored = {k: v for k, v in delta.items() if scope_of(k) != "temp"}
    temp = {k: v for k, v in delta.items() if scope_of(k) == "temp"}
    return stored, temp


def check_user_keys(delta: Mapping[str, Any], user_id: str | None) -> None:
    """``user:`` keys need a user: without ``user_id`` raise ``InvalidArgumentError`` naming one.

    >>> check_user_keys({"user:name": "Ada"}, "u1")
    """
    if user_id is None:
        for key in delta:
            if scope_of(key) == "user":
                raise InvalidArgumentError(f"state key {key!r} needs a user_id")


def apply_delta(state: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """Apply a delta in place: ``None`` deletes, anything else sets.

    >>> s = {"a": 1}; apply_delta(s, {"a": None, "b": 2}); s
    {'b': 2}
    """
    for key, value in delta.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value


def merge_state(stored: Mapping[str, Any], temp: Mapping[str, Any]) -> dict[str, Any]:
    """Merged view shown to users: stored keys plus live ``temp:`` keys, prefixes kept.

    >>> merge_state({"a": 1}, {"temp:b": 2})
    {'a': 1, 'temp:b': 2}
    """
    merged = dict(stored)
    merged.update(temp)
    return merged


_MISSING = object()


class StateView:
    """A session's state with a pending delta (ADK-TS ``State``): reads see the current values
    merged with what was set since; nothing is written until :meth:`commit`.

    Returned by ``Session.state_view()``. Keys follow the ``update_state`` scopes (``app:``,
    ``user:``, ``temp:``, unprefixed); ``set(key, None)`` deletes the key on commit. Values are
    checked when set, so a commit does not fail on them.

    >>> import threadline
    >>> session = threadline.Session.create(":memory:").for_user("ana")
    >>> session.update_state({"existing": "value"})
    >>> state = session.state_view()
    >>> state.set("new", "data")
    >>> state.has_delta(), state.delta, state.to_dict()
    (True, {'new': 'data'}, {'existing': 'value', 'new': 'data'})
    >>> state.commit()
    >>> state.has_delta(), session.get_state("new")
    (False, 'data')
    """

    def __init__(
        self,
        current: Mapping[str, Any],
        commit: Callable[[dict[str, Any]], object],
        *,
        user_id: str | None = None,
        stored: bool = True,
    ) -> None:
        self._current = dict(current)
        self._delta: dict[str, Any] = {}
        self._commit = commit
        self._user_id = user_id
        self._stored = stored

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``: pending first, then current; ``default`` when unset (or
        deleted by a pending ``None``).

        >>> state = StateView({"user:name": "Ana"}, print)
        >>> state.get("user:name", "Guest"), state.get("temp:counter", 0)
        ('Ana', 0)
        """
        if key in self._delta:
            value = self._delta[key]
            return default if value is None else value
        return self._current.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Record ``key = value`` in the pending delta (``None`` deletes on commit).

        Raises ``InvalidArgumentError`` for a bad key, a value that cannot be stored or a
        ``user:`` key without a user, as ``update_state`` would.

        >>> state = StateView({}, print)
        >>> state.set("temp:counter", 1)
        >>> state.get("temp:counter")
        1
        """
        checked = validate_delta({key: value})
        check_user_keys(checked, self._user_id)
        if not self._stored and scope_of(key) != "temp":
            raise ThreadlineError("state needs a threadline Store, not a custom provider")
        self._delta[key] = value

    def has(self, key: str) -> bool:
        """Whether ``key`` has a value (pending or current, not deleted).

        >>> state = StateView({"user:preferences": {"theme": "dark"}}, print)
        >>> state.has("user:preferences"), state.has("user:missing")
        (True, False)
        """
        return self.get(key, _MISSING) is not _MISSING

    def has_delta(self) -> bool:
        """Whether anything was set since the view was made (or last committed).

        >>> state = StateView({}, print)
        >>> state.has_delta()
        False
        """
        return bool(self._delta)

    @property
    def delta(self) -> dict[str, Any]:
        """The pending changes (a copy): only the keys set since the last commit.

        >>> state = StateView({"existing": "value"}, print)
        >>> state.set("new", "data")
        >>> state.delta
        {'new': 'data'}
        """
        return dict(self._delta)

    def to_dict(self) -> dict[str, Any]:
        """Current values merged with the pending delta (deleted keys left out).

        >>> state = StateView({"existing": "value", "old": 1}, print)
        >>> state.set("old", None)
        >>> state.to_dict()
        {'existing': 'value'}
        """
        merged = dict(self._current)
        apply_delta(merged, self._delta)
        return merged

    def commit(self) -> None:
        """Write the pending delta in one ``update_state`` (atomic) and clear it; nothing is
        written when there is no delta.

        >>> written = []
        >>> state = StateView({}, written.append)
        >>> state.set("topic", "tea"); state.commit(); state.commit()
        >>> written, state.to_dict()
        ([{'topic': 'tea'}], {'topic': 'tea'})
        """
        if not self._delta:
            return
        self._commit(dict(self._delta))
        self._current = self.to_dict()
        self._delta = {}

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.has(key)

    def __repr__(self) -> str:
        return f"StateView({self.to_dict()!r}, delta={self._delta!r})"


__all__ = [
    "APP_PREFIX",
    "INTERNAL_JSON",
    "INTERNAL_PREFIX",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "StateScope",
    "StateView",
    "apply_delta",
    "check_user_keys",
    "merge_state",
    "partition_internal",
    "scope_of",
    "split_delta",
    "split_internal",
    "validate_delta",
]
