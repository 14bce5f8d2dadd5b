"""Argument checks shared by every public entry point: bad input raises a typed error, the
same on every backend, before anything is stored.

The rules (README: "Errors"):

* ids (app, session, user, message, label, key...) are non-empty strings of at most
  :data:`MAX_ID_BYTES` UTF-8 bytes, without lone surrogates;
* other strings (names, block content, summaries...) hold no lone surrogates;
* JSON values (metadata, state) are ``None``, booleans, integers within signed 64 bits,
  finite floats, strings, lists and string-keyed mappings, nested at most
  :data:`MAX_DEPTH` deep;
* limits and counts are integers (``bool`` is not one) within signed 64 bits.

Pure functions, no I/O.

>>> check_id("session_id", "s1")
's1'
>>> check_id("session_id", "")
Traceback (most recent call last):
...
threadline.errors.InvalidArgumentError: session_id must be a non-empty string, got ''
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from threadline.errors import InvalidArgumentError

MAX_ID_BYTES = 512
"""Longest id, in UTF-8 bytes."""

MAX_DEPTH = 100
"""Deepest nesting of lists and mappings in a JSON value (metadata, state, messages)."""

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _short(value: object) -> str:
    """A bounded repr (a deeply nested value has no plain repr: it would recurse)."""
    return reprlib.repr(value)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_id(what: str, value: object) -> str:
    """``value`` if it is a valid id, else ``InvalidArgumentError`` naming ``what``.

    >>> check_id("session_id", "chat-1")
    'chat-1'
    """
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{what} must be a non-empty string, got {_short(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{what} holds a lone surrogate") from None
    if size > MAX_ID_BYTES:
        raise InvalidArgumentError(f"{what} is {size} bytes long; ids hold at most {MAX_ID_BYTES}")
    return value


def check_optional_id(what: str, value: object) -> str | None:
    """Like :func:`check_id`, ``None`` allowed.

    >>> check_optional_id("user_id", None) is None
    True
    """
    return None if value is None else check_id(what, value)


def check_text(what: str, value: object, *, optional: bool = False) -> str | None:
    """A string without lone surrogates (``None`` too when ``optional``).

    >>> check_text("name", "Trip")
    'Trip'
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string, got {type(value).__name__}")
    if _has_surrogate(value):
        raise InvalidArgumentError(f"{what} holds a lone surrogate")
    return value


def check_int(what: str, value: object, *, minimum: int = INT64_MIN) -> int:
    """An ``int`` (not ``bool``) between ``minimum`` and the largest signed 64-bit integer.

    >>> check_int("limit", 5, minimum=1)
    5
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{what} must be an integer, got {type(value).__name__}")
    if not minimum <= value <= INT64_MAX:
        raise InvalidArgumentError(f"{what} must be between {minimum} and {INT64_MAX}")
    return value


def check_number(what: str, value: object, *, minimum: float = -math.inf) -> float:
    """A finite ``int`` or ``float`` (not ``bool``) of at least ``minimum``, as a float.

    >>> check_number("cost", 0.5, minimum=0)
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{what} must be a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < minimum:
        raise InvalidArgumentError(f"{what} must be a finite number of at least {minimum}")
    return number


def check_json(what: str, value: object, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``InvalidArgumentError`` unless ``value`` is a storable JSON value.

    Iterative, so any nesting depth is reported, never a ``RecursionError``.

    >>> check_json("metadata", {"a": [1, 2.5, None, "x"]})
    >>> check_json("metadata", {"a": float("nan")})
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: metadata: NaN and infinite numbers are not JSON
    """
    problem = json_problem(value, max_depth=max_depth)
    if problem is not None:
        raise InvalidArgumentError(f"{what}: {problem}")


def json_problem(value: object, *, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes ``value`` unstorable as JSON, or ``None`` when it is fine.

    >>> json_problem([[[]]], max_depth=2)
    'nested deeper than 2 levels'
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                return "integers must fit in 64 bits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "NaN and infinite numbers are not JSON"
        elif isinstance(item, str):
            if _has_surrogate(item):
                return "a string holds a lone surrogate"
        elif isinstance(item, Mapping) or (
            isinstance(item, Sequence) and not isinstance(item, (bytes, bytearray))
        ):
            if depth >= max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if not isinstance(key, str):
                        return f"mapping keys must be strings, got {type(key).__name__}"
                    if _has_surrogate(key):
                        return "a key holds a lone surrogate"
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
        else:
            return f"{type(item).__name__} is not a JSON value"
    return None


def check_ids(what: str, value: object) -> list[str]:
    """A sequence (not a string) of ids, as a list.

    >>> check_ids("message_ids", ("a", "b"))
    ['a', 'b']
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidArgumentError(f"{what} must be a list of ids, got {type(value).__name__}")
    return [check_id(what, item) for item in value]


Checker = Callable[[str, Any], object]


SIZE_POLICIES = ("attach", "truncate", "error")
ATTACHMENT_MODES = ("inline", "ref")


def check_size_policy(what: str, value: object) -> str:
    """``value`` if it is a size policy (docs/attachments.md), else ``InvalidArgumentError``.

    >>> check_size_policy("size_policy", "attach")
    'attach'
    """
    if value not in SIZE_POLICIES:
        raise InvalidArgumentError(f"{what} must be one of {SIZE_POLICIES}, got {_short(value)}")
    return str(value)


def check_max_message_bytes(what: str, value: object) -> int:
    """``value`` if it is a positive int, else ``InvalidArgumentError``.

    >>> check_max_message_bytes("max_message_bytes", 1000)
    1000
    """
    return check_int(what, value, minimum=1)


def check_attachment_mode(what: str, value: object) -> str:
    """``"inline"`` or ``"ref"``, else ``InvalidArgumentError``.

    >>> check_attachment_mode("attachments", "ref")
    'ref'
    """
    if value not in ATTACHMENT_MODES:
        raise InvalidArgumentError(f"{what} must be 'inline' or 'ref', got {_short(value)}")
    return str(value)
