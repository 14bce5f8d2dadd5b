"""``superseded``: the overlays no read shows any more — exactly those that ``visible_overlays``
leaves out on every branch they lie on (issue 25: superseded overlays are marked)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.compaction import superseded, visible_overlays
from threadline.types import Compaction, Message

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def overlay(cid: str, start: str, end: str, minute: int) -> Compaction:
    return Compaction(cid, f"summary {cid}", start, end, T0 + timedelta(minutes=minute))


def path_to(parents: dict[str, str | None], leaf: str) -> list[Message]:
    path: list[Message] = []
    node: str | None = leaf
    while node is not None:
        path.append({"id": node})
        node = parents[node]
    return path[::-1]


def shown_somewhere(
    parents: dict[str, str | None], compactions: list[Compaction], head: str | None
) -> tuple[set[str], set[str]]:
    """By brute force over whole paths: the overlays shown on some read, and those lying on one."""
    reads = [m for m in parents if m not in set(parents.values())]
    reads += [head] if head is not None else []
    shown: set[str] = set()
    placed: set[str] = set()
    for read in reads:
        path = path_to(parents, read)
        shown |= {span.compaction.id for span in visible_overlays(path, compactions)}
        index = {m["id"]: i for i, m in enumerate(path)}
        placed |= {
            c.id
            for c in compactions
            if c.from_message_id in index
            and c.to_message_id in index
            and index[c.from_message_id] <= index[c.to_message_id]
        }
    return shown, placed


@st.composite
def trees_with_overlays(
    draw: st.DrawFn,
) -> tuple[dict[str, str | None], list[Compaction], str | None]:
    size = draw(st.integers(1, 30))
    parents: dict[str, str | None] = {"m0": None}
    for i in range(1, size):  # mostly chains, some branches, now and then a second root
        parent = draw(st.one_of(st.just(i - 1), st.integers(0, i - 1), st.just(None)))
        parents[f"m{i}"] = None if parent is None else f"m{parent}"
    ids = list(parents)
    compactions = []
    for k in range(draw(st.integers(0, 8))):
        end = draw(st.sampled_from(ids))
        above = [m["id"] for m in path_to(parents, end)]
        start = draw(st.one_of(st.sampled_from(above), st.sampled_from([*ids, "gone"])))
        minute = draw(st.integers(0, 4))  # ties on created_at happen
        compactions.append(overlay(f"c{k}", start, end, minute))
    head = draw(st.one_of(st.none(), st.sampled_from(ids)))
    return parents, compactions, head


@settings(max_examples=400, deadline=None)
@given(trees_with_overlays())
def test_superseded_is_what_no_read_shows(
    case: tuple[dict[str, str | None], list[Compaction], str | None],
) -> None:
    parents, compactions, head = case
    shown, placed = shown_somewhere(parents, compactions, head)
    found = superseded(compactions, parents, head)
    assert found == placed - shown
    # the visible overlays are the ones that lie on a read and are not superseded
    assert shown == {c.id for c in compactions if c.id in placed and c.id not in found}


PARENTS: dict[str, str | None] = {
    "m1": None,
    "m2": "m1",
    "m3": "m2",
    "m4": "m3",
    "m5": "m4",
    "b4": "m3",
}


def test_a_newer_overlay_from_the_same_start_supersedes_on_its_branch() -> None:
    grown = [overlay("c1", "m2", "m4", 1), overlay("c2", "m2", "m5", 2)]
    assert superseded(grown, PARENTS) == {"c1"}
    # ... unless the head was rewound above the newer one's end: the older one is read there
    assert superseded(grown, PARENTS, head_id="m4") == set()
    # a branch leaving between the two ends reads the older one
    assert superseded([overlay("c1", "m2", "m3", 1), grown[1]], PARENTS) == set()


def test_a_newer_overlay_on_another_branch_supersedes_nothing() -> None:
    assert (
        superseded([overlay("c1", "m2", "m4", 1), overlay("c2", "m2", "b4", 2)], PARENTS) == set()
    )


def test_an_overlay_starting_inside_a_shown_range_is_superseded_whatever_its_age() -> None:
    outer, inner = overlay("outer", "m2", "m5", 1), overlay("inner", "m3", "m4", 2)
    assert superseded([outer, inner], PARENTS) == {"inner"}


def test_an_enclosing_newer_overlay_supersedes() -> None:
    assert superseded([overlay("c1", "m3", "m4", 1), overlay("c2", "m2", "m5", 2)], PARENTS) == {
        "c1"
    }


def test_overlays_off_the_tree_or_alone_are_not_reported() -> None:
    assert superseded([overlay("c1", "m2", "m3", 1)], PARENTS) == set()
    gone = [overlay("c1", "gone", "m3", 1), overlay("c2", "m4", "m2", 2)]  # reversed ends
    assert superseded(gone, PARENTS) == set()
    assert superseded([], {}) == set()


def test_a_corrupt_cycle_ends_the_walk() -> None:
    cycle: dict[str, str | None] = {"a": "b", "b": "a", "c": "a"}
    assert superseded([overlay("c1", "a", "b", 1), overlay("c2", "b", "a", 2)], cycle) == set()
