"""How ADK's keys, owners and state values map onto threadline's (pure: no storage).

ADK keys a session by ``(app, user, id)``, threadline by ``(app, id)``; ADK's ``None`` state
value is a value, threadline's deletes; the adapter keeps its own bookkeeping under keys no
delta may name. See :mod:`threadline.integrations.adk` for the whole mapping.

>>> owner_of(""), adk_user(owner_of(""))
('__threadline__:adk:empty-user', '')
>>> decode_state(encode_delta({"k": None, "temp:t": 1}))
{'k': None}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python

from threadline.errors import InvalidArgumentError
from threadline.integrations._adk_events import KEY
from threadline.internal import INTERNAL_PREFIX

__all__ = [
    "EMPTY_USER_OWNER",
    "LAST",
    "LEGACY_LAST",
    "NONE_VALUE",
    "adk_user",
    "check_delta",
    "decode_state",
    "encode_delta",
    "marker_of",
    "memory_session_id",
    "normal_id",
    "owner_of",
    "read_marker",
    "registry_entry",
    "threadline_session_id",
]

NONE_VALUE = {"__adk_none__": True}  # how a None state value is stored (threadline's deletes)
# Internal state key (threadline's reserved prefix: in no state any read returns, refused by
# every public write) holding [head message id, last_update_time] of an ADK session, written
# with each append's delta (same transaction): lets list_sessions read the exact float
# timestamp without reading each session's last event.
LAST = INTERNAL_PREFIX + "adk"
# Where earlier versions kept it, as a plain session key: never shown, deleted on next append.
LEGACY_LAST = "__adk_last_update__"
# The owner of ADK's user "" (threadline user ids are never empty). Every other ADK user id is
# its own owner, as versions before the empty one was allowed stored it, so their stores keep
# working; this one is in threadline's reserved namespace, which no ADK user is expected to
# have used, and an ADK user id equal to it is refused: the mapping stays one-to-one.
EMPTY_USER_OWNER = INTERNAL_PREFIX + "adk:empty-user"


def threadline_session_id(user_id: str, session_id: str) -> str:
    """The threadline session id of ADK's ``(user_id, session_id)``: ``"<user>/<id>"``, with
    ``%`` and ``/`` of the user id percent-encoded so that no two ADK sessions share one.

    >>> threadline_session_id("u1", "s1"), threadline_session_id("a/b", "c")
    ('u1/s1', 'a%2Fb/c')
    """
    return user_id.replace("%", "%25").replace("/", "%2F") + "/" + session_id


def owner_of(user_id: str) -> str:
    """The threadline owner of ADK's ``user_id``: the id itself, ``""`` excepted (owned by
    :data:`EMPTY_USER_OWNER`); that reserved name as an ADK user id is refused
    (``InvalidArgumentError``). :func:`adk_user` undoes it."""
    if user_id == EMPTY_USER_OWNER:
        raise InvalidArgumentError(
            f"user_id {user_id!r} is reserved (it owns the sessions of ADK's empty user id)"
        )
    return user_id or EMPTY_USER_OWNER


def adk_user(owner: str) -> str:
    """The ADK user id of a threadline owner (:func:`owner_of` undone)."""
    return "" if owner == EMPTY_USER_OWNER else owner


def check_delta(delta: Mapping[str, Any] | None) -> None:
    """Refuse state keys the adapter keeps for itself (threadline's internal prefix, and the
    key earlier versions kept their bookkeeping under), before anything is applied."""
    for key in delta or ():
        if isinstance(key, str) and (key.startswith(INTERNAL_PREFIX) or key == LEGACY_LAST):
            raise InvalidArgumentError(
                f"state key {key!r} is reserved (threadline keeps {INTERNAL_PREFIX!r} keys and "
                f"{LEGACY_LAST!r} for its own bookkeeping)"
            )


def memory_session_id(user_id: str) -> str:
    """The threadline session holding ``user_id``'s memories (no "/" in it: the user id is
    encoded, so it is never the id of an ADK session)."""
    return "adk-memory:" + user_id.replace("%", "%25").replace("/", "%2F")


def _json_safe(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception:  # as ADK's database service: a value JSON cannot hold is stored as text
        return str(value)


def encode_delta(delta: Mapping[str, Any]) -> dict[str, Any]:
    """Stored form of an ADK delta: no ``temp:`` keys, JSON values, ``None`` as a marker."""
    out: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(State.TEMP_PREFIX):
            continue
        out[key] = NONE_VALUE if value is None else _json_safe(value)
    return out


def decode_state(stored: Mapping[str, Any]) -> dict[str, Any]:
    """ADK's state of a stored one: ``None`` markers back to ``None``, bookkeeping left out."""
    return {
        key: None if value == NONE_VALUE else value
        for key, value in stored.items()
        if key != LEGACY_LAST
    }


def normal_id(session_id: str | None) -> str | None:
    """ADK's id normalisation (in-memory and SQLite services): surrounding whitespace goes."""
    stripped = session_id.strip() if session_id else None
    return stripped or None


def marker_of(generation: int, head_id: str | None) -> str:
    """What a Session this service hands out remembers of storage: the generation of the
    threadline session it was read from and the head it was read at ("" for none).

    >>> marker_of(7, "e1"), marker_of(7, None)
    ('7/e1', '7/')
    """
    return f"{generation}/{head_id or ''}"


def read_marker(marker: str) -> tuple[int | None, str | None]:
    """``(generation, head id)`` of a :func:`marker_of` (no generation: a store without them).

    >>> read_marker("7/e1/x"), read_marker("0/")
    ((7, 'e1/x'), (None, None))
    """
    generation, _, head_id = marker.partition("/")
    return (int(generation) or None, head_id or None)


def registry_entry(info: Any, user_id: str) -> dict[str, Any] | None:
    """The ``adk`` registry metadata of an ADK session of ``user_id``, else ``None``."""
    owner = owner_of(user_id)  # first: a reserved user id is refused even when nothing is there
    if info is None or info.user_id != owner:
        return None
    entry = info.metadata.get(KEY) if isinstance(info.metadata, Mapping) else None
    return dict(entry) if isinstance(entry, Mapping) and "id" in entry else None
