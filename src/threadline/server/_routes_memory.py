"""What hangs off a session besides its messages: blocks, prompt, tools, compaction, state,
attachments."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import Body, Request, Response

from threadline.compaction import superseded
from threadline.errors import BlockNotFoundError
from threadline.server._deps import TenantDep, changed, plain, router
from threadline.server._models import (
    BlockIn,
    BlockOut,
    BlocksOut,
    CompactIn,
    CompactionsOut,
    CompactOut,
    PromptOut,
    StateOut,
    ToolResultOut,
    ToolsOut,
)
from threadline.server._tenancy import NotFound, Tenant
from threadline.types import Compaction

routes = router()
_TREE_PAGE = 10_000


@routes.get("/sessions/{session_id}/blocks", response_model=BlocksOut, tags=["memory"])
def get_blocks(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """The session's memory blocks (those the server's ``configure`` hook declares)."""
    return {"blocks": [plain(b) for b in tenant.session(session_id).get_context_blocks()]}


@routes.get("/sessions/{session_id}/blocks/{label}", response_model=BlockOut, tags=["memory"])
def get_block(session_id: str, label: str, tenant: Tenant = TenantDep) -> Any:
    """One memory block."""
    block = tenant.session(session_id).get_context_block(label)
    if block is None:
        raise BlockNotFoundError(f"no block {label!r} in session {session_id!r}")
    return plain(block)


@routes.put("/sessions/{session_id}/blocks/{label}", response_model=BlockOut, tags=["memory"])
def replace_block(
    session_id: str, label: str, body: BlockIn, request: Request, tenant: Tenant = TenantDep
) -> Any:
    """Replace a writable block's content (its ``max_tokens`` is enforced)."""
    session = tenant.writable(session_id)
    tenant.check_block(session, label)
    block = session.replace_context_block(label, body.content)
    changed(request, tenant, session_id)
    return plain(block)


@routes.post("/sessions/{session_id}/blocks/{label}", response_model=BlockOut, tags=["memory"])
def append_block(
    session_id: str, label: str, body: BlockIn, request: Request, tenant: Tenant = TenantDep
) -> Any:
    """Append to a writable block's content."""
    session = tenant.writable(session_id)
    tenant.check_block(session, label)
    block = session.append_context_block(label, body.content)
    changed(request, tenant, session_id)
    return plain(block)


@routes.get("/sessions/{session_id}/prompt", response_model=PromptOut, tags=["memory"])
def get_prompt(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """The system prompt (frozen on first read when the app caches it)."""
    return {"prompt": tenant.session(session_id).freeze_system_prompt()}


@routes.post("/sessions/{session_id}/prompt/refresh", response_model=PromptOut, tags=["memory"])
def refresh_prompt(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """Re-render the system prompt from the blocks as they are now."""
    return {"prompt": tenant.session(session_id).refresh_system_prompt()}


@routes.get("/sessions/{session_id}/tools", response_model=ToolsOut, tags=["memory"])
def get_tools(
    session_id: str,
    tenant: Tenant = TenantDep,
    format: Literal["openai", "anthropic", "mcp"] = "openai",
) -> Any:
    """The memory tools a model may call, in an LLM API's schema format."""
    tools = tenant.session(session_id).tools()
    exported = {
        "openai": tools.to_openai,
        "anthropic": tools.to_anthropic,
        "mcp": tools.to_mcp,
    }[format]()
    return {"tools": exported}


@routes.post("/sessions/{session_id}/tools/{name}", response_model=ToolResultOut, tags=["memory"])
def call_tool(
    session_id: str,
    name: str,
    request: Request,
    arguments: dict[str, Any] | None = Body(default=None),
    tenant: Tenant = TenantDep,
) -> Any:
    """Run a memory tool as a model would; failures come back as ``"Error: ..."`` results."""
    session = tenant.session(session_id)
    tools = session.tools()
    if name not in tools:
        raise NotFound(f"no tool {name!r} in session {session_id!r}")
    if name == "set_context":
        tenant.check_block(session, (arguments or {}).get("label"))
    result = tools.execute(name, arguments or {})
    changed(request, tenant, session_id)
    return {"result": result}


@routes.post("/sessions/{session_id}/compact", response_model=CompactOut, tags=["memory"])
def compact(
    session_id: str,
    request: Request,
    body: CompactIn | None = None,
    tenant: Tenant = TenantDep,
) -> Any:
    """Compact with the app's compaction function (a summary overlay; nothing deleted)."""
    result = tenant.session(session_id).compact(body.leaf_id if body else None)
    changed(request, tenant, session_id)
    return {"result": plain(result) if result is not None else None}


@routes.get("/sessions/{session_id}/compactions", response_model=CompactionsOut, tags=["memory"])
def get_compactions(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """Every summary overlay of the session, oldest first; ``superseded`` marks those no read
    shows any more (a newer overlay is applied instead on every branch they lie on)."""
    session = tenant.session(session_id)
    compactions = session.get_compactions()
    gone = _superseded(tenant, session_id, compactions) if len(compactions) > 1 else set()
    return {"compactions": [{**plain(c), "superseded": c.id in gone} for c in compactions]}


def _superseded(tenant: Tenant, session_id: str, compactions: list[Compaction]) -> set[str]:
    """Reads the tree's parent links page by page (attachments left as references)."""
    store = tenant.manager.store
    parents: dict[str, str | None] = {}
    after = 0
    while True:
        page = store.get_tree(
            tenant.app, session_id, after_seq=after, limit=_TREE_PAGE, attachments="ref"
        )
        parents.update((node.message["id"], node.parent_id) for node in page)
        if len(page) < _TREE_PAGE:
            break
        after = page[-1].seq
    head = store.get_head(tenant.app, session_id)
    return superseded(compactions, parents, head["id"] if head else None)


@routes.get("/sessions/{session_id}/state", response_model=StateOut, tags=["memory"])
def get_state(session_id: str, tenant: Tenant = TenantDep) -> Any:
    """The merged state: ``app:`` keys, the owner's ``user:`` keys, session keys."""
    return {"state": dict(tenant.session(session_id).state)}


@routes.patch("/sessions/{session_id}/state", response_model=StateOut, tags=["memory"])
def update_state(
    session_id: str,
    request: Request,
    delta: dict[str, Any] = Body(examples=[{"topic": "hotels", "user:lang": "pt", "old": None}]),
    tenant: Tenant = TenantDep,
) -> Any:
    """Apply a delta atomically (``null`` deletes a key)."""
    session = tenant.writable(session_id)
    tenant.check_state(delta)
    session.update_state(delta)
    changed(request, tenant, session_id)
    return {"state": dict(session.state)}


@routes.get(
    "/sessions/{session_id}/attachments/{ref}",
    tags=["memory"],
    response_class=Response,
    responses={200: {"content": {"application/octet-stream": {}, "text/plain": {}}}},
)
def read_attachment(session_id: str, ref: str, tenant: Tenant = TenantDep) -> Response:
    """The content of an attachment a message of this session refers to (``ref``:
    ``sha256:<hex>``, from history with ``attachments=ref``; 404 for any other): bytes as
    ``application/octet-stream``, text as ``text/plain``."""
    tenant.require(session_id)
    content = tenant.manager.store.read_attachment(tenant.app, ref, session_id=session_id)
    if isinstance(content, str):
        return Response(content, media_type="text/plain; charset=utf-8")
    return Response(content, media_type="application/octet-stream")
