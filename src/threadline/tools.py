"""Tools an LLM calls to read and edit its memory, and their export to LLM APIs.

A :class:`Toolset` maps tool names to :class:`Tool` values. ``execute(name, args)`` always
returns a string — errors come back as ``"Error: ..."`` for the model to read, never as
exceptions. This module is their public home: ``Tool``, ``Toolset`` and ``run_tool`` are
defined in ``_toolset``, the memory tools in ``_context_tools``; ``session_search`` lives here.

>>> echo = Tool("echo", "Repeat the text.", {"type": "object",
...     "properties": {"text": {"type": "string"}}, "required": ["text"],
...     "additionalProperties": False}, lambda args: args["text"])
>>> tools = Toolset([echo])
>>> tools.execute("echo", {"text": "hi"}), tools.execute("echo", {})
('hi', 'Error: missing required argument "text" for tool "echo"')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from threadline._context_tools import ToolHost, build_context_tools
from threadline._toolset import NO_RESULTS, Tool, Toolset, checked_tool, object_schema
from threadline._toolset import run_tool as run_tool  # the never-raising wrapper; not in __all__

__all__ = [
    "SEARCH_RESULT_LIMIT",
    "Tool",
    "ToolHost",
    "Toolset",
    "build_context_tools",
    "format_search_hits",
    "make_session_search_tool",
]

SEARCH_RESULT_LIMIT = 10
"""``session_search`` shows at most this many hits."""


class _Hit(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


def format_search_hits(hits: Iterable[_Hit]) -> str | None:
    """The best 10 hits as ``[role] content`` separated by ``---`` lines; ``None`` if none.

    >>> from threadline.types import SearchHit
    >>> format_search_hits([SearchHit("m1", "user", "hi", None, "s", 1.0)])
    '[user] hi'
    """
    shown = list(hits)[:SEARCH_RESULT_LIMIT]
    return "\n---\n".join(f"[{h.role}] {h.content}" for h in shown) if shown else None


def make_session_search_tool(
    search_fn: Callable[[str], Sequence[_Hit]], *, description: str | None = None
) -> Tool:
    """The ``session_search`` tool over past conversations.

    ``search_fn(query)`` returns hits with ``role`` and ``content`` (``SearchHit``); the best
    10 are shown as ``[role] content`` separated by ``---`` lines.

    >>> from threadline.types import SearchHit
    >>> tool = make_session_search_tool(lambda q: [SearchHit("m1", "user", "hi", None, "s", 1.0)])
    >>> tool.execute({"query": "hi"})
    '[user] hi'
    """

    def run(args: dict[str, Any]) -> str:
        return format_search_hits(search_fn(args["query"])) or NO_RESULTS

    schema = object_schema(
        {"query": {"type": "string", "description": "Words or a quoted phrase to find."}},
        ["query"],
    )
    text = description or (
        "Search earlier conversations (every session of this app) for messages matching the "
        "query; returns the best matches with their role."
    )
    return checked_tool("session_search", text, schema, run)
