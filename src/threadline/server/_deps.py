"""What every route shares: its router, the tenant of the request, events, conversions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from threadline.server._events import EventHub
from threadline.server._models import ErrorOut
from threadline.server._paths import IdRoute
from threadline.server._tenancy import Tenant, Tenants

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text}
    for status, text in (
        (400, "Bad input"),
        (401, "Missing, unknown or revoked API key"),
        (404, "Missing, or another tenant's"),
        (409, "Already exists"),
        (413, "Body too large"),
        (422, "Malformed request"),
        (503, "Storage unavailable"),
    )
}

bearer = HTTPBearer(auto_error=False, description="An API key: `threadline keys create`")


def router() -> APIRouter:
    """A ``/v1`` router whose routes take URL-encoded ids and declare the error responses."""
    return APIRouter(prefix="/v1", route_class=IdRoute, responses=ERRORS)


def tenants(request: Request) -> Tenants:
    """The app's :class:`Tenants`."""
    found: Tenants = request.app.state.tenants
    return found


def hub(request: Request) -> EventHub:
    """The worker's :class:`EventHub`."""
    found: EventHub = request.app.state.hub
    return found


def _tenant(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Security(bearer),
    x_threadline_app: str | None = Header(
        default=None, description="The app, when the server runs with --no-auth"
    ),
) -> Tenant:
    registry = tenants(request)
    if not registry.auth:
        return registry.from_header(x_threadline_app)
    return registry.from_key(credentials.credentials if credentials else None)


TenantDep = Depends(_tenant)


def changed(request: Request, tenant: Tenant, session_id: str) -> None:
    """Tell subscribers (on every worker) that the session changed."""
    hub(request).changed(tenant.app, session_id)


def plain(obj: Any) -> dict[str, Any]:
    """A frozen dataclass (SessionInfo, SearchHit, ...) as a dict of its fields, unconverted
    (the response model serialises datetimes as ISO-8601 UTC ``Z``)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}
