"""Ready-made ``summarize(prompt) -> str`` callables for ``create_compact_function``.

``openai`` and ``anthropic`` wrap an SDK client that you create (the SDKs are never imported
here); with an async client (``AsyncOpenAI``, ``AsyncAnthropic``) they return an async callable
(for ``create_async_compact_function``). ``extractive`` needs no LLM at all: it reads the
transcript back out of the prompt built by ``build_summary_prompt`` and picks sentences
deterministically.

>>> summarize = extractive()
>>> from threadline.compaction.function import build_summary_prompt
>>> msgs = [{"role": "user", "parts": [{"type": "text", "text": "Plan a trip to Oslo."}]}]
>>> summarize(build_summary_prompt(msgs, None, 100)).splitlines()[:4]
['## Topic', 'Covers 1 message (1 user, 0 assistant).', 'User request:', '1. Plan a trip to Oslo.']
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from threadline.compaction.function import (
    PREVIOUS_SUMMARY_END,
    PREVIOUS_SUMMARY_START,
    TOOL_CALL_LABEL,
    TRANSCRIPT_END,
    TRANSCRIPT_START,
    Summarize,
)
from threadline.errors import InvalidArgumentError
from threadline.tokens import estimate_tokens

# --------------------------------------------------------------------------- SDK clients


def _is_async(method: Any, client: Any) -> bool:
    """SDK methods are wrapped by decorators, so look through ``__wrapped__`` and the class."""
    if inspect.iscoroutinefunction(method) or inspect.iscoroutinefunction(inspect.unwrap(method)):
        return True
    return type(client).__name__.startswith("Async")


def _field(obj: Any, name: str) -> Any:
    """Attribute access that also accepts plain dict responses."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _openai_text(response: Any) -> str:
    choices = _field(response, "choices") or []
    if not choices:
        return ""
    content = _field(_field(choices[0], "message"), "content")
    return content if isinstance(content, str) else ""


def openai(
    client: Any, model: str, *, max_tokens: int | None = None, system: str | None = None
) -> Summarize:
    """Summarise with an OpenAI (or compatible) Chat Completions client.

    Sends ``client.chat.completions.create(model=..., messages=[...])`` (plus ``max_tokens``
    when given; reasoning models that reject it need ``max_tokens=None``) and returns
    ``choices[0].message.content``. An ``AsyncOpenAI`` client gives an async callable.

    >>> from openai import OpenAI  # doctest: +SKIP
    >>> summarize = openai(OpenAI(), "gpt-4o-mini")  # doctest: +SKIP
    """
    create = client.chat.completions.create

    def request(prompt: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        return kwargs

    if _is_async(create, client):

        async def summarize_async(prompt: str) -> str:
            return _openai_text(await create(**request(prompt)))

        return summarize_async

    def summarize(prompt: str) -> str:
        return _openai_text(create(**request(prompt)))

    return summarize


def _anthropic_text(response: Any) -> str:
    blocks = _field(response, "content") or []
    texts = [_field(b, "text") for b in blocks if _field(b, "type") == "text"]
    return "".join(t for t in texts if isinstance(t, str))


def anthropic(
    client: Any, model: str, *, max_tokens: int = 1024, system: str | None = None
) -> Summarize:
    """Summarise with an Anthropic Messages API client; text blocks of the reply are joined.

    Sends ``client.messages.create(model=..., max_tokens=..., messages=[{"role": "user",
    "content": prompt}])``. An ``AsyncAnthropic`` client gives an async callable.

    >>> from anthropic import Anthropic  # doctest: +SKIP
    >>> summarize = anthropic(Anthropic(), "claude-haiku-4-5")  # doctest: +SKIP
    """
    create = client.messages.create

    def request(prompt: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}],
        }
        if system:
            kwargs["system"] = system
        return kwargs

    if _is_async(create, client):

        async def summarize_async(prompt: str) -> str:
            return _anthropic_text(await create(**request(prompt)))

        return summarize_async

    def summarize(prompt: str) -> str:
        return _anthropic_text(create(**request(prompt)))

    return summarize


# --------------------------------------------------------------------------- extractive

_ROLE_LINE = re.compile(r"^\[([A-Za-z0-9_.-]+)\]$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_TARGET = re.compile(r"about (\d+) tokens")
_DECISION = re.compile(
    r"\b(decid\w*|agree\w*|prefer\w*|chose|choose|confirm\w*|must|should|need\w*|plan\w*|"
    r"will|always|never|remember|important|deadline|budget)\b",
    re.IGNORECASE,
)
_TODO = re.compile(
    r"\b(todo|to-do|next step|follow[- ]up|still need|pending|not yet|remind|later)\b",
    re.IGNORECASE,
)
# The Topic section of an extractive summary, read back when the next compaction extends it.
_COVERS = re.compile(r"^Covers (an earlier summary, then )?(\d+) messages? \(([^)]*)\)\.$")
_ROLE_COUNT = re.compile(r"(\d+) (user|assistant|other)\b")
_REQUEST = re.compile(r"^(\d+)\. (.+)$")
_EARLIER_TOPIC = "Earlier summary's topic: "
_LAST = re.compile(r"^Last (user|assistant) message(?: in this range)?: (.+)$")
_COUNTED = ("user", "assistant", "other")
_POINT_CHARS = 200
_REQUEST_CHARS = 160
_NO_TEXT = "(no text)"


@dataclass
class _Turn:
    role: str
    lines: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


@dataclass
class _Coverage:
    """What a summary covers: message counts by role and the user requests, numbered in order
    (``shown`` may skip numbers: long ranges keep the first and the latest requests)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTED, 0))
    shown: list[tuple[int, str]] = field(default_factory=list)
    total: int = 0
    earlier_unknown: bool = False  # extends a summary that does not say what it covers
    earlier_topic: str | None = None  # that summary's topic, kept as it was given
    last: dict[str, str] = field(default_factory=dict)  # role → its last message in the range


def _between(text: str, start: str, end: str, *, from_index: int = 0, last_end: bool) -> str | None:
    begin = text.find(start, from_index)
    if begin < 0:
        return None
    stop = text.rfind(end) if last_end else text.find(end, begin)
    if stop < begin:
        return None
    return text[begin + len(start) : stop].strip("\n")


def _parse_turns(transcript: str) -> list[_Turn]:
    turns: list[_Turn] = []
    for line in transcript.splitlines():
        role = _ROLE_LINE.match(line.strip())
        if role:
            turns.append(_Turn(role.group(1)))
            continue
        if not turns:
            turns.append(_Turn("unknown"))
        if line.startswith(TOOL_CALL_LABEL):
            turns[-1].tools.append(line[len(TOOL_CALL_LABEL) :].strip())
            continue
        is_tool_value = line.startswith("  ") and bool(turns[-1].tools)  # input/output lines
        if not is_tool_value and line.strip() and line.strip() != _NO_TEXT:
            turns[-1].lines.append(line.strip())
    return turns


def _clip(text: str, limit: int = _POINT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("#>*-• ").strip()
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _score(sentence: str) -> float:
    words = sentence.split()
    capitals = sum(1 for w in words[1:] if w[:1].isupper())
    score = min(len(words), 20) / 10 + min(capitals, 3)
    score += 2 if any(ch.isdigit() for ch in sentence) else 0
    score += 2 if _DECISION.search(sentence) else 0
    return score


def _summary_sections(summary: str) -> dict[str, list[str]]:
    """Bullet or plain lines of each ``## Section`` of a previous summary."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in summary.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip().lower(), [])
        elif current is not None and line.strip():
            item = line.strip().lstrip("-*• ").strip()
            if item and item.lower() != "none.":
                current.append(item)
    return sections


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _previous_coverage(old: dict[str, list[str]]) -> _Coverage:
    """What the summary being extended covered; ``earlier_unknown`` when it does not say
    (a summary written by a model, or an older extractive one)."""
    coverage = _Coverage()
    topic = old.get("topic", [])
    covers = _COVERS.match(topic[0]) if topic else None
    if covers is None:
        coverage.earlier_unknown = True
        coverage.earlier_topic = _clip(topic[0], _REQUEST_CHARS) if topic else None
    else:
        coverage.earlier_unknown = covers.group(1) is not None
        for count, role in _ROLE_COUNT.findall(covers.group(3)):
            coverage.counts[role] += int(count)
        for line in topic[1:]:
            if line.startswith(_EARLIER_TOPIC):
                coverage.earlier_topic = line[len(_EARLIER_TOPIC) :]
            request = _REQUEST.match(line)
            if request:
                coverage.shown.append((int(request.group(1)), request.group(2)))
        coverage.total = max((number for number, _ in coverage.shown), default=0)
    for line in old.get("current state", []):
        last = _LAST.match(line)
        if last:
            coverage.last[last.group(1)] = last.group(2)
    return coverage


def _no_text(turn: _Turn) -> str:
    return f"(no text; tool call {turn.tools[-1]})" if turn.tools else _NO_TEXT


def _cover(previous: _Coverage, turns: list[_Turn], max_points: int) -> _Coverage:
    """``previous`` extended by ``turns``; keeps the first and the latest requests."""
    coverage = _Coverage(dict(previous.counts), list(previous.shown), previous.total)
    coverage.earlier_unknown = previous.earlier_unknown
    coverage.earlier_topic = previous.earlier_topic
    coverage.last = dict(previous.last)
    for turn in turns:
        coverage.counts[turn.role if turn.role in ("user", "assistant") else "other"] += 1
        if turn.role in ("user", "assistant"):
            coverage.last[turn.role] = _clip(turn.text) if turn.text else _no_text(turn)
        if turn.role == "user" and turn.text:
            coverage.total += 1
            coverage.shown.append((coverage.total, _clip(turn.text, _REQUEST_CHARS)))
    first, latest = max(1, max_points // 2), max_points
    coverage.shown = [
        (number, text)
        for number, text in coverage.shown
        if number <= first or number > coverage.total - latest
    ]
    return coverage


def _topic(coverage: _Coverage) -> str:
    """The Topic section: how many messages the range holds and its user requests in order —
    never one request standing for a range that has several."""
    counts = coverage.counts
    size = sum(counts.values())
    roles = [f"{counts['user']} user", f"{counts['assistant']} assistant"]
    roles += [f"{counts['other']} other"] if counts["other"] else []
    earlier = "an earlier summary, then " if coverage.earlier_unknown else ""
    lines = [f"Covers {earlier}{size} message{'' if size == 1 else 's'} ({', '.join(roles)})."]
    if coverage.earlier_topic:
        lines.append(f"{_EARLIER_TOPIC}{coverage.earlier_topic}")
    if not coverage.total:
        lines.append("No user request with text in this range.")
        return "\n".join(lines)
    after = " after it" if coverage.earlier_unknown else ""
    lines.append(
        f"User request{after}:" if coverage.total == 1 else f"User requests{after}, in order:"
    )
    seen = 0
    for number, text in coverage.shown:
        if number > seen + 1:
            lines.append(f"… {number - seen - 1} more …")
        lines.append(f"{number}. {text}")
        seen = number
    return "\n".join(lines)


def _key_points(
    turns: list[_Turn], previous: list[str], max_points: int, requests: list[str]
) -> list[str]:
    candidates: list[str] = []
    for turn in turns:
        candidates += [f"Used tool {name}." for name in turn.tools]
        if turn.role in ("user", "assistant"):
            candidates += [s for s in _sentences(turn.text) if len(s.split()) >= 4]
    # Questions and TODOs belong to Open Items; what a listed request says is in Topic already.
    stems = [request.removesuffix("…") for request in requests]
    candidates = [
        c
        for c in _dedupe(candidates)
        if not c.endswith("?")
        and not _TODO.search(c)
        and not any(_clip(c) in stem for stem in stems)
    ]
    ranked = sorted(range(len(candidates)), key=lambda i: (-_score(candidates[i]), i))
    fresh = [_clip(candidates[i]) for i in sorted(ranked[:max_points])]
    old_room = max(max_points - len(fresh), min(len(previous), max_points // 2))
    kept_old = previous[len(previous) - old_room :] if old_room else []
    return _dedupe(kept_old + fresh[: max_points - len(kept_old)])


def _current_state(turns: list[_Turn], coverage: _Coverage) -> list[str]:
    """The last user and assistant messages of the covered range (which ends before the
    messages kept after the summary: "in this range", not of the conversation)."""
    state = [
        f"Last {role} message in this range: {coverage.last[role]}"
        for role in ("user", "assistant")
        if role in coverage.last
    ]
    if turns and turns[-1].tools:
        state.append(f"Last tool used: {turns[-1].tools[-1]}.")
    return state


def _open_items(turns: list[_Turn], previous: list[str], max_points: int) -> list[str]:
    last_assistant = max((i for i, t in enumerate(turns) if t.role == "assistant"), default=-1)
    # An earlier open question counts as answered once the assistant has spoken after it.
    items = [item for item in previous if last_assistant < 0 or not item.endswith("?")]
    for index, turn in enumerate(turns):
        for sentence in _sentences(turn.text):
            unanswered = turn.role == "user" and index > last_assistant and sentence.endswith("?")
            if unanswered or _TODO.search(sentence):
                items.append(_clip(sentence))
    return _dedupe(items)[-max_points:]


def _render(topic: str, points: list[str], state: list[str], items: list[str]) -> str:
    def bullets(lines: list[str]) -> str:
        return "\n".join(f"- {line}" for line in lines) if lines else "- None."

    return (
        f"## Topic\n{topic}\n\n## Key Points\n{bullets(points)}\n\n"
        f"## Current State\n{bullets(state)}\n\n## Open Items\n{bullets(items)}"
    )


def _extract(prompt: str, max_points: int) -> str:
    previous = _between(prompt, PREVIOUS_SUMMARY_START, PREVIOUS_SUMMARY_END, last_end=False)
    after = prompt.find(PREVIOUS_SUMMARY_END) + len(PREVIOUS_SUMMARY_END) if previous else 0
    transcript = _between(prompt, TRANSCRIPT_START, TRANSCRIPT_END, from_index=after, last_end=True)
    turns = _parse_turns(transcript if transcript is not None else prompt)
    old = _summary_sections(previous or "")
    earlier = _previous_coverage(old) if previous else _Coverage()
    coverage = _cover(earlier, turns, max_points)
    topic = _topic(coverage)
    requests = [text for _, text in coverage.shown]
    points = _key_points(turns, old.get("key points", []), max_points, requests)
    items = _open_items(turns, old.get("open items", []), max_points)
    state = _current_state(turns, coverage)
    summary = _render(topic, points, state, items)
    target = _TARGET.search(prompt[prompt.rfind(TRANSCRIPT_END) :] if transcript else "")
    while target and len(points) > 1 and estimate_tokens(summary) > 2 * int(target.group(1)):
        points = points[:-1]  # stay near the requested size: drop the latest-ranked points
        summary = _render(topic, points, state, items)
    return summary


def extractive(*, max_points: int = 8) -> Callable[[str], str]:
    """An offline, deterministic summariser for prompts from ``build_summary_prompt``.

    Topic: what the range covers — its number of messages by role and its user requests
    in order (numbered; a long range keeps the first ``max_points // 2`` and the latest
    ``max_points``, with ``… N more …`` between), never one request standing for several.
    Key Points: the most salient sentences (numbers, names, decisions) plus tools used,
    merged with the previous summary's points. Current State: the last user and assistant
    messages *of the range* (later messages stay in history after the summary). Open Items:
    unanswered user questions and TODO-like sentences. When the prompt extends a previous
    extractive summary, counts, numbering and last messages continue from it. Any other
    text is summarised as one transcript.

    Limitation: the transcript is read back by its ``[role]`` lines, so a message whose text
    holds such a line alone is read as two messages.

    >>> prompt = "[user]\\nHotels?\\n\\n[assistant]\\nTry Alfama.\\n\\n[user]\\nBeaches?"
    >>> summary = extractive()(prompt)
    >>> print(summary.split("\\n\\n## Key")[0])
    ## Topic
    Covers 3 messages (2 user, 1 assistant).
    User requests, in order:
    1. Hotels?
    2. Beaches?
    >>> summary.splitlines()[-1]
    '- Beaches?'
    """
    if max_points < 1:
        raise ValueError("max_points must be at least 1")

    def summarize(prompt: str) -> str:
        return _extract(prompt, max_points)

    return summarize


AsyncSummarize = Callable[[str], Awaitable[str]]


class NamedSummarizer:
    """A summariser a profile can name (:func:`named`): callable like any ``summarize``, and
    carrying the ``spec`` it was built from, so ``manager.save_profile()`` can store it.

    >>> named({"type": "extractive"}).spec
    {'type': 'extractive'}
    """

    def __init__(self, spec: dict[str, Any], summarize: Callable[[str], str]) -> None:
        self.spec = spec
        self._summarize = summarize

    def __call__(self, prompt: str) -> str:
        return self._summarize(prompt)

    def __repr__(self) -> str:
        return f"NamedSummarizer({self.spec!r})"


def named(spec: dict[str, Any]) -> NamedSummarizer:
    """The summariser a profile names: ``{"type": "extractive"}`` (offline, :func:`extractive`)
    or ``{"type": "openai", "base_url", "model", "api_key_env"}`` (any OpenAI-compatible
    chat endpoint, called with the standard library; the key is read from the environment
    variable at each call). ``InvalidArgumentError`` names what is wrong with ``spec``.

    >>> summarize = named({"type": "extractive"})
    >>> summarize("[user]\\nBook a hotel in Oslo.").splitlines()[0]
    '## Topic'
    >>> named({"type": "openai", "model": "m"})
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: summarizer.base_url must be a non-empty string, got None
    """
    from threadline._profile_check import check_spec

    if not isinstance(spec, dict) or spec.get("type") == "code":
        raise InvalidArgumentError(f"a named summarizer is extractive or openai, got {spec!r}")
    checked = check_spec(spec, "summarizer")
    if checked["type"] == "extractive":
        return NamedSummarizer(checked, extractive())
    # The HTTP client is imported at the first call: building a manager from a profile that
    # names an endpoint costs nothing until a compaction runs.
    endpoint = checked

    def call_endpoint(prompt: str) -> str:
        from threadline._openai_http import openai_summarize

        return openai_summarize(endpoint)(prompt)

    return NamedSummarizer(checked, call_endpoint)


__all__ = ["AsyncSummarize", "NamedSummarizer", "anthropic", "extractive", "named", "openai"]
