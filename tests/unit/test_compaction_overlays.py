"""Read-time overlays: which ranges are replaced, by what, and what is left alone."""

from __future__ import annotations

import copy
import json as _json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from datetime import datetime as _dt

from hypothesis import given
from hypothesis import given as _given
from hypothesis import strategies as _st
from hypothesis import strategies as st

from threadline.compaction.overlays import (
    apply_overlays,
    apply_overlays_encoded,
    earliest_visible_overlay,
    overlay_message,
    visible_overlays,
)
from threadline.types import Compaction, Message
from threadline.types import Compaction as _Compaction

T0 = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def path_of(n: int, *, stamped: bool = True) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        m: Message = {"id": f"m{i}", "role": "user", "parts": [{"type": "text", "text": f"t{i}"}]}
        if stamped:
            m["createdAt"] = f"2026-11-21T10:00:{i:02d}.000Z"
        out.append(m)
    return out


def comp(cid: str, start: str, end: str, minutes: int = 0, summary: str = "") -> Compaction:
    return Compaction(cid, summary or f"summary {cid}", start, end, T0 + timedelta(minutes=minutes))


def ids(messages: Sequence[Message]) -> list[str]:
    return [m["id"] for m in messages]


def test_range_is_replaced_by_one_synthetic_assistant_message() -> None:
    path = path_of(6)
    out = apply_overlays(path, [comp("c1", "m1", "m3", summary="S")])
    assert ids(out) == ["m0", "compaction_c1", "m4", "m5"]
    assert out[1] == {
        "id": "compaction_c1",
        "role": "assistant",
        "parts": [{"type": "text", "text": "S"}],
        "createdAt": path[3]["createdAt"],
    }


def test_created_at_only_when_last_covered_message_has_one() -> None:
    out = apply_overlays(path_of(3, stamped=False), [comp("c1", "m0", "m1")])
    assert "createdAt" not in out[0]
    c = comp("c2", "a", "b")
    assert "createdAt" not in overlay_message(c)
    assert overlay_message(c, {"id": "b", "createdAt": "X"})["createdAt"] == "X"


def test_single_message_overlay() -> None:
    out = apply_overlays(path_of(3), [comp("c1", "m1", "m1")])
    assert ids(out) == ["m0", "compaction_c1", "m2"]


def test_whole_path_overlay() -> None:
    assert ids(apply_overlays(path_of(3), [comp("c1", "m0", "m2")])) == ["compaction_c1"]


def test_newest_overlay_starting_at_a_message_wins() -> None:
    path = path_of(8)
    older = comp("old", "m1", "m5", minutes=0)
    newer = comp("new", "m1", "m2", minutes=5)
    assert ids(apply_overlays(path, [older, newer])) == ["m0", "compaction_new", *ids(path[3:])]
    assert ids(apply_overlays(path, [newer, older])) == ["m0", "compaction_new", *ids(path[3:])]


def test_created_at_tie_goes_to_the_later_overlay_in_the_sequence() -> None:
    path = path_of(5)
    a, b = comp("a", "m1", "m2"), comp("b", "m1", "m3")
    assert ids(apply_overlays(path, [a, b])) == ["m0", "compaction_b", "m4"]
    assert ids(apply_overlays(path, [b, a])) == ["m0", "compaction_a", "m3", "m4"]


def test_overlay_starting_inside_a_replaced_range_is_ignored() -> None:
    path = path_of(8)
    outer = comp("outer", "m1", "m4", minutes=0)
    inner = comp("inner", "m3", "m6", minutes=10)  # newer, but starts inside outer's range
    assert ids(apply_overlays(path, [outer, inner])) == ["m0", "compaction_outer", "m5", "m6", "m7"]


def test_adjacent_overlays_both_apply() -> None:
    out = apply_overlays(path_of(6), [comp("a", "m0", "m1"), comp("b", "m2", "m3")])
    assert ids(out) == ["compaction_a", "compaction_b", "m4", "m5"]


def test_overlays_with_an_end_off_the_path_or_reversed_are_ignored() -> None:
    path = path_of(5)
    overlays = [
        comp("other-branch", "m1", "x9"),
        comp("unknown-start", "zz", "m3"),
        comp("reversed", "m3", "m1"),
    ]
    assert apply_overlays(path, overlays) == path
    assert earliest_visible_overlay(path, overlays) is None


def test_branch_local_application() -> None:
    # m0 -> m1 -> m2a (branch A) and m0 -> m1 -> m2b (branch B); the overlay ends on A.
    root, mid = path_of(2)
    branch_a = [root, mid, {"id": "m2a", "role": "user", "parts": []}]
    branch_b = [root, mid, {"id": "m2b", "role": "user", "parts": []}]
    c = comp("c", "m1", "m2a")
    assert ids(apply_overlays(branch_a, [c])) == ["m0", "compaction_c"]
    assert apply_overlays(branch_b, [c]) == branch_b


def test_inputs_are_not_mutated_and_originals_are_reused() -> None:
    path = path_of(5)
    snapshot = copy.deepcopy(path)
    overlays = [comp("c", "m1", "m2")]
    out = apply_overlays(path, overlays)
    assert path == snapshot
    assert out is not path
    assert out[0] is path[0] and out[2] is path[3]
    empty = apply_overlays(path, [])
    assert empty == path and empty is not path


def test_empty_inputs() -> None:
    assert apply_overlays([], [comp("c", "m1", "m2")]) == []
    assert visible_overlays(path_of(2), []) == []


def test_earliest_visible_overlay_is_the_first_synthetic_message() -> None:
    path = path_of(10)
    first = comp("first", "m2", "m3", minutes=1)
    second = comp("second", "m5", "m7", minutes=0)
    hidden = comp("hidden", "m3", "m9", minutes=9)  # starts inside `first`
    assert earliest_visible_overlay(path, [second, hidden, first]) == first
    spans = visible_overlays(path, [second, hidden, first])
    assert [(s.start, s.end, s.compaction.id) for s in spans] == [
        (2, 3, "first"),
        (5, 7, "second"),
    ]


def test_large_path_is_linear_enough() -> None:
    path = [{"id": f"m{i}", "role": "user", "parts": []} for i in range(20_000)]
    overlays = [comp(f"c{i}", f"m{i * 10}", f"m{i * 10 + 4}", minutes=i) for i in range(2_000)]
    started = time.perf_counter()
    out = apply_overlays(path, overlays)
    assert time.perf_counter() - started < 1.0
    assert len(out) == 20_000 - 2_000 * 4


# --------------------------------------------------------------------------- properties


def reference(path: list[Message], compactions: list[Compaction]) -> list[str]:
    """Naive O(n·k) restatement of the rule, to compare the real implementation against."""
    pos = {m["id"]: i for i, m in enumerate(path)}
    out: list[str] = []
    i = 0
    while i < len(path):
        candidates = [
            (c.created_at, k, c)
            for k, c in enumerate(compactions)
            if pos.get(c.from_message_id) == i and pos.get(c.to_message_id, -1) >= i
        ]
        if candidates:
            _, _, chosen = max(candidates, key=lambda t: (t[0], t[1]))
            out.append(f"compaction_{chosen.id}")
            i = pos[chosen.to_message_id] + 1
        else:
            out.append(path[i]["id"])
            i += 1
    return out


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Message], list[Compaction]]:
    n = draw(st.integers(0, 25))
    path = path_of(n)
    names = [m["id"] for m in path] + ["off1", "off2"]
    overlays = []
    for k in range(draw(st.integers(0, 8))):
        start = draw(st.sampled_from(names))
        end = draw(st.sampled_from(names))
        overlays.append(comp(f"c{k}", start, end, minutes=draw(st.integers(0, 3))))
    return path, overlays


@given(scenarios())
def test_property_matches_reference_and_invariants(
    scenario: tuple[list[Message], list[Compaction]],
) -> None:
    path, overlays = scenario
    out = apply_overlays(path, overlays)
    assert ids(out) == reference(path, overlays)

    by_id = {c.id: c for c in overlays}
    pos = {m["id"]: i for i, m in enumerate(path)}
    original_ids = [m["id"] for m in out if not m["id"].startswith("compaction_")]
    assert len(original_ids) == len(set(original_ids))  # each at most once
    assert original_ids == sorted(original_ids, key=lambda x: pos[x])  # order preserved
    covered: set[int] = set()
    for m in out:
        if m["id"].startswith("compaction_"):
            c = by_id[m["id"][len("compaction_") :]]
            covered.update(range(pos[c.from_message_id], pos[c.to_message_id] + 1))
    assert not covered & {pos[i] for i in original_ids}  # nothing from a replaced range
    assert len(covered) + len(original_ids) == len(path)  # and nothing else lost
    applicable = [
        c for c in overlays if pos.get(c.from_message_id, len(path)) <= pos.get(c.to_message_id, -1)
    ]
    if not applicable:
        assert out == path


@given(scenarios())
def test_property_earliest_visible_overlay(
    scenario: tuple[list[Message], list[Compaction]],
) -> None:
    path, overlays = scenario
    out = apply_overlays(path, overlays)
    first = next((m["id"] for m in out if m["id"].startswith("compaction_")), None)
    earliest = earliest_visible_overlay(path, overlays)
    assert (None if earliest is None else f"compaction_{earliest.id}") == first


# -- apply_overlays_encoded: same result, decoding only what is shown ---------------------------


def _encoded(n: int) -> list[tuple[str, str]]:
    return [
        (
            f"m{i}",
            _json.dumps(
                {
                    "id": f"m{i}",
                    "role": "user",
                    "parts": [],
                    "createdAt": f"2026-01-01T00:00:{i:02d}.000Z",
                }
            ),
        )
        for i in range(n)
    ]


@_given(
    _st.integers(1, 25), _st.lists(_st.tuples(_st.integers(0, 24), _st.integers(0, 24)), max_size=5)
)
def test_encoded_matches_decoded(n: int, ranges: list[tuple[int, int]]) -> None:
    rows = _encoded(n)
    comps = [
        _Compaction(
            f"c{k}",
            f"S{k}",
            f"m{min(a, b) % n}",
            f"m{max(a, b) % n}",
            _dt(2026, 1, 1, 0, 0, k, tzinfo=UTC),
        )
        for k, (a, b) in enumerate(ranges)
        if min(a, b) % n <= max(a, b) % n
    ]
    decoded = [_json.loads(data) for _, data in rows]
    assert apply_overlays_encoded(rows, comps, _json.loads) == apply_overlays(decoded, comps)


def test_hidden_messages_are_not_decoded() -> None:
    rows = _encoded(10)
    seen: list[str] = []

    def decode(text: str) -> dict[str, object]:
        message: dict[str, object] = _json.loads(text)
        seen.append(str(message["id"]))
        return message

    overlay = _Compaction("c1", "S", "m1", "m8", _dt(2026, 1, 1, tzinfo=UTC))
    out = apply_overlays_encoded(rows, [overlay], decode)
    assert [m["id"] for m in out] == ["m0", "compaction_c1", "m9"]
    assert out[1]["createdAt"] == "2026-01-01T00:00:08.000Z"  # from the last covered message
    assert sorted(seen) == ["m0", "m8", "m9"]  # m1..m7 never decoded
