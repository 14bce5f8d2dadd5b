"""The compaction layer of :class:`~threadline.Session`: summary overlays, ``compact()`` and
the automatic compaction after an append (``compact_after``, ``compact_when``), with the pure
rule of where a new overlay goes (:func:`overlay_ends`).

One rule for both twins: :meth:`SessionCompaction._automatic_compactions` says which
compactions an append makes due, one after another; the sync session runs each with its
function, the async session (``threadline._async_session``) awaits its async one.

>>> from threadline import CompactResult, Session
>>> def summarize(history):
...     return CompactResult(history[0]["id"], history[-2]["id"], "Earlier turns.")
>>> s = Session.create(":memory:").on_compaction(summarize)
>>> _ = s.append_messages([{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
>>> s.compact().summary
'Earlier turns.'
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from threadline._session_tree import SessionTree
from threadline.compaction.function import keep_boundary
from threadline.compaction.overlays import (
    apply_overlays,
    earliest_visible_overlay,
    visible_overlays,
)
from threadline.errors import CompactionError, InvalidArgumentError
from threadline.messages import OVERLAY_ID_PREFIX, is_overlay_id
from threadline.tokens import default_token_counter
from threadline.types import CompactContext, Compaction, CompactResult, Message

__all__ = ["CompactionInput", "SessionCompaction", "check_compact_result", "overlay_ends"]

logger = logging.getLogger("threadline")


class CompactionInput(NamedTuple):
    """What one compaction works on: the raw path, its overlays, the history offered to the
    compaction function, and whether the function must summarise all of it (the caller chose
    the range: ``compact_when``, a runner's ``memory``).

    >>> CompactionInput([], [], []).summarize_all
    False
    """

    raw_path: list[Message]
    compactions: list[Compaction]
    history: list[Message]
    summarize_all: bool = False


class SessionCompaction(SessionTree):
    """Overlays and compaction of a session (a layer of ``threadline.Session``).

    >>> from threadline import Session
    >>> Session.create(":memory:").get_compactions()
    []
    """

    # -- overlays and compaction -------------------------------------------------------------------
    def add_compaction(self, summary: str, from_message_id: str, to_message_id: str) -> Compaction:
        """Store a summary overlay replacing ``from``..``to`` when history is read.

        >>> from threadline import Session
        >>> from threadline.messages import assistant, text_of, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> _ = s.add_compaction("They greeted each other.", "m1", "m2")
        >>> [text_of(m) for m in s.get_history()]
        ['They greeted each other.', 'bye']
        """
        if not isinstance(summary, str):
            raise InvalidArgumentError("a compaction summary must be a string")
        return self._backend.add_compaction(summary, from_message_id, to_message_id)

    def get_compactions(self) -> list[Compaction]:
        """Every stored overlay of this session, oldest first.

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = s.add_compaction("Greetings.", "m1", "m2")
        >>> [(c.summary, c.from_message_id, c.to_message_id) for c in s.get_compactions()]
        [('Greetings.', 'm1', 'm2')]
        """
        return self._backend.get_compactions()

    def compact(self, leaf_id: str | None = None) -> CompactResult | None:
        """Summarise part of the history with the registered function and store an overlay.

        Repeated compaction extends the earliest overlay visible on the path, so each branch
        keeps one growing summary. Returns ``None`` when the function declines.

        >>> from threadline import CompactResult, Session
        >>> from threadline.messages import text_of
        >>> def summarize(history):  # everything but the newest message
        ...     return CompactResult(history[0]["id"], history[-2]["id"], "They greeted.")
        >>> s = Session.create(":memory:").on_compaction(summarize)
        >>> _ = s.append_messages([{"role": "user", "content": w} for w in ("hi", "yo", "bye")])
        >>> s.compact().summary, [text_of(m) for m in s.get_history()]
        ('They greeted.', ['They greeted.', 'bye'])
        """
        if self._settings.compact_fn is None:
            raise CompactionError(
                "no compaction function: give the app's profile a compaction summarizer, "
                "or call on_compaction(fn)"
            )
        plan = self._compaction_input(leaf_id)
        return self._store_compaction(plan, self._call_compact_fn(plan.history))

    # The three phases of compact(), shared with the async session (which awaits the middle one).
    def _compaction_input(self, leaf_id: str | None, keep: int = 0) -> CompactionInput:
        """The raw path, the overlays and the history offered to the compaction function:
        all of it, or all but the last ``keep`` messages (``compact_when``)."""
        raw_path = self._backend.get_path(leaf_id)
        compactions = self._backend.get_compactions()
        history = apply_overlays(raw_path, compactions) if raw_path else []
        if keep:
            history = history[: keep_boundary(history, keep)]
        return CompactionInput(raw_path, compactions, history)

    def _compaction_context(self, summarize_all: bool = False) -> CompactContext:
        return CompactContext(
            token_counter=self._settings.token_counter, summarize_all=summarize_all
        )

    def _invoke_compact_fn(
        self, fn: Callable[..., Any], history: list[Message], summarize_all: bool = False
    ) -> Any:
        """Call a compaction function with the history (and the context when it takes one);
        what it returns may be awaitable (the async session awaits it)."""
        if _takes_one_argument(fn):
            return fn(history)
        return fn(history, self._compaction_context(summarize_all))

    def _call_compact_fn(
        self, history: list[Message], summarize_all: bool = False
    ) -> CompactResult | None:
        fn = self._settings.compact_fn
        assert fn is not None
        result = self._invoke_compact_fn(fn, history, summarize_all)
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise CompactionError(
                "the compaction function is async; use threadline.aio.AsyncSession"
            )
        return check_compact_result(result)

    def _store_compaction(
        self, plan: CompactionInput, result: CompactResult | None
    ) -> CompactResult | None:
        ends = overlay_ends(plan, result)
        if result is None or ends is None:
            return None
        first_id, to_id = ends
        self._backend.add_compaction(result.summary, first_id, to_id)
        if self._settings.cached_prompt or self._frozen is not None:
            self.refresh_system_prompt()
        return CompactResult(first_id, to_id, result.summary)

    def _after_append(self) -> None:
        if self._settings.compact_fn is None:
            return
        try:
            for plan in self._automatic_compactions():
                result = self._call_compact_fn(plan.history, plan.summarize_all)
                self._store_compaction(plan, result)
        except Exception as exc:  # automatic compaction must never fail the append
            self._report_compaction_error(exc)

    def _automatic_compactions(self) -> Iterator[CompactionInput]:
        """The compactions an append makes due, in order: ``compact_after``'s when the estimate
        exceeds its threshold, then ``compact_when``'s. Each is planned once the one before
        it is stored (a generator: the async session advances it in a worker thread and
        awaits its async function on each)."""
        threshold = self._settings.compact_threshold
        if threshold is not None and self._estimate_tokens() > threshold:
            yield self._compaction_input(None)
        plan = self._count_compaction_input()
        if plan is not None:
            yield plan._replace(summarize_all=True)

    def _count_compaction_input(self) -> CompactionInput | None:
        """What ``compact_when`` offers the compaction function now, or ``None``: when the
        active path holds more than ``min_messages`` visible messages (summaries count as one
        each), everything but the last ``keep`` — if that holds a message not yet summarised.
        Reads one count, and the path's ids only when the raw path is long enough."""
        minimum = self._settings.compact_min_messages
        if minimum is None or self._backend.get_path_length() <= minimum:
            return None
        ids = self._backend.get_path_ids()
        spans = visible_overlays([{"id": i} for i in ids], self._backend.get_compactions())
        # A span hides end - start + 1 messages and shows one summary in their place.
        if len(ids) - sum(span.end - span.start for span in spans) <= minimum:
            return None
        plan = self._compaction_input(None, keep=self._settings.compact_keep)
        if all(is_overlay_id(m.get("id")) for m in plan.history):
            return None
        return plan

    def _report_compaction_error(self, exc: Exception) -> None:
        if self._settings.error_handler is None:
            logger.warning("automatic compaction failed: %s", exc, exc_info=exc)
            return
        try:
            self._settings.error_handler(exc)
        except Exception:
            logger.exception("on_compaction_error handler raised")

    def _estimate_tokens(self) -> int:
        history = self.get_history()
        prompt = self._current_prompt()
        if self._settings.token_counter is not None:
            blocks = self.get_context_blocks()
            counter = self._settings.token_counter
            return int(counter(messages=history, system_prompt=prompt, blocks=blocks))
        return default_token_counter(messages=history, system_prompt=prompt)


def overlay_ends(plan: CompactionInput, result: CompactResult | None) -> tuple[str, str] | None:
    """The first and last message ids of the overlay ``result`` makes over ``plan``'s path, or
    ``None`` when it makes none.

    >>> path = [{"id": "m1"}, {"id": "m2"}, {"id": "m3"}]
    >>> plan = CompactionInput(path, [], path)
    >>> overlay_ends(plan, CompactResult("m1", "m2", "Greetings."))
    ('m1', 'm2')
    >>> overlay_ends(plan, CompactResult("m2", "m1", "Backwards.")) is None
    True
    """
    if result is None:
        return None
    raw_path, compactions, history = plan.raw_path, plan.compactions, plan.history
    # A summary message offered in the history stands for its range: an id of one (as
    # ``history[0]["id"]`` when everything offered is summarised) means that range's ends.
    from_id = _covered_end(result.from_message_id, compactions, first=True)
    to_id = _covered_end(result.to_message_id, compactions, first=False)
    positions = {m["id"]: i for i, m in enumerate(raw_path)}
    start, end = positions.get(from_id), positions.get(to_id)
    if start is None or end is None or start > end:
        return None
    return _extended_start(history, raw_path, compactions, from_id), to_id


def _extended_start(
    history: list[Message],
    raw_path: list[Message],
    compactions: Sequence[Compaction],
    from_id: str,
) -> str:
    """Where a new overlay starts: the earliest visible overlay's start, so one summary grows —
    but only when nothing unsummarised lies between that overlay and ``from_id``."""
    visible = earliest_visible_overlay(raw_path, compactions)
    if visible is None:
        return from_id
    ids = [m["id"] for m in history]
    overlay_id = f"{OVERLAY_ID_PREFIX}{visible.id}"
    if from_id not in ids or overlay_id not in ids:
        return from_id
    overlay_at, from_at = ids.index(overlay_id), ids.index(from_id)
    if overlay_at < from_at and all(is_overlay_id(i) for i in ids[overlay_at + 1 : from_at]):
        return visible.from_message_id
    return from_id


def _covered_end(message_id: str, compactions: Sequence[Compaction], *, first: bool) -> str:
    """``message_id``, or for the id of a summary message (``compaction_<id>``) the first
    (``first``) or last message its overlay covers."""
    if not is_overlay_id(message_id):
        return message_id
    overlay_id = message_id.removeprefix(OVERLAY_ID_PREFIX)
    for compaction in compactions:
        if compaction.id == overlay_id:
            return compaction.from_message_id if first else compaction.to_message_id
    return message_id


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` accepts exactly one positional argument (called with messages only)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 1


def check_compact_result(result: object) -> CompactResult | None:
    """``result`` if a compaction function may return it (``CompactResult`` or ``None``).

    >>> check_compact_result(None) is None
    True
    >>> try:
    ...     check_compact_result("a summary")
    ... except CompactionError:
    ...     print("refused")
    refused
    """
    if result is not None and not isinstance(result, CompactResult):
        raise CompactionError(
            f"a compaction function must return CompactResult or None, got {type(result)}"
        )
    return result
