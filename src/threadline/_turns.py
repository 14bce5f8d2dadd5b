"""The pure half of an agent turn (``threadline.Runner``): the context window, what the
model's output asks for. No I/O here; the sync and async runners drive it. Runs are counted
as ``get_history(runs=N)`` counts them (``threadline._windows``).

>>> history = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
...            {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hey"}]},
...            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again"}]}]
>>> [m["id"] for m in context_window(history, runs=1, max_tokens=None, fixed_tokens=0).kept]
['u2']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from threadline._windows import last_runs, starts_run
from threadline.errors import InvalidMessageError
from threadline.formats._common import plain
from threadline.messages import is_overlay_id, normalize_messages
from threadline.tokens import estimate_message_tokens, estimate_tokens
from threadline.types import Message

__all__ = [
    "ContextWindow",
    "as_messages",
    "check_same_ids",
    "context_window",
    "pending_calls",
]


class ContextWindow(NamedTuple):
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
) -> ContextWindow:
    """The newest part of ``history`` within ``runs`` whole runs (counted as
    ``get_history(runs=N)`` counts them) and ``max_tokens`` (which the system prompt and the new
    input, ``fixed_tokens``, share). Oldest history goes first, whole runs at a time, then
    single messages of the oldest run kept; the window never starts inside a run (a tool result
    is never shown without its call). Summaries (overlay messages) standing right before the
    window come in front of it while they fit: the model sees what fell out, in short, and the
    window stays N runs long. Everything before the window is ``dropped``.

    >>> h = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "parts": []}
    ...      for i in range(6)]
    >>> [m["id"] for m in context_window(h, runs=2, max_tokens=None, fixed_tokens=0).kept]
    ['m2', 'm3', 'm4', 'm5']
    >>> h[1]["id"] = "compaction_c1"  # a summary right before the window comes along
    >>> [m["id"] for m in context_window(h, runs=2, max_tokens=None, fixed_tokens=0).dropped]
    ['m0']
    """
    kept = list(history) if runs is None else last_runs(history, runs)
    if max_tokens is not None:
        budget = max_tokens - fixed_tokens
        while kept and count(kept) > budget:
            kept = kept[1:]
            while kept and not starts_run(kept[0]) and not is_overlay_id(kept[0].get("id")):
                kept = kept[1:]  # never start inside a run
    start = len(history) - len(kept)
    lead = start
    while lead > 0 and is_overlay_id(history[lead - 1].get("id")):
        lead -= 1
    if lead < start:
        with_summary = [*history[lead:start], *kept]
        if max_tokens is None or count(with_summary) <= max_tokens - fixed_tokens:
            kept, start = with_summary, lead
    return ContextWindow(kept, list(history[:start]))


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


def _content(message: Message) -> tuple[Any, Any, Any]:
    """What "the same message" compares: role, parts, and metadata without the run's
    ``invocationId`` (and ``createdAt``, which sits beside them)."""
    metadata = dict(message.get("metadata") or {})
    metadata.pop("invocationId", None)
    metadata.pop("createdAt", None)
    return message.get("role"), message.get("parts"), metadata


def check_same_ids(sent: Sequence[Message], stored: Sequence[Message]) -> None:
    """Refuse a run's message whose id was stored before, or comes earlier in the run, with
    other content: ``stored`` is what the append returned for ``sent`` (an id stored before
    comes back as it was first stored, with another run's ``invocationId`` or none).

    >>> a = {"id": "m1", "role": "assistant", "parts": [], "metadata": {"invocationId": "r2"}}
    >>> check_same_ids([a], [{**a, "metadata": {"invocationId": "r1"}}])  # same content
    >>> check_same_ids([a], [{**a, "role": "user", "metadata": {}}])
    Traceback (most recent call last):
    threadline.errors.InvalidMessageError: message id 'm1' is already stored with other content
    """
    earlier: dict[str, tuple[Any, Any, Any]] = {}  # the run's own messages by id
    for mine, theirs in zip(sent, stored, strict=True):
        content = _content(mine)
        ours = (mine.get("metadata") or {}).get("invocationId")
        if (theirs.get("metadata") or {}).get("invocationId") == ours:
            theirs_content = earlier.setdefault(mine["id"], content)  # stored now, by this run
        else:
            theirs_content = _content(theirs)
        if content != theirs_content:
            raise InvalidMessageError(
                f"message id {mine['id']!r} is already stored with other content"
            )
