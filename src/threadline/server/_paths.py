"""Ids in paths are URL-encoded, and may hold ``/``: route on the raw path.

ASGI servers decode ``%2F`` to ``/`` before routing, which would split an id in two. The
middleware decodes every escape but ``%2F`` and ``%25`` for routing; the route class then
decodes those two in the path parameters.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any
from urllib.parse import unquote

from fastapi.routing import APIRoute
from starlette.routing import Match

from threadline.server._limits import ASGIApp, Receive, Scope, Send

_KEEP = re.compile(r"(%2[fF]|%25)")
_KEPT = re.compile(r"%(2F|25)")


def routing_path(raw: str) -> str:
    """The path to route on: decoded, except ``%2F`` and ``%25`` (upper-cased).

    >>> routing_path("/v1/sessions/a%2Fb%20c%25d/messages")
    '/v1/sessions/a%2Fb c%25d/messages'
    """
    pieces = _KEEP.split(raw)
    return "".join(p.upper() if _KEEP.fullmatch(p) else unquote(p) for p in pieces)


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
                with contextlib.suppress(UnicodeDecodeError):  # else: the server's decoding
                    scope["path"] = routing_path(text.encode("latin-1").decode("utf-8"))
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
