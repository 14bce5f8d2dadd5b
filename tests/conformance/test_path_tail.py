"""``get_path_tail`` reads an unbranched tail as the newest rows by ``seq`` and walks the tree
otherwise: both must give exactly the tail of ``get_path`` whatever happened to the tree."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline.store import Store

APP = "app"


def msg(mid: str) -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": mid}]}


def check_tails(store: Store, sid: str) -> None:
    path = store.get_path_encoded(APP, sid)
    head = store.get_head(APP, sid)
    for count in (1, 2, 3, 5, 50):
        tail = store.get_path_tail(APP, sid, count)
        assert [(row[0], row[1]) for row in tail] == [tuple(row) for row in path][-count:]
        if head is not None:  # with a leaf id the store always walks the tree: the oracle
            assert tail == store.get_path_tail(APP, sid, count, leaf_id=head["id"])


def test_tail_after_branching_checkout_and_deleting_a_middle_message(store: Store) -> None:
    store.append_messages(APP, "s", [msg(f"m{i}") for i in range(6)])
    check_tails(store, "s")
    store.append_messages(APP, "s", [msg("b1"), msg("b2")], parent_id="m2")  # a branch
    check_tails(store, "s")
    store.set_head(APP, "s", "m5")  # back to the older branch: not the newest seq
    check_tails(store, "s")
    assert [r[0] for r in store.get_path_tail(APP, "s", 3)] == ["m3", "m4", "m5"]
    store.delete_messages(APP, "s", ["m4"])  # the chain to m5 is broken at m4
    check_tails(store, "s")
    store.set_head(APP, "s", "b2")
    check_tails(store, "s")
    assert store.get_path_tail(APP, "nothing", 5) == []


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "branch", "head", "delete"]), st.integers(0, 30)),
        max_size=25,
    )
)
def test_tail_matches_the_path_after_any_operations(
    store: Store, ops: list[tuple[str, int]]
) -> None:
    sid = f"h{abs(hash(tuple(ops)))}"
    ids: list[str] = []
    for op, n in ops:
        if op == "add" or not ids:
            ids.append(f"x{len(ids)}")
            store.append_messages(APP, sid, [msg(ids[-1])])
        elif op == "branch":
            parent = ids[n % len(ids)]
            if store.get_message(APP, sid, parent) is not None:
                ids.append(f"x{len(ids)}")
                store.append_messages(APP, sid, [msg(ids[-1])], parent_id=parent)
        elif op == "head":
            if store.get_message(APP, sid, ids[n % len(ids)]) is not None:
                store.set_head(APP, sid, ids[n % len(ids)])
        else:
            store.delete_messages(APP, sid, [ids[n % len(ids)]])
        check_tails(store, sid)
