"""Search: one session's messages, or every session of the app (one user's)."""

from __future__ import annotations

from typing import Any

from fastapi import Query

from threadline.server._deps import TenantDep, plain, router
from threadline.server._models import SearchOut
from threadline.server._tenancy import Tenant

routes = router()


@routes.get("/sessions/{session_id}/search", response_model=SearchOut, tags=["search"])
def search_session(
    session_id: str,
    q: str = Query(description="Words or text; never parsed as query syntax"),
    limit: int = Query(default=20, ge=1, le=1000),
    tenant: Tenant = TenantDep,
) -> Any:
    """Full-text search in one session's messages, best first."""
    return {"hits": [plain(h) for h in tenant.session(session_id).search(q, limit=limit)]}


@routes.get("/search", response_model=SearchOut, tags=["search"])
def search_app(
    q: str = Query(description="Words or text; never parsed as query syntax"),
    user_id: str | None = None,
    limit: int = Query(default=20, ge=1, le=1000),
    tenant: Tenant = TenantDep,
) -> Any:
    """Full-text search across the app's sessions (a user-bound key: its user's only)."""
    visible, user = tenant.user_filter(user_id)
    if not visible:
        return {"hits": []}
    return {"hits": [plain(h) for h in tenant.manager.search(q, limit=limit, user_id=user)]}
