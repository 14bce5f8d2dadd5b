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

from collections.abc import Callable, Sequence
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
    "visible_overlays",
]
