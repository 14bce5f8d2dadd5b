"""Bodies of the agent-turn routes (``_routes_turns``): the context view and one turn."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Message = dict[str, Any]


class PromptBlockOut(BaseModel):
    """One block of the frozen system prompt: its label (``null``: text that is no block's),
    its token count, and its text as rendered."""

    label: str | None
    tokens: int
    text: str


class SystemOut(BaseModel):
    """The system prompt the model gets, block by block, and its token count."""

    blocks: list[PromptBlockOut]
    tokens: int


class CountedMessageOut(BaseModel):
    """A message of the context (or one that falls out of it), with its token count."""

    id: str | None
    role: str | None
    tokens: int


class ContextTotalsOut(BaseModel):
    """Token totals: ``total`` = ``system`` + ``input`` + ``history``, against ``budget``
    (``max_context_tokens``; ``null``: no budget)."""

    system: int
    input: int
    history: int
    total: int
    budget: int | None
    dropped: int  # tokens of everything that falls out (not part of total)


class ContextOut(BaseModel):
    """What the model sees on the session's next turn, as the Runner builds it; ``dropped``
    lists the newest ``dropped_limit`` of the ``dropped_count`` messages that fall out."""

    session_id: str
    system: SystemOut
    messages: list[CountedMessageOut]
    dropped: list[CountedMessageOut]
    dropped_count: int
    totals: ContextTotalsOut
    runs: int | None
    max_context_tokens: int | None


class TurnIn(BaseModel):
    """``POST .../turns``: the user's input, a string or one user message."""

    model_config = ConfigDict(extra="forbid")

    input: str | Message = Field(examples=["Which hotels did we shortlist?"])


class TurnOut(BaseModel):
    """What one turn stored: every message (the input first), the final assistant message,
    why it stopped (``done`` or ``max_steps``), the ids of the messages that fell out of the
    context window."""

    session_id: str
    output: Message | None
    messages: list[Message]
    stop_reason: str
    overflow: list[str]
