"""``GET .../events``: the session's server-sent events (also ``?access_token=`` for
browsers, whose ``EventSource`` cannot send headers)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import Depends, Header, Query, Request, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials

from threadline.server._auth import bearer_key
from threadline.server._deps import bearer, hub, request_tenant, router
from threadline.server._sse import EventStreamResponse, Subscriber, generation_of
from threadline.server._tenancy import Tenant, Tenants

routes = router()

# How often an open stream checks that its key was not revoked meanwhile (through the key
# cache: a revoked key closes the stream within this plus ``key_cache_ttl`` seconds).
KEY_RECHECK_SECONDS = 5.0


def _gone(request: Request) -> Callable[[], Awaitable[bool]]:
    """Whether the stream should end: the client left, or (every ``KEY_RECHECK_SECONDS``)
    its key is no longer live."""
    tenants: Tenants = request.app.state.tenants
    key = bearer_key(request.scope) if tenants.auth else None
    due = time.monotonic() + KEY_RECHECK_SECONDS

    async def gone() -> bool:
        nonlocal due
        if await request.is_disconnected():
            return True
        if key is None or time.monotonic() < due:
            return False
        due = time.monotonic() + KEY_RECHECK_SECONDS
        return not await asyncio.to_thread(tenants.live, key)

    return gone


def _stream_tenant(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Security(bearer),
    access_token: str | None = Query(default=None, description="The API key, for EventSource"),
    x_threadline_app: str | None = Header(default=None),
) -> Tenant:
    return request_tenant(request)  # settled by the Authenticate middleware


def _resume_after(
    last_event_id: str | None = Header(default=None, description="Resume after this event"),
    resume: str | None = Query(
        default=None, alias="last_event_id", description="Last-Event-ID, as a query parameter"
    ),
) -> str | None:
    """Where a stream resumes: the ``Last-Event-ID`` header, or the query parameter an
    ``EventSource`` (which cannot set headers) sends instead."""
    return last_event_id or resume


def _stream(stream: AsyncIterator[bytes], sub: Subscriber) -> StreamingResponse:
    """The response that sends ``stream`` (``sub``'s events), unbuffered by proxies."""
    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Threadline-Worker": str(os.getpid()),  # which process serves the stream
    }
    return EventStreamResponse(stream, sub, headers=headers)


@routes.get(
    "/sessions/{session_id}/events",
    tags=["events"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def events(
    session_id: str,
    request: Request,
    tenant: Tenant = Depends(_stream_tenant),
    resume_after: str | None = Depends(_resume_after),
) -> StreamingResponse:
    """Server-sent events of this session (the generation that exists now), from now on or
    after ``Last-Event-ID``: ``message`` (appended, with ``seq`` and ``parent_id``),
    ``message_updated``, ``messages_deleted``, ``head`` (moved), ``compaction`` (an overlay
    stored), ``block`` (a session block written), ``renamed``, ``state``; ``gone`` (deleted),
    ``lagged`` (fell behind) and ``reset`` (cannot resume: reload) . Ids are
    ``<generation>:<stamp>``; comments keep the connection alive. The stream ends after
    ``gone`` or ``lagged``, when the client leaves or its key is revoked (checked every few
    seconds)."""
    info = await asyncio.to_thread(tenant.require, session_id)
    sub = Subscriber()
    stream = hub(request).subscribe(
        tenant.app,
        session_id,
        generation_of(info),
        sub,
        _gone(request),
        last_event_id=resume_after,
    )
    return _stream(stream, sub)


@routes.get(
    "/events",
    tags=["events"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def list_events(
    request: Request,
    tenant: Tenant = Depends(_stream_tenant),
    resume_after: str | None = Depends(_resume_after),
) -> StreamingResponse:
    """Server-sent events of the session list this key sees (an app key: the app's sessions;
    a user-bound key: that user's only), from now on or after ``Last-Event-ID``: ``created``,
    ``updated`` (its registry row: name, message count, times) and ``gone`` (deleted), with
    ``lagged`` and ``reset`` as for a session's stream. Ids are ``<watch>:<n>``, per worker."""
    sub = Subscriber()
    stream = hub(request).lists.subscribe(
        tenant.app, tenant.user, sub, _gone(request), last_event_id=resume_after
    )
    return _stream(stream, sub)
