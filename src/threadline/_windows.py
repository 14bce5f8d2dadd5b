"""History windows (pure): which messages of a history ``get_history`` returns.

A history is the root→leaf path with overlays applied. Windows are applied in this order:
``branch`` (multi-agent isolation), ``after`` (a time cutoff), ``runs`` (the last N runs),
``limit`` (the last N messages), ``max_tokens`` (oldest dropped first, the leaf always kept).

A *run* starts at a user message and holds everything up to the next one. A user message that
carries only tool results (Anthropic ``tool_result``, GenAI ``functionResponse``) answers a
call and belongs to the run of that call: it starts nothing, so calls and results stay whole.

>>> u = lambda i: {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": "q"}]}
>>> a = lambda i: {"id": f"a{i}", "role": "assistant", "parts": []}
>>> [m["id"] for m in last_runs([u(1), a(1), u(2), a(2), u(3), a(3)], 2)]
['u2', 'a2', 'u3', 'a3']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from threadline.errors import InvalidArgumentError, ThreadlineError
from threadline.messages import is_overlay_id, is_tool_part, parse_timestamp, parts_of
from threadline.tokens import estimate_message_tokens
from threadline.types import Message

_IGNORED_PART_TYPES = frozenset({"step-start"})


def starts_run(message: Message) -> bool:
    """Whether ``message`` starts a run: a user message that is not only tool results.

    >>> starts_run({"role": "user", "parts": [{"type": "text", "text": "hi"}]})
    True
    >>> starts_run({"role": "user", "parts": [{"type": "tool-w", "state": "output-available"}]})
    False
    """
    if message.get("role") != "user":
        return False
    parts = [p for p in parts_of(message) if p.get("type") not in _IGNORED_PART_TYPES]
    return not parts or not all(is_tool_part(p) for p in parts)


def run_starts(history: Sequence[Message]) -> list[int]:
    """Indexes of the messages of ``history`` that start a run.

    >>> run_starts([{"role": "assistant"}, {"role": "user"}, {"role": "assistant"}])
    [1]
    """
    return [index for index, message in enumerate(history) if starts_run(message)]


def last_runs(history: Sequence[Message], runs: int) -> list[Message]:
    """The last ``runs`` runs of ``history``; a history with ``runs`` runs or fewer, whole.

    Compaction summaries are not runs: the summaries standing right before the window stay
    in front of it, so a compacted history reads summary + the last N runs.

    >>> h = [{"id": "compaction_1", "role": "assistant"}, {"id": "u1", "role": "user"},
    ...      {"id": "u2", "role": "user"}]
    >>> [m["id"] for m in last_runs(h, 1)], len(last_runs(h, 2)), last_runs(h, 0)
    (['u2'], 3, [])
    """
    if runs <= 0:
        return []
    starts = run_starts(history)
    if len(starts) <= runs:
        return list(history)
    start = starts[-runs]
    while start > 0 and is_overlay_id(history[start - 1].get("id")):
        start -= 1
    return list(history[start:])


def on_branch(message: Message, branch: str) -> bool:
    """Whether an agent on ``branch`` sees ``message``: its ``metadata.branch`` is unset
    (missing or null), equal to ``branch`` or a dot-prefix of it (an ancestor agent's).

    >>> m = lambda b: {"role": "user", "metadata": {"branch": b}}
    >>> [on_branch(m(b), "root.a") for b in (None, "root", "root.a", "root.b", "root.a.x")]
    [True, True, True, False, False]
    """
    metadata = message.get("metadata")
    own = metadata.get("branch") if isinstance(metadata, dict) else None
    if own is None:
        return True
    if not isinstance(own, str):
        return False
    return own == branch or branch.startswith(own + ".")


def cutoff_of(after: object) -> datetime:
    """``after`` as an aware UTC datetime: a datetime (naive = UTC), an ISO 8601 string, or
    epoch seconds (``int``/``float``; ``bool`` refused). Anything else raises
    ``InvalidArgumentError``.

    >>> cutoff_of(0).isoformat(), cutoff_of("1970-01-01T00:00:01Z").timestamp()
    ('1970-01-01T00:00:00+00:00', 1.0)
    """
    if isinstance(after, (datetime, str)):
        try:
            return parse_timestamp(after)
        except ThreadlineError as exc:
            shown = str(after)[:80]
            raise InvalidArgumentError(f"after: not a usable timestamp: {shown!r}") from exc
    if isinstance(after, (int, float)) and not isinstance(after, bool):
        try:
            return datetime.fromtimestamp(after, UTC)
        except (OverflowError, ValueError, OSError) as exc:  # nan, inf, beyond year 9999
            raise InvalidArgumentError(f"after: epoch seconds out of range: {after!r}") from exc
    raise InvalidArgumentError(
        f"after must be a datetime, an ISO 8601 string or epoch seconds, got {type(after).__name__}"
    )


def _created(message: Message) -> datetime:
    value = message.get("createdAt")
    if value is None:
        return datetime.min.replace(tzinfo=UTC)
    return parse_timestamp(value)


@dataclass(frozen=True)
class Window:
    """The windowing arguments of one ``get_history`` call, checked.

    >>> w = Window(limit=2)
    >>> [m["id"] for m in w.apply([{"id": "a"}, {"id": "b"}, {"id": "c"}])]
    ['b', 'c']
    """

    limit: int | None = None
    max_tokens: int | None = None
    after: datetime | None = None
    runs: int | None = None
    branch: str | None = None

    def __post_init__(self) -> None:
        for name in ("limit", "max_tokens", "runs"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InvalidArgumentError(f"{name} must be >= 0")

    @property
    def tail_only(self) -> bool:
        """Whether the newest part of a history can decide the window (no time cutoff, and a
        count of messages or runs to stop at).

        >>> Window(limit=5).tail_only, Window(max_tokens=5).tail_only
        (True, False)
        """
        return self.after is None and (self.limit is not None or self.runs is not None)

    def first_read(self) -> int:
        """How many rows a tail read starts with.

        >>> Window(limit=5).first_read(), Window(runs=2).first_read()
        (5, 12)
        """
        wanted = max(self.limit or 0, 1)
        if self.runs is not None:
            wanted = max(wanted, 4 * (self.runs + 1))
        return wanted

    def _visible(self, history: Sequence[Message]) -> list[Message]:
        if self.branch is None:
            return list(history)
        branch = self.branch
        return [m for m in history if on_branch(m, branch)]

    def decided_by(self, tail: Sequence[Message]) -> bool:
        """Whether ``tail`` (the newest part of a history, overlays applied) holds all of
        what :meth:`apply` keeps from the whole history.

        >>> u = {"role": "user"}
        >>> Window(runs=1).decided_by([u]), Window(runs=1).decided_by([u, u])
        (False, True)
        """
        visible = self._visible(tail)
        if self.limit is not None and len(visible) >= self.limit:
            return True
        if self.runs is not None:
            return self.runs == 0 or len(run_starts(visible)) > self.runs
        return False

    def apply(self, history: Sequence[Message]) -> list[Message]:
        """The messages of ``history`` this window keeps, in order.

        >>> Window(runs=0).apply([{"role": "user"}])
        []
        """
        kept = self._visible(history)
        if self.after is not None:
            cutoff = self.after
            kept = [m for m in kept if _created(m) >= cutoff]
        if self.runs is not None:
            kept = last_runs(kept, self.runs)
        if self.limit is not None:
            kept = kept[max(len(kept) - self.limit, 0) :] if self.limit else []
        if self.max_tokens is not None and kept:
            costs = [estimate_message_tokens([m]) for m in kept]
            total, start = sum(costs), 0
            while total > self.max_tokens and start < len(kept) - 1:
                total -= costs[start]
                start += 1
            kept = kept[start:]
        return kept


def window_of(
    *,
    limit: int | None = None,
    max_tokens: int | None = None,
    after: Any = None,
    runs: int | None = None,
    branch: str | None = None,
) -> Window:
    """A :class:`Window` from ``get_history``'s arguments (``after`` converted by
    :func:`cutoff_of`).

    >>> window_of(after=0).after.year
    1970
    """
    cutoff = cutoff_of(after) if after is not None else None
    return Window(limit=limit, max_tokens=max_tokens, after=cutoff, runs=runs, branch=branch)


__all__ = [
    "Window",
    "cutoff_of",
    "last_runs",
    "on_branch",
    "run_starts",
    "starts_run",
    "window_of",
]
