"""Read-your-writes across workers (api.md clarification 30): an ASGI middleware.

A write served by a store with read replicas answers with the position of its commit in
``X-Threadline-Read-After``; a request carrying that header reads nothing older, whatever
worker serves it: the store sends its reads to a replica only once the replica has replayed
that position, else to the primary (docs/postgres.md, "Read replicas"). Without replicas no
position is noted and the header is neither sent nor needed.

The request's position and the list its writes note theirs in are context variables of the
store (``threadline.internal.READ_AFTER`` / ``WRITTEN``), set here for the request and seen by
the worker threads its routes run in (their context is a copy of this one).
"""

from __future__ import annotations

from typing import Any

from threadline.errors import InvalidArgumentError
from threadline.internal import READ_AFTER, WRITTEN, format_position, parse_position
from threadline.server._auth import _answer, _has_body, _header
from threadline.server._limits import ASGIApp, Receive, Scope, Send

HEADER = "X-Threadline-Read-After"
_NAME = HEADER.lower().encode()


class ReadAfter:
    """Reads after the request's ``X-Threadline-Read-After``; writes answer with theirs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = _header(scope, _NAME)
        position = None
        if given is not None and given.strip():
            try:
                position = parse_position(given)
            except InvalidArgumentError as exc:
                kind = type(exc).__name__
                await _answer(send, 400, kind, f"{HEADER}: {exc}", has_body=_has_body(scope))
                return
        if scope.get("method") in ("GET", "HEAD"):  # reads (and event streams) write nothing
            token = READ_AFTER.set(position)
            try:
                await self.app(scope, receive, send)
            finally:
                READ_AFTER.reset(token)
            return
        written: list[int] = []
        tokens = (READ_AFTER.set(position), WRITTEN.set(written))

        async def send_position(message: Any) -> None:
            if message["type"] == "http.response.start" and written:
                headers = [
                    *message.get("headers", []),
                    (_NAME, format_position(max(written)).encode()),
                ]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_position)
        finally:
            WRITTEN.reset(tokens[1])
            READ_AFTER.reset(tokens[0])
