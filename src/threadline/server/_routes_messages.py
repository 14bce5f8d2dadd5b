"""Messages: append, history, the whole tree, one message, branches, the head."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import Body, Query, Request, Response

from threadline.errors import InvalidArgumentError, InvalidMessageError, MessageNotFoundError
from threadline.server._deps import TenantDep, changed, router
from threadline.server._models import (
    AppendIn,
    HeadIn,
    HeadOut,
    HeadPathOut,
    Message,
    MessagesOut,
    PathLengthOut,
    PathPageOut,
    TreeOut,
)
from threadline.server._tenancy import Tenant
from threadline.types import AUTO

routes = router()

_APPEND_EXAMPLES: dict[str, Any] = {
    "one": {"summary": "One message", "value": {"role": "user", "content": "Deploy on Friday?"}},
    "many": {
        "summary": "Several, in one transaction",
        "value": {"messages": [{"role": "user", "content": "Hi"}], "parent_id": None},
    },
    "state": {
        "summary": "One message and a state change, in one transaction",
        "value": {
            "messages": [{"role": "user", "content": "Book it"}],
            "state_delta": {"booked": True},
        },
    },
}

# The body is one message (any JSON object the library accepts) or the batch form.
_APPEND_BODY = {
    "requestBody": {
        "content": {
            "application/json": {
                "schema": {
                    "anyOf": [
                        {"type": "object", "title": "Message", "additionalProperties": True},
                        AppendIn.model_json_schema(),
                    ]
                }
            }
        }
    }
}


@dataclass(frozen=True)
class _Batch:
    """The ``{"messages": [...]}`` form of an append."""

    messages: list[Any]
    parent_id: Any  # AUTO (the head), None (a new root) or an id
    state_delta: dict[str, Any] | None


def _batch(body: Mapping[str, Any]) -> _Batch | None:
    """The ``{"messages": [...], "parent_id"?, "state_delta"?}`` form, else None (the body is
    one message)."""
    if "messages" not in body or "role" in body:
        return None
    extra = set(body) - set(AppendIn.model_fields)
    if extra:
        raise InvalidMessageError(f"unknown fields beside 'messages': {sorted(extra)}")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise InvalidMessageError("'messages' must be a non-empty list of messages")
    delta = body.get("state_delta")
    if delta is not None:
        if not isinstance(delta, dict):
            raise InvalidArgumentError("'state_delta' must be a JSON object")
        if len(messages) != 1:
            raise InvalidArgumentError("'state_delta' needs exactly one message")
    return _Batch(messages, body.get("parent_id", AUTO), delta)


@routes.post(
    "/sessions/{session_id}/messages",
    status_code=201,
    response_model=Message | MessagesOut,
    tags=["messages"],
    openapi_extra=_APPEND_BODY,
)
def append_messages(
    session_id: str,
    request: Request,
    body: dict[str, Any] = Body(openapi_examples=_APPEND_EXAMPLES),
    parent_id: str | None = Query(default=None, description="Parent (default: the head)"),
    tenant: Tenant = TenantDep,
) -> Any:
    """Append one message (answered with the stored message) or ``{"messages": [...]}`` (one
    transaction; answered with ``{"messages": [...]}``), optionally with a ``state_delta``
    stored atomically with a single message. The session is created if missing."""
    session = tenant.writable(session_id)
    batch = _batch(body)
    if batch is None:
        stored: Any = session.append_message(body, parent_id if parent_id is not None else AUTO)
    else:
        parent = parent_id if parent_id is not None else batch.parent_id
        if batch.state_delta is not None:
            tenant.check_state(batch.state_delta)
            one = session.append_message(batch.messages[0], parent, state_delta=batch.state_delta)
            stored = {"messages": [one]}
        else:
            stored = {"messages": session.append_messages(batch.messages, parent)}
    changed(request, tenant, session_id)
    return stored


_EPOCH = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def cutoff_param(after: str | None) -> str | float | None:
    """The ``after`` query as ``get_history`` takes it: a number is epoch seconds, anything
    else an ISO-8601 timestamp (checked by the library: a bad one is a 400).

    >>> cutoff_param("1767261600.5"), cutoff_param("2026-01-01T10:00:00Z"), cutoff_param(None)
    (1767261600.5, '2026-01-01T10:00:00Z', None)
    """
    if after is not None and _EPOCH.fullmatch(after.strip()):
        return float(after)
    return after


@routes.get("/sessions/{session_id}/messages", response_model=MessagesOut, tags=["messages"])
def get_history(
    session_id: str,
    tenant: Tenant = TenantDep,
    leaf_id: str | None = None,
    limit: int | None = Query(default=None, ge=1, description="The last N messages"),
    max_tokens: int | None = Query(
        default=None, ge=0, description="Oldest dropped until the estimate fits (leaf kept)"
    ),
    after: str | None = Query(
        default=None,
        description="Only messages created at or after it: ISO-8601, or epoch seconds",
    ),
    runs: int | None = Query(
        default=None,
        ge=0,
        description="The last N runs (a run starts at a user message, up to the next one)",
    ),
    branch: str | None = Query(
        default=None,
        min_length=1,
        description="Only messages whose metadata.branch is unset, equal to or a dot-prefix "
        "of it (multi-agent branches, e.g. root.agent_a)",
    ),
    attachments: Literal["inline", "ref"] = "inline",
) -> Any:
    """The history: the root→leaf path (default: the head) with overlays applied, then
    windowed as ``Session.get_history``: ``branch``, ``after``, ``runs``, ``limit``,
    ``max_tokens``, in this order."""
    session = tenant.session(session_id)
    history = session.get_history(
        leaf_id,
        limit=limit,
        max_tokens=max_tokens,
        after=cutoff_param(after),
        runs=runs,
        branch=branch,
        attachments=attachments,
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


@routes.get(
    "/sessions/{session_id}/messages/{message_id}/path_length",
    response_model=PathLengthOut,
    tags=["messages"],
)
def get_path_length(session_id: str, message_id: str, tenant: Tenant = TenantDep) -> Any:
    """How many raw messages the path from the root to this message holds (one indexed read:
    the stored depth)."""
    length = tenant.session(session_id).get_path_length(message_id)
    return {"message_id": message_id, "path_length": length}


@routes.get("/sessions/{session_id}/head", response_model=HeadPathOut, tags=["messages"])
def get_head(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """The session's head (active leaf) and the length of its path (``get_message_count``),
    in one indexed read: the head row and its stored depth, not a walk of the tree."""
    tenant.require(session_id)
    tail = tenant.manager.store.get_path_tail(tenant.app, session_id, 1, attachments="ref")
    if not tail:
        return {"head_id": None, "path_length": 0}
    head_id, _, depth = tail[-1]
    return {"head_id": head_id, "path_length": depth}


@routes.put("/sessions/{session_id}/head", response_model=HeadOut, tags=["messages"])
def checkout(session_id: str, body: HeadIn, request: Request, tenant: Tenant = TenantDep) -> Any:
    """Check out a message: the head moves there (the next append continues from it)."""
    tenant.session(session_id).checkout(body.leaf_id)
    changed(request, tenant, session_id)
    return {"head_id": body.leaf_id}


# The longest branch ``descend`` follows down to its leaf (one indexed read a message): it
# bounds what one request may cost; a deeper branch is opened by its leaf_id.
DESCEND_LIMIT = 10_000


@routes.get("/sessions/{session_id}/path", response_model=PathPageOut, tags=["messages"])
def get_path_page(
    session_id: str,
    tenant: Tenant = TenantDep,
    leaf_id: str | None = Query(default=None, description="The path's end (default: the head)"),
    descend: str | None = Query(
        default=None,
        description="Instead of leaf_id: the leaf reached from this message by following its "
        "newest child (a branch's own leaf)",
    ),
    before: str | None = Query(
        default=None, description="Page back: the messages above this one (its ancestors)"
    ),
    limit: int = Query(default=50, ge=1, le=500),
    attachments: Literal["inline", "ref"] = "ref",
) -> Any:
    """A page of one root→leaf path, newest ``limit`` messages, root side first, raw
    (overlays are not applied: ``GET .../compactions`` lists them), each with its depth and
    its children's ids (where branches fork; one indexed read per message). Reads at most
    ``limit`` + 2 path rows: a session of any size opens at its head in one request, and pages
    back with ``before``."""
    session = tenant.session(session_id)
    store = tenant.manager.store
    head = session.get_latest_leaf()
    head_id = head["id"] if head else None
    leaf = leaf_id
    if descend is not None:
        leaf = _leaf_below(session, descend)
    # One row more than the page: the parent of the page's first message.
    end = before if before is not None else leaf if leaf is not None else head_id
    rows: list[tuple[str, str, int]] = []
    if end is not None:
        extra = 2 if before is not None else 1
        rows = store.get_path_tail(
            tenant.app, session_id, limit + extra, end, attachments=attachments
        )
        if before is not None:
            rows = rows[:-1]
    parent: str | None = None
    if len(rows) > limit:
        parent = rows[0][0]
        rows = rows[1:]
    nodes = []
    for message_id, data, depth in rows:
        children = [m["id"] for m in session.get_branches(message_id)]
        node = {"depth": depth, "parent_id": parent, "children": children}
        nodes.append({**node, "message": json.loads(data)})
        parent = message_id
    return {
        "head_id": head_id,
        "leaf_id": end if before is None else None,
        "nodes": nodes,
        "has_more": bool(rows) and rows[0][2] > 1,
    }


def _leaf_below(session: Any, message_id: str) -> str:
    """The leaf reached from ``message_id`` by following the newest child at each step."""
    if session.get_message(message_id) is None:
        raise MessageNotFoundError(f"message {message_id!r} not in session")
    current = message_id
    for _ in range(DESCEND_LIMIT):
        children = session.get_branches(current)
        if not children:
            return current
        current = children[-1]["id"]
    raise InvalidArgumentError(
        f"the branch below {message_id!r} is deeper than {DESCEND_LIMIT} messages: "
        "open it with leaf_id"
    )
