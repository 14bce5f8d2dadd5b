"""Messages: append, history, the whole tree, one message, branches, the head."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from fastapi import Body, Query, Request, Response

from threadline.errors import InvalidMessageError, MessageNotFoundError
from threadline.server._deps import TenantDep, changed, router
from threadline.server._models import HeadIn, HeadOut, Message, MessagesOut, TreeOut
from threadline.server._tenancy import Tenant
from threadline.types import AUTO

routes = router()

_APPEND_EXAMPLES: dict[str, Any] = {
    "one": {"summary": "One message", "value": {"role": "user", "content": "Deploy on Friday?"}},
    "many": {
        "summary": "Several, in one transaction",
        "value": {"messages": [{"role": "user", "content": "Hi"}], "parent_id": None},
    },
}


def _batch(body: Mapping[str, Any]) -> tuple[list[Any], Any] | None:
    """``(messages, parent_id)`` of the ``{"messages": [...]}`` form, else None."""
    if "messages" not in body or "role" in body:
        return None
    extra = set(body) - {"messages", "parent_id"}
    if extra:
        raise InvalidMessageError(f"unknown fields beside 'messages': {sorted(extra)}")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise InvalidMessageError("'messages' must be a non-empty list of messages")
    return messages, body.get("parent_id", AUTO)


@routes.post(
    "/sessions/{session_id}/messages",
    status_code=201,
    response_model=Message | MessagesOut,
    tags=["messages"],
)
def append_messages(
    session_id: str,
    request: Request,
    body: dict[str, Any] = Body(openapi_examples=_APPEND_EXAMPLES),
    parent_id: str | None = Query(default=None, description="Parent (default: the head)"),
    tenant: Tenant = TenantDep,
) -> Any:
    """Append one message (answered with the stored message) or ``{"messages": [...]}`` (one
    transaction; answered with ``{"messages": [...]}``). The session is created if missing."""
    session = tenant.writable(session_id)
    batch = _batch(body)
    if batch is None:
        stored: Any = session.append_message(body, parent_id if parent_id is not None else AUTO)
    else:
        messages, parent = batch
        if parent_id is not None:
            parent = parent_id
        stored = {"messages": session.append_messages(messages, parent)}
    changed(request, tenant, session_id)
    return stored


@routes.get("/sessions/{session_id}/messages", response_model=MessagesOut, tags=["messages"])
def get_history(
    session_id: str,
    tenant: Tenant = TenantDep,
    leaf_id: str | None = None,
    limit: int | None = Query(default=None, ge=1),
    max_tokens: int | None = Query(default=None, ge=1),
    after: str | None = Query(default=None, description="ISO-8601: only messages created later"),
    attachments: Literal["inline", "ref"] = "inline",
) -> Any:
    """The history: the root→leaf path (default: the head) with overlays applied."""
    session = tenant.session(session_id)
    history = session.get_history(
        leaf_id, limit=limit, max_tokens=max_tokens, after=after, attachments=attachments
    )
    return {"messages": history}


@routes.delete("/sessions/{session_id}/messages", status_code=204, tags=["messages"])
def clear_messages(session_id: str, request: Request, tenant: Tenant = TenantDep) -> Response:
    """Delete every message of the session (the session stays)."""
    tenant.session(session_id).clear_messages()
    changed(request, tenant, session_id)
    return Response(status_code=204)


@routes.get("/sessions/{session_id}/tree", response_model=TreeOut, tags=["messages"])
def get_tree(
    session_id: str,
    tenant: Tenant = TenantDep,
    after_seq: int = Query(default=0, ge=0),
    limit: int = Query(default=1000, ge=1, le=10_000),
    attachments: Literal["inline", "ref"] = "ref",
) -> Any:
    """Every message (all branches) with its parent, in ``seq`` order, a page at a time."""
    session = tenant.session(session_id)
    store = tenant.manager.store
    nodes = store.get_tree(
        tenant.app, session_id, after_seq=after_seq, limit=limit, attachments=attachments
    )
    head = session.get_latest_leaf()
    return {
        "head_id": head["id"] if head else None,
        "nodes": [{"seq": n.seq, "parent_id": n.parent_id, "message": n.message} for n in nodes],
        "next_after_seq": nodes[-1].seq if len(nodes) == limit else None,
    }


@routes.get(
    "/sessions/{session_id}/messages/{message_id}", response_model=Message, tags=["messages"]
)
def get_message(session_id: str, message_id: str, tenant: Tenant = TenantDep) -> Any:
    """One message as stored."""
    found = tenant.session(session_id).get_message(message_id)
    if found is None:
        raise MessageNotFoundError(f"message {message_id!r} not in session {session_id!r}")
    return found


@routes.put(
    "/sessions/{session_id}/messages/{message_id}", response_model=Message, tags=["messages"]
)
def update_message(
    session_id: str,
    message_id: str,
    request: Request,
    body: dict[str, Any] = Body(),
    tenant: Tenant = TenantDep,
) -> Any:
    """Replace a message's content (its place in the tree stays)."""
    if body.get("id", message_id) != message_id:
        raise InvalidMessageError("the body's id differs from the path's")
    updated = tenant.session(session_id).update_message({**body, "id": message_id})
    changed(request, tenant, session_id)
    return updated


@routes.delete("/sessions/{session_id}/messages/{message_id}", status_code=204, tags=["messages"])
def delete_message(
    session_id: str, message_id: str, request: Request, tenant: Tenant = TenantDep
) -> Response:
    """Delete one message (its children are not re-parented)."""
    if tenant.session(session_id).delete_messages([message_id]) == 0:
        raise MessageNotFoundError(f"message {message_id!r} not in session {session_id!r}")
    changed(request, tenant, session_id)
    return Response(status_code=204)


@routes.get(
    "/sessions/{session_id}/messages/{message_id}/branches",
    response_model=MessagesOut,
    tags=["messages"],
)
def get_branches(session_id: str, message_id: str, tenant: Tenant = TenantDep) -> Any:
    """The children of a message (e.g. the original and regenerated answers), oldest first."""
    return {"messages": tenant.session(session_id).get_branches(message_id)}


@routes.get("/sessions/{session_id}/head", response_model=HeadOut, tags=["messages"])
def get_head(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """The session's head (active leaf)."""
    head = tenant.session(session_id).get_latest_leaf()
    return {"head_id": head["id"] if head else None}


@routes.put("/sessions/{session_id}/head", response_model=HeadOut, tags=["messages"])
def checkout(session_id: str, body: HeadIn, request: Request, tenant: Tenant = TenantDep) -> Any:
    """Check out a message: the head moves there (the next append continues from it)."""
    tenant.session(session_id).checkout(body.leaf_id)
    changed(request, tenant, session_id)
    return {"head_id": body.leaf_id}
