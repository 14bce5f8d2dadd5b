"""Scoped state rules (pure): which keys live where, and how deltas split.

Keys are scoped by prefix: ``app:`` (every session of the app), ``user:`` (every session of
one user), ``temp:`` (only the live session object, never stored), anything else (this
session). A ``None`` value in a delta deletes the key.

>>> scope_of("user:name"), scope_of("temp:draft"), scope_of("topic")
('user', 'temp', 'session')
>>> split_delta({"temp:x": 1, "topic": "tea"})
({'topic': 'tea'}, {'temp:x': 1})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from threadline._validate import check_id, json_problem
from threadline.errors import InvalidArgumentError

StateScope = Literal["app", "user", "temp", "session"]

APP_PREFIX = "app:"
USER_PREFIX = "user:"
TEMP_PREFIX = "temp:"


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
    return "session"


def validate_delta(delta: object) -> dict[str, Any]:
    """Check a state delta: a mapping of non-empty string keys to JSON values (or ``None``).

    Returns a plain-dict copy. Raises ``InvalidArgumentError`` naming the bad key.

    >>> validate_delta({"a": 1})
    {'a': 1}
    """
    if not isinstance(delta, Mapping):
        raise InvalidArgumentError(f"a state delta must be a mapping, got {type(delta).__name__}")
    out: dict[str, Any] = {}
    for key, value in delta.items():
        check_id("state keys", key)
        if scope_of(key) != "temp":
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


__all__ = [
    "APP_PREFIX",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "StateScope",
    "apply_delta",
    "check_user_keys",
    "merge_state",
    "scope_of",
    "split_delta",
    "validate_delta",
]
