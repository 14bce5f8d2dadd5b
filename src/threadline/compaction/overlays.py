"""Read-time compaction overlays: replace summarised ranges of a path by one synthetic message.

Originals are never deleted; an overlay only changes what a history read returns. Applying
overlays is O(len(path) + len(compactions)) so it can run on every read.

>>> from datetime import datetime, timezone
>>> path = [{"id": f"m{i}", "role": "user", "parts": []} for i in range(4)]
>>> c = Compaction("c1", "summary", "m1", "m2", datetime(2026, 1, 1, tzinfo=timezone.utc))
>>> [m["id"] for m in apply_overlays(path, [c])]
['m0', 'compaction_c1', 'm3']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from threadline.messages import OVERLAY_ID_PREFIX
from threadline.types import Compaction, Message


class OverlaySpan(NamedTuple):
    """An overlay that applies to a path: it replaces positions ``start``..``end`` inclusive.

    >>> from datetime import datetime, timezone
    >>> c = Compaction("c1", "S", "m1", "m2", datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> OverlaySpan(1, 2, c).end
    2
    """

    start: int
    end: int
    compaction: Compaction


def overlay_message(compaction: Compaction, last_covered: Message | None = None) -> Message:
    """Build the synthetic assistant message that stands for ``compaction`` in history.

    ``createdAt`` is copied from ``last_covered`` (the last message of the range) when it has one.

    >>> from datetime import datetime, timezone
    >>> c = Compaction("c1", "S", "m1", "m2", datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> overlay_message(c, {"id": "m2", "createdAt": "2026-01-01T00:00:00.000Z"})["id"]
    'compaction_c1'
    """
    message: Message = {
        "id": f"{OVERLAY_ID_PREFIX}{compaction.id}",
        "role": "assistant",
        "parts": [{"type": "text", "text": compaction.summary}],
    }
    created_at = last_covered.get("createdAt") if last_covered is not None else None
    if created_at is not None:
        message["createdAt"] = created_at
    return message


def _newest_by_start(
    positions: dict[str, int], compactions: Sequence[Compaction]
) -> dict[int, tuple[int, Compaction]]:
    """For each start position, the newest overlay whose two ends are on the path in order.

    Ties on ``created_at`` go to the overlay later in ``compactions`` (hence ``>=``).
    """
    best: dict[int, tuple[int, Compaction]] = {}
    for compaction in compactions:
        start = positions.get(compaction.from_message_id)
        end = positions.get(compaction.to_message_id)
        if start is None or end is None or end < start:
            continue
        current = best.get(start)
        if current is None or compaction.created_at >= current[1].created_at:
            best[start] = (end, compaction)
    return best


def _positions(path: Sequence[Message]) -> dict[str, int]:
    """Map message id → index; with a (corrupt) duplicate id the first occurrence wins."""
    positions: dict[str, int] = {}
    for index, message in enumerate(path):
        message_id: Any = message.get("id")
        if isinstance(message_id, str) and message_id not in positions:
            positions[message_id] = index
    return positions


def visible_overlays(
    path: Sequence[Message], compactions: Sequence[Compaction]
) -> list[OverlaySpan]:
    """The overlays :func:`apply_overlays` applies, as ``(start, end, compaction)`` in path order.

    >>> visible_overlays([], [])
    []
    """
    if not compactions or not path:
        return []
    best = _newest_by_start(_positions(path), compactions)
    spans: list[OverlaySpan] = []
    index = 0
    for start in sorted(best):
        if start < index:  # starts inside a range already replaced
            continue
        end, compaction = best[start]
        spans.append(OverlaySpan(start, end, compaction))
        index = end + 1
    return spans


def apply_overlays(path: Sequence[Message], compactions: Sequence[Compaction]) -> list[Message]:
    """Return ``path`` (root → leaf) with every visible overlay's range replaced by its summary.

    Walking from the root, at each message the newest overlay starting there (and ending at or
    after it on this path) replaces the range; overlays starting inside a replaced range, or
    with an end off the path, are ignored. Message objects outside ranges are reused as-is.

    >>> apply_overlays([{"id": "m1", "role": "user", "parts": []}], [])[0]["id"]
    'm1'
    """
    return _replace_spans(path, visible_overlays(path, compactions))


def _replace_spans(path: Sequence[Message], spans: Sequence[OverlaySpan]) -> list[Message]:
    """``path`` with each span's range replaced by its overlay message."""
    if not spans:
        return list(path)
    out: list[Message] = []
    index = 0
    for span in spans:
        out.extend(path[index : span.start])
        out.append(overlay_message(span.compaction, path[span.end]))
        index = span.end + 1
    out.extend(path[index:])
    return out


def earliest_visible_overlay(
    path: Sequence[Message], compactions: Sequence[Compaction]
) -> Compaction | None:
    """The overlay whose synthetic message comes first in ``apply_overlays(path, compactions)``.

    ``Session.compact`` extends a new summary from this overlay's ``from_message_id`` so that
    repeated compaction keeps one growing summary.

    >>> earliest_visible_overlay([], []) is None
    True
    """
    spans = visible_overlays(path, compactions)
    return spans[0].compaction if spans else None


def superseded(
    compactions: Sequence[Compaction],
    parents: Mapping[str, str | None],
    head_id: str | None = None,
) -> set[str]:
    """Ids of the overlays that no read of the session shows any more: on every branch they
    lie on, another overlay is applied instead — a newer one from the same start, or one whose
    range holds their start (the rule of :func:`visible_overlays`, applied to each read).

    ``parents`` maps every message id of the session to its parent id (``None`` for a root);
    the reads are the path to each leaf and, when given, to ``head_id`` (after a rewind the
    head is not a leaf, and an older overlay may be the one shown up to it). An overlay that
    lies on no read (an end deleted, or its start not above its end) is superseded by nothing
    and is not reported. Cost: one walk up the tree, then per distinct branch only the ends of
    the overlays on it.

    >>> from datetime import datetime, timezone
    >>> at = lambda minute: datetime(2026, 1, 1, 0, minute, tzinfo=timezone.utc)
    >>> parents = {"m1": None, "m2": "m1", "m3": "m2", "m4": "m3", "b3": "m2"}
    >>> grown = [Compaction("c1", "S", "m2", "m3", at(1)), Compaction("c2", "S", "m2", "m4", at(2))]
    >>> superseded(grown, parents)  # c2 extends c1 on the same branch
    {'c1'}
    >>> other = [grown[0], Compaction("c3", "S", "m2", "b3", at(3))]
    >>> superseded(other, parents)  # c3 is newer but on another branch: c1 is still shown
    set()
    """
    if len(compactions) < 2:
        return set()
    ends = {c.from_message_id for c in compactions} | {c.to_message_id for c in compactions}
    nearest = _nearest_end(parents, ends)
    with_children = {parent for parent in parents.values() if parent is not None}
    reads = [message_id for message_id in parents if message_id not in with_children]
    if head_id is not None and head_id in parents:
        reads.append(head_id)
    shown: set[str] = set()
    placed: set[str] = set()
    done: set[tuple[str, ...]] = set()
    for read in reads:
        chain: list[str] = []  # the overlay ends on this read, leaf first
        end = nearest(read)
        while end is not None and end not in chain:  # (a corrupt cycle stops the walk)
            chain.append(end)
            end = nearest(parents[end])
        key = tuple(reversed(chain))
        if key in done:
            continue
        done.add(key)
        # Only the order of the ends matters to visible_overlays: the ends alone stand for
        # the whole path.
        stubs: list[Message] = [{"id": message_id} for message_id in key]
        shown.update(span.compaction.id for span in visible_overlays(stubs, compactions))
        positions = _positions(stubs)
        placed.update(c.id for c in compactions if _lies_on(positions, c))
    return placed - shown


def _lies_on(positions: dict[str, int], compaction: Compaction) -> bool:
    start = positions.get(compaction.from_message_id)
    end = positions.get(compaction.to_message_id)
    return start is not None and end is not None and start <= end


def _nearest_end(
    parents: Mapping[str, str | None], ends: set[str]
) -> Callable[[str | None], str | None]:
    """``nearest(id)``: the closest of ``ends`` at or above that message (``None``: none), each
    message walked once over all calls."""
    memo: dict[str, str | None] = {}

    def nearest(message_id: str | None) -> str | None:
        trail: list[str] = []
        seen: set[str] = set()
        node = message_id
        found: str | None = None
        while node is not None and node in parents and node not in seen:
            if node in memo:
                found = memo[node]
                break
            if node in ends:
                found = node
                break
            trail.append(node)
            seen.add(node)
            node = parents[node]
        for walked in trail:
            memo[walked] = found
        return found

    return nearest


def apply_overlays_encoded(
    rows: Sequence[tuple[str, str]],
    compactions: Sequence[Compaction],
    decode: Callable[[str], Message],
) -> list[Message]:
    """:func:`apply_overlays` over ``(id, stored JSON)`` rows, decoding only what is shown.

    A message hidden by an overlay is never decoded — except the last one of each range, whose
    ``createdAt`` the overlay message takes — so reading a long compacted path costs about as
    much as reading its visible part.

    >>> import json
    >>> apply_overlays_encoded([("m1", '{"id":"m1","role":"user","parts":[]}')], [], json.loads)
    [{'id': 'm1', 'role': 'user', 'parts': []}]
    """
    if not compactions:
        return [decode(data) for _, data in rows]
    stubs: list[Message] = [{"id": message_id} for message_id, _ in rows]
    spans = visible_overlays(stubs, compactions)
    hidden: set[int] = set()
    for span in spans:
        hidden.update(range(span.start, span.end))
    path = [stubs[k] if k in hidden else decode(rows[k][1]) for k in range(len(rows))]
    return _replace_spans(path, spans)  # spans found once, on the stubs (same ids)


def overlays_cross_start(
    rows: Sequence[tuple[str, str]], compactions: Sequence[Compaction]
) -> bool:
    """Whether an overlay ending in ``rows`` (the newest part of a path) starts before it:
    only then can the messages before ``rows`` change how ``rows`` read.

    >>> from datetime import datetime, timezone
    >>> c = Compaction("c1", "S", "m0", "m2", datetime(2026, 1, 1, tzinfo=timezone.utc))
    >>> overlays_cross_start([("m2", "{}"), ("m3", "{}")], [c])
    True
    """
    ids = {message_id for message_id, _ in rows}
    return any(c.to_message_id in ids and c.from_message_id not in ids for c in compactions)


__all__ = [
    "OverlaySpan",
    "apply_overlays",
    "apply_overlays_encoded",
    "earliest_visible_overlay",
    "overlay_message",
    "overlays_cross_start",
    "superseded",
    "visible_overlays",
]
