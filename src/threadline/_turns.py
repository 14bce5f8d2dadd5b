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
    "Counts",
    "as_messages",
    "check_same_ids",
    "context_window",
    "counts_of",
    "fixed_cost",
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
    input, ``fixed_tokens``, share; each message costs ``count([message])``). Oldest history
    goes first, whole runs at a time, then single messages of the oldest run kept; the window
    never starts inside a run (a tool result is never shown without its call). Summaries
    (overlay messages) standing right before the window come in front of it while they fit:
    the model sees what fell out, in short, and the window stays N runs long. Everything before
    the window is ``dropped``.

    >>> h = [{"id": f"m{i}", "role": "user" if i % 2 == 0 else "assistant", "parts": []}
    ...      for i in range(6)]
    >>> [m["id"] for m in context_window(h, runs=2, max_tokens=None, fixed_tokens=0).kept]
    ['m2', 'm3', 'm4', 'm5']
    >>> h[1]["id"] = "compaction_c1"  # a summary right before the window comes along
    >>> [m["id"] for m in context_window(h, runs=2, max_tokens=None, fixed_tokens=0).dropped]
    ['m0']
    """
    size = len(history)
    start = 0 if runs is None else size - len(last_runs(history, runs))
    if max_tokens is not None:
        budget = max_tokens - fixed_tokens
        costs = {i: count([history[i]]) for i in range(start, size)}
        total = sum(costs.values())
        while start < size and total > budget:
            total -= costs[start]
            start += 1
            while start < size and not starts_run(history[start]):
                if is_overlay_id(history[start].get("id")):
                    break
                total -= costs[start]  # never start inside a run
                start += 1
    lead = start
    while lead > 0 and is_overlay_id(history[lead - 1].get("id")):
        lead -= 1
    if lead < start:
        fits = max_tokens is None
        if not fits:
            extra = sum(count([m]) for m in history[lead:start])
            fits = total + extra <= budget
        if fits:
            start = lead
    return ContextWindow(list(history[start:]), list(history[:start]))


class Counts(NamedTuple):
    """How a run counts tokens: ``text(str)`` and ``messages(list)``, from the session's
    ``token_counter`` (``counter(messages=..., system_prompt=..., blocks=...)``) when it has
    one, else the heuristic (``threadline.tokens``).

    >>> counts_of(None).text("Hello world"), counts_of(None).messages([])
    (3, 0)
    """

    text: Callable[[str], int]
    messages: Callable[[Sequence[Message]], int]


def counts_of(counter: Callable[..., int] | None) -> Counts:
    """The :class:`Counts` of a session-level counter (``None``: the heuristic).

    >>> chars = lambda *, messages, system_prompt, blocks: len(system_prompt) + len(messages)
    >>> counts_of(chars).text("abc"), counts_of(chars).messages([{}, {}])
    (3, 2)
    """
    if counter is None:
        return Counts(estimate_tokens, estimate_message_tokens)
    found = counter

    def text(value: str) -> int:
        return int(found(messages=[], system_prompt=value, blocks=[])) if value else 0

    def messages(values: Sequence[Message]) -> int:
        return int(found(messages=list(values), system_prompt="", blocks=[]))

    return Counts(text, messages)


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


def fixed_cost(system: str, user_message: Message | None, counts: Counts | None = None) -> int:
    """Tokens of the system prompt and the new input (both count against the budget).

    >>> fixed_cost("", {"role": "user", "parts": []}), fixed_cost("Hello world", None)
    (4, 3)
    """
    counts = counts or counts_of(None)
    return counts.text(system) + (counts.messages([user_message]) if user_message else 0)


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
