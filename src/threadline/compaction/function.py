"""The default compaction function: plan a middle range, ask a summariser, return the range.

The planning (:func:`plan_compaction`) and the prompt
(:func:`build_summary_prompt`) are pure; only the ``summarize`` call does I/O.

Sync and async: ``create_compact_function`` returns a :class:`CompactFunction` whose plain
call is synchronous; if ``summarize`` turns out to return an awaitable, that call raises
``CompactionError``: await its ``acompact`` method instead, which is async and accepts both
kinds of ``summarize``. ``create_async_compact_function`` returns an
:class:`AsyncCompactFunction`, whose plain call is itself a coroutine.

>>> fn = create_compact_function(lambda prompt: "## Topic\\nWeather", protect_head=1)
>>> msgs = [{"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
...         for i in range(6)]
>>> fn(msgs, None) is None  # everything fits the default 20k-token tail budget
True
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from threadline.errors import CompactionError, InvalidArgumentError
from threadline.messages import (
    compact_json,
    has_output,
    is_overlay_id,
    is_tool_part,
    parts_of,
    text_of,
    tool_name_of,
)
from threadline.tokens import estimate_message_tokens
from threadline.types import CompactContext, CompactResult, Message

Summarize = Callable[[str], "str | Awaitable[str]"]
"""``summarize(prompt) -> str``, or a coroutine function returning ``str``."""

MessageCounter = Callable[[Message], int]
"""Counts the tokens of one message."""

TRANSCRIPT_START = "<<<TRANSCRIPT>>>"
TRANSCRIPT_END = "<<<END OF TRANSCRIPT>>>"
PREVIOUS_SUMMARY_START = "<<<PREVIOUS SUMMARY>>>"
PREVIOUS_SUMMARY_END = "<<<END OF PREVIOUS SUMMARY>>>"
SUMMARY_SECTIONS = ("## Topic", "## Key Points", "## Current State", "## Open Items")
TOOL_CALL_LABEL = "Tool call:"
TOOL_VALUE_CHARS = 500
"""Tool inputs and outputs are cut to this many characters in the transcript."""

_IGNORED_PART_TYPES = frozenset({"step-start"})


# --------------------------------------------------------------------------- tool boundaries


def _call_ids(message: Message) -> tuple[set[str], bool]:
    """Tool-call ids in ``message`` and whether it holds any tool call at all."""
    calls = [p for p in parts_of(message) if is_tool_part(p)]
    openai_calls = message.get("tool_calls")
    if isinstance(openai_calls, list):  # un-normalised Chat Completions shape
        calls += [c for c in openai_calls if isinstance(c, dict)]
    ids = {c.get("toolCallId") or c.get("id") for c in calls}
    return {i for i in ids if isinstance(i, str)}, bool(calls)


def _pending_call(message: Message) -> bool:
    return any(is_tool_part(p) and not has_output(p) for p in parts_of(message))


def is_tool_result(message: Message, previous: Message) -> bool:
    """True if ``message`` only carries tool results answering a call in ``previous``.

    A result is a ``role: "tool"`` message or one whose parts are all tool parts with output.
    Ids are matched by ``toolCallId`` when both sides have one; otherwise a pending call
    (tool part without output) in ``previous`` is enough.

    >>> call = {"role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "c1",
    ...                                          "state": "input-available"}]}
    >>> result = {"role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "c1",
    ...                                            "state": "output-available", "output": 1}]}
    >>> is_tool_result(result, call)
    True
    """
    parts = [p for p in parts_of(message) if p.get("type") not in _IGNORED_PART_TYPES]
    only_results = bool(parts) and all(is_tool_part(p) and has_output(p) for p in parts)
    if message.get("role") != "tool" and not only_results:
        return False
    prev_ids, prev_has_calls = _call_ids(previous)
    if not prev_has_calls:
        return False
    ids = {p.get("toolCallId") for p in parts if is_tool_part(p)}
    ids |= {message.get("toolCallId"), message.get("tool_call_id")}
    own_ids = {i for i in ids if isinstance(i, str)}
    if own_ids and prev_ids:
        return bool(own_ids & prev_ids)
    return message.get("role") == "tool" or _pending_call(previous)


# --------------------------------------------------------------------------- planning


def _check_non_negative(**values: int) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgumentError(f"{name} must be a non-negative int, got {value!r}")


def _default_counter(message: Message) -> int:
    return estimate_message_tokens([message])


def _tail_start(messages: Sequence[Message], start: int, budget: int, count: MessageCounter) -> int:
    """Earliest index of the newest run fitting ``budget`` (the newest message always counts).

    The walk stops at ``start``: a tail reaching into the head means there is nothing to do.
    """
    tail = len(messages) - 1
    total = count(messages[tail])
    for index in range(tail - 1, start - 1, -1):
        total += count(messages[index])
        if total > budget:
            break
        tail = index
    return tail


def _answers_a_call_before(messages: Sequence[Message], index: int) -> bool:
    """True if ``messages[index]`` answers a call made before it: by the message just before,
    or, for parallel calls answered one message each, before the run of results it ends."""
    for previous in range(index - 1, -1, -1):
        if is_tool_result(messages[index], messages[previous]):
            return True
        if not _only_results(messages[previous]):
            return False
    return False


def keep_boundary(messages: Sequence[Message], keep: int) -> int:
    """Where the newest ``keep`` messages start, moved earlier while the message there answers
    a call before it, so that a call and its results stay on one side (``compact_when``).

    >>> call = {"role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "c1",
    ...                                          "state": "input-available"}]}
    >>> result = {"role": "tool", "parts": [{"type": "tool-x", "toolCallId": "c1",
    ...                                      "state": "output-available", "output": 1}]}
    >>> user = {"role": "user", "parts": []}
    >>> keep_boundary([user, user, call, result], 1), keep_boundary([user, user, user], 1)
    (2, 2)
    """
    _check_non_negative(keep=keep)
    cut = max(len(messages) - keep, 0)
    while 0 < cut < len(messages) and _answers_a_call_before(messages, cut):
        cut -= 1
    return cut


def _only_results(message: Message) -> bool:
    parts = [p for p in parts_of(message) if p.get("type") not in _IGNORED_PART_TYPES]
    only = bool(parts) and all(is_tool_part(p) and has_output(p) for p in parts)
    return message.get("role") == "tool" or only


def plan_compaction(
    messages: Sequence[Message],
    *,
    protect_head: int = 3,
    tail_token_budget: int = 20_000,
    min_tail_messages: int = 2,
    count_tokens: MessageCounter | None = None,
) -> tuple[int, int] | None:
    """Return ``(start, end)`` so that ``messages[start:end]`` is the range to summarise.

    Steps 1-4 of the algorithm (README: "Compaction"); ``None`` when there is nothing to compact
    (including a range holding only overlay messages). ``count_tokens`` counts one message
    (default: heuristic).

    >>> msgs = [{"id": str(i), "role": "user", "parts": []} for i in range(10)]
    >>> plan_compaction(msgs, tail_token_budget=8)
    (3, 8)
    """
    _check_non_negative(
        protect_head=protect_head,
        tail_token_budget=tail_token_budget,
        min_tail_messages=min_tail_messages,
    )
    size = len(messages)
    if size <= protect_head + min_tail_messages:
        return None
    start = protect_head
    while 0 < start < size and _answers_a_call_before(messages, start):
        start += 1
    if start >= size:
        return None
    cut = _tail_start(messages, start, tail_token_budget, count_tokens or _default_counter)
    if size - min_tail_messages >= start:
        cut = min(cut, size - min_tail_messages)
    while cut > start and _answers_a_call_before(messages, cut):
        cut -= 1  # keep the call with its results, in the tail
    if cut <= start:
        return None
    if all(is_overlay_id(m.get("id")) for m in messages[start:cut]):
        return None
    return start, cut


# --------------------------------------------------------------------------- prompt


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return compact_json(value)
    except (TypeError, ValueError):  # circular structure: say so rather than print a repr
        return f"<unserialisable {type(value).__name__}>"


def _clip(text: str, limit: int = TOOL_VALUE_CHARS) -> str:
    if len(text) > limit:
        text = f"{text[:limit]}... [truncated {len(text)} chars]"
    return text.replace("\n", "\n    ")  # indent continuation lines under their tool call


def _render_part(part: dict[str, Any]) -> list[str]:
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        return [text] if isinstance(text, str) and text.strip() else []
    if not is_tool_part(part):
        return []  # reasoning, files, sources: not part of what was said
    lines = [f"{TOOL_CALL_LABEL} {tool_name_of(part) or 'unknown'}"]
    if part.get("input") is not None:
        lines.append(f"  input: {_clip(_render_value(part['input']))}")
    if "output" in part:
        lines.append(f"  output: {_clip(_render_value(part['output']))}")
    elif isinstance(part.get("errorText"), str):
        lines.append(f"  error: {_clip(part['errorText'])}")
    else:
        lines.append("  output: (none yet)")
    return lines


def render_transcript(messages: Sequence[Message]) -> str:
    """Render messages as ``[role]`` followed by their text and tool calls, one block each.

    >>> render_transcript([{"role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    '[user]\\nhi'
    """
    blocks = []
    for message in messages:
        lines: list[str] = []
        for part in parts_of(message):
            lines.extend(_render_part(part))
        if not lines and isinstance(message.get("content"), str):
            lines.append(text_of(message))
        blocks.append(f"[{message.get('role', 'unknown')}]\n" + ("\n".join(lines) or "(no text)"))
    return "\n\n".join(blocks)


def build_summary_prompt(
    middle: Sequence[Message], previous_summary: str | None, token_target: int
) -> str:
    """Build the summarisation prompt for ``middle`` (optionally updating a previous summary).

    The transcript sits between ``TRANSCRIPT_START``/``TRANSCRIPT_END`` lines and a previous
    summary between ``PREVIOUS_SUMMARY_START``/``PREVIOUS_SUMMARY_END`` lines, so offline
    summarisers (``threadline.summarizers.extractive``) can parse it back.

    >>> "## Open Items" in build_summary_prompt([], None, 100)
    True
    """
    sections = "\n".join(SUMMARY_SECTIONS)
    intro = [
        "You compact the older part of a conversation between a user and an AI assistant so "
        "that it fits in the assistant's context window. The summary replaces these messages; "
        "the assistant will rely on it to continue the conversation.",
    ]
    if previous_summary:
        intro.append(
            "An earlier summary of the conversation comes first, then the turns that followed "
            "it. Update that summary: keep everything that is still relevant, correct what the "
            "new turns changed, and add what they contain."
        )
        intro.append(f"{PREVIOUS_SUMMARY_START}\n{previous_summary}\n{PREVIOUS_SUMMARY_END}")
    intro.append(f"{TRANSCRIPT_START}\n{render_transcript(middle)}\n{TRANSCRIPT_END}")
    intro.append(
        "Write a factual summary in Markdown with exactly these four sections, in this order:\n"
        f"{sections}\n"
        "Key Points: facts, decisions, preferences, names, numbers and tool results that matter "
        "later. Current State: where the conversation stands now. Open Items: unanswered "
        'questions and unfinished tasks (write "None." if there are none).\n'
        f"Aim for about {token_target} tokens.\n"
        "Use only what is stated above. Do not invent names, numbers, decisions or outcomes; "
        "if something is uncertain, say so. Reply with the summary only."
    )
    return "\n\n".join(intro)


def previous_summary_of(messages: Sequence[Message]) -> str | None:
    """Text of the first overlay message (id ``compaction_...``) in ``messages``, if any.

    >>> previous_summary_of([{"id": "compaction_c1", "parts": [{"type": "text", "text": "S"}]}])
    'S'
    """
    for message in messages:
        if is_overlay_id(message.get("id")):
            return text_of(message)
    return None


# --------------------------------------------------------------------------- the function


def _message_counter(
    own: Callable[[list[Message]], int] | None, context: CompactContext | None
) -> MessageCounter:
    """Own per-message counter, else the session counter, else the heuristic (formats §3)."""
    if own is not None:
        return lambda message: own([message])
    session_counter = context.token_counter if context is not None else None
    if session_counter is not None:
        return lambda message: session_counter(messages=[message], system_prompt="", blocks=[])
    return _default_counter


@dataclass(frozen=True)
class _Job:
    """A planned compaction waiting for its summary."""

    prompt: str
    from_message_id: str
    to_message_id: str

    def finish(self, summary: object) -> CompactResult | None:
        if summary is None:
            return None
        if not isinstance(summary, str):
            raise CompactionError(f"summarize must return a str, got {type(summary).__name__}")
        if not summary.strip():
            return None
        return CompactResult(self.from_message_id, self.to_message_id, summary.strip())


class CompactFunction:
    """Callable returned by :func:`create_compact_function`; call as ``fn(messages, context)``.

    >>> fn = CompactFunction(lambda prompt: "S", protect_head=0, tail_token_budget=0,
    ...                      min_tail_messages=1)
    >>> fn([{"id": "a", "role": "user", "parts": []}, {"id": "b", "role": "user", "parts": []}])
    CompactResult(from_message_id='a', to_message_id='a', summary='S')
    """

    def __init__(
        self,
        summarize: Summarize,
        *,
        protect_head: int = 3,
        tail_token_budget: int = 20_000,
        min_tail_messages: int = 2,
        token_counter: Callable[[list[Message]], int] | None = None,
    ) -> None:
        if not callable(summarize):
            raise InvalidArgumentError("summarize must be callable: summarize(prompt) -> str")
        _check_non_negative(
            protect_head=protect_head,
            tail_token_budget=tail_token_budget,
            min_tail_messages=min_tail_messages,
        )
        self.summarize = summarize
        self.protect_head = protect_head
        self.tail_token_budget = tail_token_budget
        self.min_tail_messages = min_tail_messages
        self.token_counter = token_counter

    def prepare(
        self, messages: Sequence[Message], context: CompactContext | None = None
    ) -> _Job | None:
        """Plan the range and build the prompt (steps 1-6); ``None`` if nothing to compact.

        >>> fn = CompactFunction(lambda prompt: "S", protect_head=0, tail_token_budget=0,
        ...                      min_tail_messages=1)
        >>> job = fn.prepare([{"id": "a", "role": "user", "parts": []},
        ...                   {"id": "b", "role": "user", "parts": []}])
        >>> job.from_message_id, job.to_message_id, TRANSCRIPT_START in job.prompt
        ('a', 'a', True)
        >>> fn.prepare([]) is None
        True
        """
        if context is not None and context.summarize_all:  # the caller chose the range
            whole = any(not is_overlay_id(m.get("id")) for m in messages)
            planned: tuple[int, int] | None = (0, len(messages)) if whole else None
        else:
            planned = plan_compaction(
                messages,
                protect_head=self.protect_head,
                tail_token_budget=self.tail_token_budget,
                min_tail_messages=self.min_tail_messages,
                count_tokens=_message_counter(self.token_counter, context),
            )
        if planned is None:
            return None
        middle = [m for m in messages[planned[0] : planned[1]] if not is_overlay_id(m.get("id"))]
        target = max(100, math.floor(0.2 * estimate_message_tokens(middle)))
        prompt = build_summary_prompt(middle, previous_summary_of(messages), target)
        return _Job(prompt, str(middle[0]["id"]), str(middle[-1]["id"]))

    def __call__(
        self, messages: Sequence[Message], context: CompactContext | None = None
    ) -> CompactResult | None:
        """Compact synchronously; raises ``CompactionError`` if ``summarize`` is async."""
        job = self.prepare(messages, context)
        if job is None:
            return None
        summary = self.summarize(job.prompt)
        if inspect.isawaitable(summary):
            if inspect.iscoroutine(summary):
                summary.close()  # never awaited on purpose; avoid the RuntimeWarning
            raise CompactionError(
                "summarize is asynchronous: await CompactFunction.acompact(...) instead, "
                "or build the function with create_async_compact_function"
            )
        return job.finish(summary)

    async def acompact(
        self, messages: Sequence[Message], context: CompactContext | None = None
    ) -> CompactResult | None:
        """Compact, awaiting ``summarize`` if it returns an awaitable (sync ones work too).

        >>> import asyncio
        >>> async def summarize(prompt): return "S"
        >>> fn = CompactFunction(summarize, protect_head=0, tail_token_budget=0,
        ...                      min_tail_messages=1)
        >>> msgs = [{"id": i, "role": "user", "parts": []} for i in "ab"]
        >>> asyncio.run(fn.acompact(msgs))
        CompactResult(from_message_id='a', to_message_id='a', summary='S')
        """
        job = self.prepare(messages, context)
        if job is None:
            return None
        summary: Any = self.summarize(job.prompt)
        if inspect.isawaitable(summary):
            summary = await summary
        return job.finish(summary)


class AsyncCompactFunction(CompactFunction):
    """Like :class:`CompactFunction` but calling it returns a coroutine.

    >>> import asyncio
    >>> async def summarize(prompt): return "S"
    >>> fn = AsyncCompactFunction(summarize, protect_head=0, tail_token_budget=0,
    ...                           min_tail_messages=1)
    >>> asyncio.run(fn([{"id": "a", "role": "user", "parts": []},
    ...                 {"id": "b", "role": "user", "parts": []}])).summary
    'S'
    """

    async def __call__(  # type: ignore[override]
        self, messages: Sequence[Message], context: CompactContext | None = None
    ) -> CompactResult | None:
        return await self.acompact(messages, context)


def create_compact_function(
    summarize: Summarize,
    *,
    protect_head: int = 3,
    tail_token_budget: int = 20_000,
    min_tail_messages: int = 2,
    token_counter: Callable[[list[Message]], int] | None = None,
) -> CompactFunction:
    """Return the default compaction function (README: "Compaction") around ``summarize(prompt)``.

    ``token_counter(messages) -> int`` counts the tail per message (called with ``[m]``);
    without it the session's counter from ``CompactContext`` is used, else the heuristic.

    >>> fn = create_compact_function(lambda prompt: "## Topic\\n...")
    >>> fn([], None) is None
    True
    """
    return CompactFunction(
        summarize,
        protect_head=protect_head,
        tail_token_budget=tail_token_budget,
        min_tail_messages=min_tail_messages,
        token_counter=token_counter,
    )


def create_async_compact_function(
    summarize: Summarize,
    *,
    protect_head: int = 3,
    tail_token_budget: int = 20_000,
    min_tail_messages: int = 2,
    token_counter: Callable[[list[Message]], int] | None = None,
) -> AsyncCompactFunction:
    """Like :func:`create_compact_function`, but ``await fn(messages, context)``.

    >>> async def summarize(prompt): return "## Topic\\n..."
    >>> fn = create_async_compact_function(summarize)
    """
    return AsyncCompactFunction(
        summarize,
        protect_head=protect_head,
        tail_token_budget=tail_token_budget,
        min_tail_messages=min_tail_messages,
        token_counter=token_counter,
    )


__all__ = [
    "PREVIOUS_SUMMARY_END",
    "PREVIOUS_SUMMARY_START",
    "SUMMARY_SECTIONS",
    "TOOL_CALL_LABEL",
    "TRANSCRIPT_END",
    "TRANSCRIPT_START",
    "AsyncCompactFunction",
    "CompactFunction",
    "Summarize",
    "build_summary_prompt",
    "create_async_compact_function",
    "create_compact_function",
    "is_tool_result",
    "keep_boundary",
    "plan_compaction",
    "previous_summary_of",
    "render_transcript",
]
