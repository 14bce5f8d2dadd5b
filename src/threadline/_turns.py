"""The pure half of an agent turn (``threadline.Runner``): runs, the context window, what the
model's output asks for. No I/O here; the sync and async runners drive it.

>>> history = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
...            {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hey"}]},
...            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]}]
>>> [[m["id"] for m in run] for run in split_runs(history)]
[['u1', 'a1'], ['u2']]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from threadline.errors import InvalidMessageError
from threadline.formats._common import plain
from threadline.messages import OVERLAY_ID_PREFIX, normalize_messages
from threadline.tokens import estimate_message_tokens, estimate_tokens
from threadline.types import Message

__all__ = [
    "Window",
    "as_messages",
    "context_window",
    "pending_calls",
    "split_runs",
]


def split_runs(history: Sequence[Message]) -> list[list[Message]]:
    """Group a history into runs: a run starts at a user message and holds everything up to
    the next one (messages before the first user message form a run of their own).

    >>> split_runs([])
    []
    """
    runs: list[list[Message]] = []
    for message in history:
        if message.get("role") == "user" or not runs:
            runs.append([])
        runs[-1].append(message)
    return runs


def _is_summary(message: Message) -> bool:
    return str(message.get("id", "")).startswith(OVERLAY_ID_PREFIX)


class Window(NamedTuple):
    """The history a model call sees, and what fell out of it (oldest first)."""

    kept: list[Message]
    dropped: list[Message]


def context_window(
    history: Sequence[Message],
    *,
    runs: int | None,
    max_tokens: int | None,
    fixed_tokens: int,
    count: Callable[[Sequence[Message]], int] = estimate_message_tokens,
) -> Window:
    """The newest part of ``history`` within ``runs`` whole runs and ``max_tokens`` (which the
    system prompt and the new input, ``fixed_tokens``, share). Oldest history goes first, whole
    runs at a time, then single messages of the oldest run kept; the window never starts
    inside a run (a tool result is never shown without its call). The newest summary (an
    overlay message) before the window is kept in front of it, with what follows it, while
    that fits.

    >>> h = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "parts": []}
    ...      for i in range(6)]
    >>> [m["id"] for m in context_window(h, runs=2, max_tokens=None, fixed_tokens=0).kept]
    ['m2', 'm3', 'm4', 'm5']
    """
    groups = split_runs(history)
    if runs is not None:
        groups = groups[max(0, len(groups) - runs) :] if runs > 0 else []
    kept = [m for group in groups for m in group]
    if max_tokens is not None:
        budget = max_tokens - fixed_tokens
        while kept and count(kept) > budget:
            kept = kept[1:]
            while kept and kept[0].get("role") != "user" and not _is_summary(kept[0]):
                kept = kept[1:]  # never start inside a run
    start = len(history) - len(kept)
    # The newest summary (overlay message) before the window comes along, with whatever lies
    # between it and the window, while that fits: the model then sees what fell out, in short.
    summary_at = next((i for i in range(start - 1, -1, -1) if _is_summary(history[i])), None)
    if summary_at is not None:
        with_summary = [*history[summary_at:start], *kept]
        if max_tokens is None or count(with_summary) <= max_tokens - fixed_tokens:
            kept, start = with_summary, summary_at
    return Window(kept, list(history[:start]))


def as_messages(output: Any) -> list[Message]:
    """What a model function returned, as normalised messages: a string is one assistant
    text message; a message (UIMessage or OpenAI Chat, a dict or an SDK object) or a list of
    them is normalised.

    >>> as_messages("Hello!")[0]["parts"]
    [{'type': 'text', 'text': 'Hello!'}]
    """
    output = plain(output)  # an SDK object (e.g. response.choices[0].message) as a dict
    if isinstance(output, str):
        output = [{"role": "assistant", "content": output}]
    elif isinstance(output, dict):
        output = [output]
    if not isinstance(output, list) or not output:
        raise InvalidMessageError(
            "a model function returns a string, a message or a non-empty list of messages"
        )
    return normalize_messages(output)


def pending_calls(message: Message, tool_names: Sequence[str]) -> list[dict[str, Any]]:
    """The tool parts of ``message`` that call one of ``tool_names`` and await their output.

    >>> part = {"type": "tool-set_context", "toolCallId": "c1", "state": "input-available",
    ...         "input": {}}
    >>> len(pending_calls({"role": "assistant", "parts": [part]}, ["set_context"]))
    1
    """
    found: list[dict[str, Any]] = []
    for part in message.get("parts", []):
        if not isinstance(part, dict) or part.get("state") != "input-available":
            continue
        kind = str(part.get("type", ""))
        name = part.get("toolName") if kind == "dynamic-tool" else kind.removeprefix("tool-")
        if (kind.startswith("tool-") or kind == "dynamic-tool") and name in tool_names:
            found.append(part)
    return found


def fixed_cost(system: str, user_message: Message) -> int:
    """Tokens of the system prompt and the new input (both count against the budget).

    >>> fixed_cost("", {"role": "user", "parts": []})
    4
    """
    return estimate_tokens(system) + estimate_message_tokens([user_message])
