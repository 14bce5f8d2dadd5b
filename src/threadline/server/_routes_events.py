"""``GET .../events``: the session's server-sent events (also ``?access_token=`` for
browsers, whose ``EventSource`` cannot send headers)."""

from __future__ import annotations

import asyncio
import os

from fastapi import Depends, Header, Query, Request, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials

from threadline.server._deps import bearer, hub, router, tenants
from threadline.server._tenancy import Tenant

routes = router()


def _stream_tenant(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Security(bearer),
    access_token: str | None = Query(default=None, description="The API key, for EventSource"),
    x_threadline_app: str | None = Header(default=None),
) -> Tenant:
    registry = tenants(request)
    if not registry.auth:
        return registry.from_header(x_threadline_app)
    key = credentials.credentials if credentials else access_token
    return registry.from_key(key)


@routes.get(
    "/sessions/{session_id}/events",
    tags=["events"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def events(
    session_id: str, request: Request, tenant: Tenant = Depends(_stream_tenant)
) -> StreamingResponse:
    """Server-sent events from now on: ``message`` (appended, with ``seq`` and
    ``parent_id``), ``head`` (moved) and ``compaction`` (an overlay stored); comments keep the
    connection alive."""
    await asyncio.to_thread(tenant.require, session_id)
    stream = hub(request).subscribe(tenant.app, session_id, request.is_disconnected)
    headers = {
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "X-Threadline-Worker": str(os.getpid()),  # which process serves the stream
    }
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)
