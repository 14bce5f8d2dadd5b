"""Argument checks of every public method, by parameter name.

Applied once to the store (:class:`~threadline.store._sql.SQLStore`, both backends),
``Session`` and ``SessionManager``, so a bad argument raises the same typed error everywhere,
before anything runs. A parameter whose default is ``None`` accepts ``None``; ``UNSET`` and
``AUTO`` pass through.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from threadline._validate import (
    check_attachment_mode,
    check_id,
    check_ids,
    check_int,
    check_json,
    check_max_message_bytes,
    check_number,
    check_optional_id,
    check_size_policy,
    check_text,
)
from threadline.errors import InvalidArgumentError, InvalidMessageError
from threadline.store._contract.values import UNSET
from threadline.types import AUTO

F = TypeVar("F", bound=Callable[..., Any])


def _text(what: str, value: Any) -> None:
    check_text(what, value)


def _query(what: str, value: Any) -> None:
    if not isinstance(value, str):  # any text is a valid query, even with lone surrogates
        raise InvalidArgumentError(f"{what} must be a string, got {type(value).__name__}")


def _mapping(what: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{what} must be a mapping, got {type(value).__name__}")
    check_json(what, value)


def _messages(what: str, value: Any) -> None:
    # Exact list and dict types first: the ABC checks cost more than the rest of a check.
    if type(value) is not list and (
        isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence)
    ):
        raise InvalidMessageError(f"{what} must be a list of messages")
    for message in value:
        if type(message) is not dict:
            _message("message", message)


def _message(what: str, value: Any) -> None:
    # Its content is checked by encoding it (the store encodes every message anyway).
    if type(value) is not dict and not isinstance(value, Mapping):
        raise InvalidMessageError(f"{what} must be a mapping, got {type(value).__name__}")


def _datetime(what: str, value: Any) -> None:
    if not isinstance(value, datetime):
        raise InvalidArgumentError(f"{what} must be a datetime, got {type(value).__name__}")


def _after(what: str, value: Any) -> None:
    # The value itself (range, ISO syntax) is checked where it is converted (_windows.cutoff_of).
    if isinstance(value, bool) or not isinstance(value, (datetime, str, int, float)):
        raise InvalidArgumentError(
            f"{what} must be a datetime, an ISO 8601 string or epoch seconds, "
            f"got {type(value).__name__}"
        )


def _flag(what: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be True or False, got {type(value).__name__}")


def _scope(what: str, value: Any) -> None:
    if value not in ("session", "user", "app"):
        raise InvalidArgumentError(f'{what} must be "session", "user" or "app"')


RULES: dict[str, Callable[[str, Any], Any]] = {
    **dict.fromkeys(
        (
            "app", "session_id", "message_id", "leaf_id",
            "from_message_id", "to_message_id", "before_message_id", "parent_session_id",
            "before_invocation_id",
            "label", "key", "key_id",
        ),
        check_id,
    ),
    **dict.fromkeys(
        ("name", "model", "source", "end_reason", "summary", "content", "description",
         "cursor", "key_hash"),
        _text,
    ),
    "prompt": lambda what, value: value is None or check_text(what, value),  # None: forget it
    "user_id": check_optional_id,  # None: no user, also where it is positional
    "parent_id": check_optional_id,  # None: a root message
    "owner_id": lambda what, value: value == "" or check_id(what, value),  # app blocks: ""
    "query": _query,
    "metadata": _mapping,
    "delta": _mapping,
    "state_delta": _mapping,
    "messages": _messages,
    "message": _message,
    "message_ids": check_ids,
    "ids": check_ids,
    "before": _datetime,
    "without_user": _flag,
    "replace": _flag,
    "limit": functools.partial(check_int, minimum=1),
    "max_bytes": functools.partial(check_int, minimum=0),
    "after_seq": functools.partial(check_int, minimum=0),
    "after_stamp": functools.partial(check_int, minimum=0),
    "count": functools.partial(check_int, minimum=1),
    "generation": functools.partial(check_int, minimum=1),
    "min_messages": functools.partial(check_int, minimum=0),
    "input_tokens": functools.partial(check_int, minimum=0),
    "output_tokens": functools.partial(check_int, minimum=0),
    "cost": functools.partial(check_number, minimum=0),
    "size_policy": lambda what, value: value is None or check_size_policy(what, value),
    "max_message_bytes": lambda what, value: value is None or check_max_message_bytes(what, value),
    "attachments": check_attachment_mode,
}  # fmt: skip


# Session and SessionManager: state deltas are checked by threadline._state (``temp:`` values
# need not be JSON), thresholds by compact_after; the rest as for the store, plus their own
# parameters.
API_RULES: dict[str, Callable[[str, Any], Any]] = {
    # Messages are normalised (and checked) by threadline.messages: they may hold datetimes.
    **{
        k: v
        for k, v in RULES.items()
        if k not in ("delta", "state_delta", "state", "message", "messages")
    },
    "app_name": check_id,
    "at_message_id": check_id,
    "title": _text,
    "scope": _scope,
    "max_tokens": functools.partial(check_int, minimum=0),
    "min_recent_messages": functools.partial(check_int, minimum=0),
    "after": _after,
    "runs": functools.partial(check_int, minimum=0),
    "keep": functools.partial(check_int, minimum=0),
    "branch": check_id,
}


def checked(method: F, rules: Mapping[str, Callable[[str, Any], Any]] = RULES) -> F:
    """Wrap a method so that its arguments are checked by ``rules`` first."""
    params = list(inspect.signature(method).parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    checks = [
        (i, p.name, rules[p.name], p.default) for i, p in enumerate(params) if p.name in rules
    ]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        for index, name, rule, default in checks:
            if index < len(args):
                value = args[index]
            elif name in kwargs:
                value = kwargs[name]
            else:
                continue
            if value is UNSET or value is AUTO or (value is None and default is None):
                continue
            rule(name, value)
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def public_methods(cls: type) -> list[tuple[str, Callable[..., Any]]]:
    """``(name, function)`` of every public method of ``cls``, its own or inherited (the SQL
    store is composed of mixins), each once: the one its attribute lookup finds.

    >>> class A:
    ...     def f(self): ...
    ...     def _g(self): ...
    >>> class B(A):
    ...     def f(self): ...
    >>> [(name, fn.__qualname__) for name, fn in public_methods(B)]
    [('f', 'B.f')]
    """
    seen: dict[str, Callable[..., Any]] = {}
    for klass in cls.__mro__[:-1]:
        for name, member in vars(klass).items():
            if name not in seen and not name.startswith("_") and inspect.isfunction(member):
                seen[name] = member
    return list(seen.items())


def check_every_public_method(
    cls: type, rules: Mapping[str, Callable[[str, Any], Any]] = RULES
) -> None:
    """Apply :func:`checked` to every public method of ``cls``, its own or inherited, each
    once.

    >>> class Notes:
    ...     def get(self, session_id: str) -> str:
    ...         return session_id
    >>> check_every_public_method(Notes)
    >>> Notes().get("")
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: session_id must be a non-empty string, got ''
    """
    for name, member in public_methods(cls):
        setattr(cls, name, checked(member, rules))
