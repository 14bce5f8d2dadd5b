"""Who a ``/v1`` request is, settled before routing: an ASGI middleware.

Running ahead of FastAPI's request parsing, it answers a missing, unknown or revoked key with
401 before any body or parameter is read or validated — a malformed request without a key is
a 401, not a 422, and nobody without a key can make a worker buffer a large body. The tenant it
finds is handed to the routes in the request's state (``request.state.tenant``).

A key found in the store is remembered by the worker for ``Tenants.key_cache_ttl`` seconds
(see :class:`~threadline.server._tenancy.Tenants`), so most requests skip the store lookup and
the thread hop it needs; a revoked key is refused within that time.
"""

from __future__ import annotations

import json
import logging
from urllib.parse import parse_qsl

import anyio.to_thread

from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.server import _errors
from threadline.server._limits import ASGIApp, Receive, Scope, Send
from threadline.server._tenancy import Tenant, Tenants, Unauthorized

_log = logging.getLogger("threadline.server")

PREFIX = "/v1"


def guarded(path: str) -> bool:
    """Whether a (routing) path needs a key: everything under ``/v1``.

    >>> guarded("/v1/sessions"), guarded("/v1"), guarded("/v10"), guarded("/healthz")
    (True, True, False, False)
    """
    return path == PREFIX or path.startswith(PREFIX + "/")


def is_event_stream(method: str, path: str) -> bool:
    """Whether the request is ``GET /v1/sessions/{id}/events`` or ``GET /v1/events`` (which
    also take the key as ``?access_token=``: browsers' ``EventSource`` cannot send headers).
    Ids in routing paths keep ``/`` escaped, so the segments are the route's.

    >>> is_event_stream("GET", "/v1/sessions/a%2Fb/events"), is_event_stream("GET", "/v1/x")
    (True, False)
    >>> is_event_stream("GET", "/v1/events")
    True
    """
    parts = path.split("/")
    return method == "GET" and (
        parts == ["", "v1", "events"]
        or (len(parts) == 5 and parts[:3] == ["", "v1", "sessions"] and parts[4] == "events")
    )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def bearer_key(scope: Scope) -> str | None:
    """The key of ``Authorization: Bearer <key>`` (the scheme in any case), or, on the event
    stream only, of ``?access_token=<key>``.

    >>> scope = {"method": "GET", "path": "/v1/sessions", "headers": [
    ...     (b"authorization", b"bearer tl_abc")]}
    >>> bearer_key(scope), bearer_key({**scope, "headers": []})
    ('tl_abc', None)
    """
    header = _header(scope, b"authorization")
    if header is not None:
        scheme, _, credentials = header.strip().partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
    if is_event_stream(scope.get("method", ""), scope.get("path", "")):
        query = scope.get("query_string", b"").decode("latin-1")
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name == "access_token" and value:
                return str(value)
    return None


class Authenticate:
    """ASGI middleware: the tenant of every ``/v1`` request, or a JSON error (401 for keys,
    400 for a blank ``X-Threadline-App`` under ``--no-auth``, 503 when the store is down).

    >>> Authenticate(None, None).app is None
    True
    """

    def __init__(self, app: ASGIApp | None, tenants: Tenants | None) -> None:
        self.app = app
        self.tenants = tenants

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None and self.tenants is not None
        if scope["type"] != "http" or not guarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        try:
            tenant = await self._tenant(self.tenants, scope)
        except Unauthorized as exc:
            await _answer(send, 401, "Unauthorized", str(exc), has_body=_has_body(scope))
            return
        except ThreadlineError as exc:
            status = _errors.status_of(exc)
            if status >= 500:
                _log.warning("threadline: storage error checking a key: %s", exc)
            kind, message = type(exc).__name__, _errors.message_of(exc)
            await _answer(send, status, kind, message, has_body=_has_body(scope))
            return
        scope.setdefault("state", {})["tenant"] = tenant
        await self.app(scope, receive, send)

    @staticmethod
    async def _tenant(tenants: Tenants, scope: Scope) -> Tenant:
        if not tenants.auth:
            app = _header(scope, b"x-threadline-app")
            if app is not None:  # header bytes are read as Latin-1; the app name is UTF-8
                try:
                    app = app.encode("latin-1").decode("utf-8")
                except UnicodeDecodeError:
                    raise InvalidArgumentError("X-Threadline-App must be UTF-8 text") from None
            return await anyio.to_thread.run_sync(tenants.from_header, app)
        key = bearer_key(scope)
        if not key:
            raise Unauthorized("missing API key (Authorization: Bearer <key>)")
        cached = tenants.cached(key)
        if cached is not None:
            return cached
        return await anyio.to_thread.run_sync(tenants.from_key, key)


def _has_body(scope: Scope) -> bool:
    length = _header(scope, b"content-length")
    return _header(scope, b"transfer-encoding") is not None or length not in (None, "0")


async def _answer(send: Send, status: int, kind: str, message: str, *, has_body: bool) -> None:
    payload = json.dumps(_errors.body(kind, message)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if has_body:  # the body is left unread: do not reuse the connection
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
