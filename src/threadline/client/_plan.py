"""The plan model of the client (sans I/O), and the plans both kinds of calls share.

A client method is written once as a generator, its *plan*: it yields
:class:`~threadline.client._wire.Call` objects and receives their decoded answers (or has the
mapped threadline error thrown into it), then returns the method's result. ``Client`` drives
the plans with a blocking httpx client, ``AsyncClient`` with an async one (``_drive``) — one
model, two transports. The session's plans are in ``_session_calls``, the manager's in
``_manager_calls``; the registry reads and writes both need are here.

>>> plan = read_info("trip")
>>> call = next(plan)
>>> call.method, call.path
('GET', '/v1/sessions/trip')
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

from threadline.client import _wire as w
from threadline.types import SessionInfo

R = TypeVar("R")
Plan = Generator[w.Call[Any], Any, R]
"""A method's plan: yields calls, receives their results, returns the method's result."""


def ask(call: w.Call[R]) -> Plan[R]:
    """One call of a plan, typed: ``result = yield from ask(call)``.

    >>> next(ask(w.Call("GET", "/v1/sessions", w.session_page))).path
    '/v1/sessions'
    """
    result: R = yield call
    return result


def session_path(session_id: str, *parts: str) -> str:
    """The URL path of a session (or of something under it), each segment encoded.

    >>> session_path("a/b", "messages")
    '/v1/sessions/a%2Fb/messages'
    """
    return "/".join(["/v1/sessions", w.segment(session_id), *map(w.segment, parts)])


def read_info(session_id: str) -> Plan[SessionInfo | None]:
    """The registry row of a session, or ``None`` (404).

    >>> next(read_info("s1")).none_if_missing
    True
    """
    call = w.Call("GET", session_path(session_id), w.decoder(SessionInfo), none_if_missing=True)
    return (yield from ask(call))


def create_info(**fields: Any) -> Plan[SessionInfo]:
    """Create a session from the fields of ``SessionManager.create`` (``None``: the server's
    default).

    >>> next(create_info(session_id="s1", name=None)).body
    {'session_id': 's1'}
    """
    body = w.body_without(fields)
    return (yield from ask(w.Call("POST", "/v1/sessions", w.decoder(SessionInfo), None, body)))
