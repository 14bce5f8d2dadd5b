"""The order and nesting in which ``threadline show`` draws a message tree (pure, iterative).

Drawing rules, chosen so that a long chat does not march off the right edge:

* A chain of single children stays at one level: a 10,000-message chat without branches is
  10,000 rows at level 0, never 10,000 levels of indentation.
* At a message with several children, one child continues the current level (the "trunk":
  the child on the head path, else the one with the longest chain below it) and the others
  open side branches one level deeper, drawn right there, before the trunk continues.
* Several roots (a session whose root was deleted, or ``parent_id=None`` appends) are drawn
  one after the other, each announced by a ``root`` row.

Everything is a loop over an explicit stack: no recursion limit, whatever the shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Row", "layout"]


@dataclass(frozen=True)
class Row:
    """One row of the drawing: a message (``kind="message"``) or, before the first message
    of the second and later roots, a ``kind="root"`` marker. ``level`` is the branch
    nesting (0 = the trunk of a root); ``opens_branch`` is True for the first row of a side
    branch."""

    kind: str
    message_id: str
    level: int
    opens_branch: bool = False
    root_index: int = 0


def _heights(ids: Sequence[str], parent_of: dict[str, str | None]) -> dict[str, int]:
    """Longest chain below each message (1 for a leaf); ``ids`` in write order (parents
    first), so walking it backwards sees every child before its parent."""
    height = dict.fromkeys(ids, 1)
    for message_id in reversed(ids):
        parent = parent_of[message_id]
        if parent is not None and parent in height:
            height[parent] = max(height[parent], height[message_id] + 1)
    return height


def layout(nodes: Iterable[tuple[str, str | None]], head_path: Iterable[str] = ()) -> list[Row]:
    """Rows for ``nodes`` (``(message id, parent id)`` in write order, a parent before its
    children); each message appears exactly once.

    >>> nodes = [("u1", None), ("a1", "u1"), ("a2", "u1"), ("u2", "a2")]
    >>> [(r.message_id, r.level, r.opens_branch) for r in layout(nodes, ["u1", "a2", "u2"])]
    [('u1', 0, False), ('a1', 1, True), ('a2', 0, False), ('u2', 0, False)]
    """
    pairs = list(nodes)
    ids = [message_id for message_id, _ in pairs]
    known = set(ids)
    parent_of = {m: (p if p in known else None) for m, p in pairs}
    children: dict[str, list[str]] = {m: [] for m in ids}
    roots: list[str] = []
    for message_id in ids:
        parent = parent_of[message_id]
        (children[parent] if parent is not None else roots).append(message_id)
    height = _heights(ids, parent_of)
    on_path = set(head_path)
    rows: list[Row] = []
    for index, root in enumerate(roots):
        if index:
            rows.append(Row("root", root, 0, root_index=index))
        stack: list[tuple[str, int, bool]] = [(root, 0, False)]
        while stack:
            message_id, level, opens = stack.pop()
            rows.append(Row("message", message_id, level, opens))
            below = children[message_id]
            if not below:
                continue
            trunk = _trunk(below, on_path, height)
            stack.append((trunk, level, False))  # drawn after the side branches
            for child in reversed(below):
                if child != trunk:
                    stack.append((child, level + 1, True))
    return rows


def _trunk(children: list[str], on_path: set[str], height: dict[str, int]) -> str:
    for child in children:
        if child in on_path:
            return child
    best = children[-1]
    for child in reversed(children):  # the newest of the tallest
        if height[child] > height[best]:
            best = child
    return best


def covered_ids(
    from_id: str, to_id: str, parent_of: dict[str, str | None], limit: int
) -> list[str]:
    """Ids from ``to_id`` up to ``from_id`` (both included) along parent links, root side
    first; ``[]`` if ``from_id`` is not an ancestor-or-self of ``to_id`` within ``limit``
    steps.

    >>> covered_ids("a", "c", {"a": None, "b": "a", "c": "b"}, 10)
    ['a', 'b', 'c']
    """
    out: list[str] = []
    current: str | None = to_id
    while current is not None and len(out) < limit:
        out.append(current)
        if current == from_id:
            return out[::-1]
        current = parent_of.get(current)
    return []
