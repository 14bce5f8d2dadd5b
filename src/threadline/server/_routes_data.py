"""Export and import: JSON Lines in the CLI's format (``threadline.export``, docs/cli.md).

``GET /v1/export`` streams one record per session of the key's app (the key's user's only,
for a user-bound key). ``POST /v1/import`` takes such lines into the key's app; it needs a key
not bound to a user (records carry user- and app-wide blocks and state).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from threadline.errors import InvalidArgumentError
from threadline.export import dump_jsonl, export_sessions, import_sessions, load_jsonl
from threadline.server._deps import TenantDep, changed, router
from threadline.server._models import ImportOut
from threadline.server._tenancy import Tenant

routes = router()

NDJSON = "application/x-ndjson"


def _lines(tenant: Tenant, session_ids: list[str] | None) -> Iterator[str]:
    store = tenant.manager.store
    for record in export_sessions(store, tenant.app, session_ids=session_ids, user_id=tenant.user):
        buffer = io.StringIO()
        dump_jsonl([record], buffer)
        yield buffer.getvalue()


@routes.get(
    "/export",
    tags=["data"],
    response_class=StreamingResponse,
    responses={200: {"content": {NDJSON: {}}, "description": "One JSON record per line"}},
)
def export(
    tenant: Tenant = TenantDep,
    session_id: list[str] | None = Query(default=None, description="Repeat for several"),
) -> StreamingResponse:
    """Export sessions as JSON Lines (every session of the app, or those named)."""
    for sid in session_id or ():
        tenant.require(sid)  # before the 200: a missing one is a 404, not a cut stream
    return StreamingResponse(_lines(tenant, session_id), media_type=NDJSON)


def _import(tenant: Tenant, text: str, replace: bool) -> list[str]:
    if tenant.user is not None:
        raise InvalidArgumentError("import needs an API key that is not bound to a user")
    records = list(load_jsonl(io.StringIO(text)))
    return import_sessions(tenant.manager.store, records, replace=replace, app=tenant.app)


@routes.post(
    "/import",
    status_code=201,
    response_model=ImportOut,
    tags=["data"],
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {NDJSON: {"schema": {"type": "string"}}},
            "description": "JSON Lines from GET /v1/export or `threadline export`",
        }
    },
)
async def import_(request: Request, replace: bool = False, tenant: Tenant = TenantDep) -> Any:
    """Import JSON Lines into the key's app; a session that exists is a 409 unless
    ``replace=true``. Every record is checked before anything is written."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgumentError("the body is not UTF-8 text") from None
    ids = await run_in_threadpool(_import, tenant, text, replace)
    for sid in ids:
        changed(request, tenant, sid)
    return {"session_ids": ids}
