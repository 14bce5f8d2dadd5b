"""Ids in paths are URL-encoded, and may hold ``/``: route on the raw path.

ASGI servers decode ``%2F`` to ``/`` before routing, which would split an id in two. The
middleware decodes every escape but ``%2F`` and ``%25`` for routing; the route class then
decodes those two in the path parameters.

Escapes must spell UTF-8: servers decode ``%FF`` or a Latin-1 ``%E9`` to U+FFFD, so different
ids would silently name the same session. Such a path is flagged, and its route answers 400
(after the key check, like every other bad input).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match

from threadline.errors import InvalidArgumentError
from threadline.server._limits import ASGIApp, Receive, Scope, Send

BAD_PATH = "threadline.bad_path"
"""Scope key set by :class:`RawPaths` when the path's escapes are not UTF-8."""

_KEEP = re.compile(r"(%2[fF]|%25)")
_KEPT = re.compile(r"%(2F|25)")


def routing_path(raw: str, errors: str = "strict") -> str:
    """The path to route on: decoded, except ``%2F`` and ``%25`` (upper-cased). Escapes
    that are not UTF-8 raise ``UnicodeDecodeError`` (with ``errors="strict"``; a UTF-8
    sequence never holds the bytes of ``/`` or ``%``, so decoding piece by piece splits none).

    >>> routing_path("/v1/sessions/a%2Fb%20c%25d%C3%A9/messages")
    '/v1/sessions/a%2Fb c%25dé/messages'
    >>> routing_path("/v1/sessions/%E9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 ...
    >>> routing_path("/v1/sessions/a%2Fb/messages/%E9", errors="replace")
    '/v1/sessions/a%2Fb/messages/\ufffd'
    """
    pieces = _KEEP.split(raw)
    return "".join(p.upper() if _KEEP.fullmatch(p) else unquote(p, errors=errors) for p in pieces)


def path_value(value: str) -> str:
    """A path parameter as the caller meant it.

    >>> path_value("a%2Fb c%25d")
    'a/b c%d'
    """
    return _KEPT.sub(lambda m: "/" if m.group(1) == "2F" else "%", value)


class RawPaths:
    """ASGI middleware: route on :func:`routing_path` of the raw path.

    >>> RawPaths(None).app is None
    True
    """

    def __init__(self, app: ASGIApp | None) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None
        raw = scope.get("raw_path")
        if scope["type"] in ("http", "websocket") and raw:
            text = raw.decode("latin-1").split("?", 1)[0]
            if "%" in text:
                scope = dict(scope)
                raw_text = text.encode("latin-1").decode("utf-8", errors="replace")
                try:
                    scope["path"] = routing_path(raw_text)
                except UnicodeDecodeError:  # routed as best it can be; the route answers 400
                    scope["path"] = routing_path(raw_text, errors="replace")
                    scope[BAD_PATH] = True
        await self.app(scope, receive, send)


class IdRoute(APIRoute):
    """An ``APIRoute`` whose string path parameters get :func:`path_value`."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        params: dict[str, Any] | None = child.get("path_params")
        if params:
            child["path_params"] = {
                k: path_value(v) if isinstance(v, str) else v for k, v in params.items()
            }
        return match, child

    def get_route_handler(self) -> Any:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            if request.scope.get(BAD_PATH):
                raise InvalidArgumentError("the path's %-escapes must encode UTF-8 text")
            response: Response = await handler(request)
            return response

        return checked
