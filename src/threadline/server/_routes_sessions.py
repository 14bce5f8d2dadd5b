"""Sessions: create, list, read, rename, delete, fork, rewind, usage; forget a user."""

from __future__ import annotations

from typing import Any

from fastapi import Query, Request, Response

from threadline.errors import InvalidArgumentError, MessageNotFoundError
from threadline.server._deps import TenantDep, changed, plain, router
from threadline.server._models import (
    DeletedOut,
    ForkIn,
    HeadOut,
    KeyOut,
    RenameIn,
    RewindIn,
    SessionIn,
    SessionOut,
    SessionPageOut,
    UsageIn,
)
from threadline.server._tenancy import NotFound, Tenant

routes = router()


@routes.post("/sessions", status_code=201, response_model=SessionOut, tags=["sessions"])
def create_session(body: SessionIn, request: Request, tenant: Tenant = TenantDep) -> Any:
    """Create a session (its id is generated unless ``session_id`` is given; 409 if taken)."""
    fields = body.model_dump()
    if tenant.user is not None:
        if fields["user_id"] not in (None, tenant.user):
            raise InvalidArgumentError(f"this API key is bound to user {tenant.user!r}")
        fields["user_id"] = tenant.user
    tenant.check_state(fields["state"])
    created = tenant.manager.create(**fields)
    changed(request, tenant, created.id)  # the session list's streams, on every worker
    return plain(created)


@routes.get("/sessions", response_model=SessionPageOut, tags=["sessions"])
def list_sessions(
    tenant: Tenant = TenantDep,
    user_id: str | None = None,
    limit: int = Query(default=50, ge=1, le=1000),
    cursor: str | None = None,
) -> Any:
    """The app's sessions (one user's with ``user_id``), newest first, paged by ``cursor``."""
    visible, user = tenant.user_filter(user_id)
    if not visible:
        return {"sessions": [], "next_cursor": None}
    page = tenant.manager.list(user_id=user, limit=limit, cursor=cursor)
    return {"sessions": [plain(s) for s in page.sessions], "next_cursor": page.next_cursor}


@routes.get("/sessions/{session_id}", response_model=SessionOut, tags=["sessions"])
def get_session(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """A session's registry row."""
    return plain(tenant.require(session_id))


@routes.patch("/sessions/{session_id}", response_model=SessionOut, tags=["sessions"])
def rename_session(
    session_id: str, body: RenameIn, request: Request, tenant: Tenant = TenantDep
) -> Any:
    """Rename a session."""
    tenant.require(session_id)
    info = plain(tenant.manager.rename(session_id, body.name))
    changed(request, tenant, session_id)
    return info


@routes.delete("/sessions/{session_id}", status_code=204, tags=["sessions"])
def delete_session(session_id: str, request: Request, tenant: Tenant = TenantDep) -> Response:
    """Delete a session and everything of it."""
    tenant.require(session_id)
    tenant.manager.delete(session_id)
    changed(request, tenant, session_id)
    return Response(status_code=204)


@routes.post(
    "/sessions/{session_id}/fork", status_code=201, response_model=SessionOut, tags=["sessions"]
)
def fork_session(session_id: str, body: ForkIn, tenant: Tenant = TenantDep) -> Any:
    """A new session whose history is the path to ``at_message_id`` (default: the head)."""
    session = tenant.session(session_id)
    at = body.at_message_id
    if at is None:
        head = session.get_latest_leaf()
        if head is None:
            raise MessageNotFoundError(f"session {session_id!r} has no message to fork at")
        at = head["id"]
    return plain(tenant.manager.fork(session_id, at, body.name))


@routes.post("/sessions/{session_id}/rewind", response_model=HeadOut, tags=["sessions"])
def rewind_session(
    session_id: str, body: RewindIn, request: Request, tenant: Tenant = TenantDep
) -> Any:
    """Move the head before a message (``before_message_id``) or before the first message of
    a run (``before_invocation_id``), undoing the session-state changes from there on (nothing
    is deleted). Exactly one of the two: else 400."""
    session = tenant.session(session_id)
    tenant.manager.rewind(
        session_id, body.before_message_id, before_invocation_id=body.before_invocation_id
    )
    changed(request, tenant, session_id)
    head = session.get_latest_leaf()
    return {"head_id": head["id"] if head else None}


@routes.post("/sessions/{session_id}/usage", response_model=SessionOut, tags=["sessions"])
def add_usage(session_id: str, body: UsageIn, tenant: Tenant = TenantDep) -> Any:
    """Add tokens and cost to the session's counters."""
    tenant.writable(session_id)
    tenant.manager.add_usage(
        session_id, body.input_tokens, body.output_tokens, body.cost, user_id=tenant.user
    )
    return plain(tenant.require(session_id))


@routes.delete("/users/{user_id}", response_model=DeletedOut, tags=["sessions"])
def forget_user(user_id: str, tenant: Tenant = TenantDep) -> Any:
    """Delete everything of a user in the app: sessions, user blocks, ``user:`` state."""
    visible, _ = tenant.user_filter(user_id)
    if not visible:
        raise NotFound(f"user {user_id!r} not found")
    return {"sessions_deleted": tenant.manager.forget_user(user_id)}


@routes.get("/key", response_model=KeyOut, tags=["service"])
def who_am_i(tenant: Tenant = TenantDep) -> Any:
    """The app the calling key reaches and the user it is bound to (``null``: every user of
    the app) — what a client (the studio) needs to offer only the writes the key may make."""
    return {"app": tenant.app, "user": tenant.user}
