"""What every route shares: its router, the tenant of the request, events, conversions."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from threadline.server._events import EventHub
from threadline.server._models import ErrorOut
from threadline.server._paths import IdRoute
from threadline.server._tenancy import Tenant

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut, "description": text}
    for status, text in (
        (400, "Bad input"),
        (401, "Missing, unknown or revoked API key"),
        (403, "A key bound to a user writing app-wide data"),
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
    # Settled by the Authenticate middleware before routing (the parameters above only
    # document the key and the header in the OpenAPI schema).
    return request_tenant(request)


def request_tenant(request: Request) -> Tenant:
    """The tenant the :class:`~threadline.server._auth.Authenticate` middleware found."""
    found: Tenant = request.state.tenant
    return found


TenantDep = Depends(_tenant)


def changed(request: Request, tenant: Tenant, session_id: str) -> None:
    """Tell subscribers (on every worker) that the session changed."""
    hub(request).changed(tenant.app, session_id)


def plain(obj: Any) -> dict[str, Any]:
    """A frozen dataclass (SessionInfo, SearchHit, ...) as a dict of its fields, unconverted
    (the response model serialises datetimes as ISO-8601 UTC ``Z``)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}
