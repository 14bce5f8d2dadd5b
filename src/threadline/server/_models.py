"""Request and response bodies of the HTTP service (pydantic models: the OpenAPI schema).

Datetimes are aware UTC and serialise as ISO-8601 with ``Z``. Messages are free-form JSON
objects in the AI SDK ``UIMessage`` shape (the library normalises and checks them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors ------------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    """What went wrong: ``type`` (a ThreadlineError subclass or HTTP name) and ``message``."""

    type: str
    message: str


class ErrorOut(BaseModel):
    """Every error response: ``{"error": {"type", "message"}}``."""

    error: ErrorDetail


# -- sessions ----------------------------------------------------------------------------------
class SessionOut(BaseModel):
    """A session's registry row."""

    id: str
    app_name: str
    user_id: str | None
    name: str | None
    parent_session_id: str | None
    model: str | None
    source: str | None
    input_tokens: int
    output_tokens: int
    estimated_cost: float
    end_reason: str | None
    metadata: dict[str, Any]
    message_count: int
    created_at: datetime
    updated_at: datetime
    generation: int = 0  # which creation of this id (a session deleted and created again: new)


class SessionPageOut(BaseModel):
    """One page of sessions, newest first; pass ``next_cursor`` back for the next."""

    sessions: list[SessionOut]
    next_cursor: str | None


class SessionIn(_In):
    """``POST /v1/sessions``: every field optional (the id is generated unless given)."""

    name: str | None = None
    session_id: str | None = None
    user_id: str | None = None
    parent_session_id: str | None = None
    model: str | None = None
    source: str | None = None
    metadata: dict[str, Any] | None = None
    state: dict[str, Any] | None = None


class RenameIn(_In):
    """``PATCH /v1/sessions/{id}``: the new name."""

    name: str


class ForkIn(_In):
    """``POST .../fork``: copy the path up to ``at_message_id`` (default: the head)."""

    at_message_id: str | None = None
    name: str | None = None


class RewindIn(_In):
    """``POST .../rewind``: move the head before a message, undoing the state changes from it
    on. Give exactly one: ``before_message_id``, or ``before_invocation_id`` (before the first
    message of the active path whose ``metadata.invocationId`` is that id)."""

    before_message_id: str | None = None
    before_invocation_id: str | None = None


class UsageIn(_In):
    """``POST .../usage``: add to the session's token and cost counters."""

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cost: float = Field(default=0.0, ge=0)


class DeletedOut(BaseModel):
    """How many sessions a ``DELETE /v1/users/{user_id}`` removed."""

    sessions_deleted: int


# -- messages ----------------------------------------------------------------------------------
class MessagesOut(BaseModel):
    """A list of messages (history, branches, or what an append stored)."""

    messages: list[Message]


class AppendIn(_In):
    """``POST .../messages``, the batch form (the other form is one message object):
    ``messages`` stored in one transaction, each the parent of the next; ``parent_id`` of the
    first (absent: the head; ``null``: a new root); ``state_delta`` (only with exactly one
    message) applied to the session state in the same transaction and undone by a rewind to
    before that message (``null`` values delete keys)."""

    messages: list[Message] = Field(min_length=1)
    parent_id: str | None = None
    state_delta: dict[str, Any] | None = None


class HeadIn(_In):
    """``PUT .../head``: check out this message (any message of the session)."""

    leaf_id: str


class HeadOut(BaseModel):
    """The session's head (``null`` when it has no message)."""

    head_id: str | None


class HeadPathOut(HeadOut):
    """The head and the number of raw messages on its path (overlays not applied; 0 when the
    session has no message): the library's ``get_message_count``."""

    path_length: int


class PathLengthOut(BaseModel):
    """The number of raw messages on the path from the root to a message (itself included)."""

    message_id: str
    path_length: int


class TreeNodeOut(BaseModel):
    """One message of the tree with its ``seq`` and ``parent_id``."""

    seq: int
    parent_id: str | None
    message: Message


class TreeOut(BaseModel):
    """A page of every message of a session (all branches) in ``seq`` order."""

    head_id: str | None
    nodes: list[TreeNodeOut]
    next_after_seq: int | None


class PathNodeOut(BaseModel):
    """One message of a path page: its depth (1 = a root), parent and children's ids."""

    depth: int
    parent_id: str | None
    children: list[str]
    message: Message


class PathPageOut(BaseModel):
    """A page of one root→leaf path, root side first: ``has_more`` when older messages lie
    above the first; page back with ``before`` = the first node's id."""

    head_id: str | None
    leaf_id: str | None
    nodes: list[PathNodeOut]
    has_more: bool


# -- search ------------------------------------------------------------------------------------
class SearchHitOut(BaseModel):
    """A message matching a search."""

    id: str
    role: str
    content: str
    created_at: datetime | None
    session_id: str
    score: float


class SearchOut(BaseModel):
    """Search hits, best first."""

    hits: list[SearchHitOut]


# -- memory ------------------------------------------------------------------------------------
class BlockOut(BaseModel):
    """A memory block as the session renders it."""

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    writable: bool
    is_skill: bool
    is_searchable: bool
    scope: str


class BlocksOut(BaseModel):
    """The session's memory blocks."""

    blocks: list[BlockOut]


class BlockIn(_In):
    """``PUT`` (replace) or ``POST`` (append) a block's content."""

    content: str


class PromptOut(BaseModel):
    """The session's system prompt."""

    prompt: str


class ToolsOut(BaseModel):
    """The memory tools in an LLM API's schema format."""

    tools: list[dict[str, Any]]


class ToolResultOut(BaseModel):
    """What a tool returned (failures are ``"Error: ..."`` strings, as for a model)."""

    result: str


class CompactIn(_In):
    """``POST .../compact``: compact the path to ``leaf_id`` (default: the head)."""

    leaf_id: str | None = None


class CompactResultOut(BaseModel):
    """The range a compaction summarised (``null`` when the function declined)."""

    from_message_id: str
    to_message_id: str
    summary: str


class CompactOut(BaseModel):
    """The result of ``POST .../compact``."""

    result: CompactResultOut | None


class CompactionOut(BaseModel):
    """A stored summary overlay. ``superseded``: no read of the session shows it any more (on
    every branch it lies on, a newer overlay from the same start, or one whose range holds its
    start, is applied instead: ``threadline.compaction.superseded``)."""

    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: datetime
    superseded: bool = False


class CompactionsOut(BaseModel):
    """Every overlay of a session, oldest first."""

    compactions: list[CompactionOut]


class StateOut(BaseModel):
    """The session's merged state (``app:``, ``user:`` and session keys)."""

    state: dict[str, Any]


class KeyOut(BaseModel):
    """What the calling key reaches: its app, and its user when it is bound to one."""

    app: str
    user: str | None


class HealthOut(BaseModel):
    """Liveness."""

    status: str


class ImportOut(BaseModel):
    """The ids of the sessions an import wrote."""

    session_ids: list[str]
