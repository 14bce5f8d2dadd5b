"""The app's profile over HTTP: ``GET /v1/profile`` and ``PUT /v1/profile``
(integrations.md §18.1; api.md clarification 27: a profile is operator data).

Reading needs any key of the app. Writing needs an app-wide key (a key bound to a user gets
403), and may name model endpoints only from the operator's allowlist (``serve --allow-model
NAME=base_url,env``) and no server path; what the stored profile already holds may be
written back unchanged.
"""

from __future__ import annotations

from typing import Any

from fastapi import Body, Request

from threadline.internal import check_document, check_for_tenant
from threadline.profile import Profile
from threadline.server._deps import TenantDep, router
from threadline.server._tenancy import Forbidden, Tenant

routes = router()


@routes.get("/profile", tags=["profile"])
def get_profile(tenant: Tenant = TenantDep) -> Any:
    """The app's profile document (``Profile.to_dict()``); an app without one answers the
    empty profile, ``version`` 0."""
    profile = Profile.load(tenant.manager.store, tenant.app) or Profile()
    return {"version": profile.version, **profile.to_dict()}


@routes.put("/profile", tags=["profile"])
def put_profile(
    request: Request, document: dict[str, Any] = Body(...), tenant: Tenant = TenantDep
) -> Any:
    """Replace the app's profile (the same document ``GET`` answers; ``version`` and
    ``updated_at`` in it are ignored: the store counts). Every worker picks it up at its next
    request."""
    if tenant.user is not None:
        raise Forbidden("a key bound to a user may not change the app's profile")
    parts = check_document(document)
    current = Profile.load(tenant.manager.store, tenant.app)
    before = None if current is None else check_document(current.document())
    check_for_tenant(parts, request.app.state.tenants.allowed_models, before)
    saved = Profile.from_dict(document).save(tenant.manager.store, tenant.app)
    tenant.manager.profile  # noqa: B018 - adopt it in this worker now
    return {"version": saved.version, **saved.to_dict()}
