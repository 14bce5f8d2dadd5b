"""Conformance: random operation sequences checked against a small reference model.

The model is an independent, naive re-statement of the tree contract (tree, head, delete rules,
overlay rules, recent-history window). Hypothesis drives random sequences of appends (default,
explicit, root, re-append), checkouts, updates, deletes and overlays, and every read of the
session must match the model. Each example uses a fresh session id on the same store.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import Session
from threadline.errors import MessageNotFoundError

OPS = ["append", "append", "append", "append_to", "append_root", "reappend", "checkout",
       "update", "delete", "compact", "batch", "clear"]

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@dataclass
class Model:
    """Naive reference: parent links, seq, head, overlays in creation order."""

    parent: dict[str, str | None] = field(default_factory=dict)
    seq: dict[str, int] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    head: str | None = None
    overlays: list[tuple[str, str, str]] = field(default_factory=list)  # (summary, from, to)
    counter: int = 0
    fresh: int = 0

    def new_id(self) -> str:
        self.fresh += 1
        return f"n{self.fresh}"

    def add(self, mid: str, parent: str | None, text: str) -> None:
        self.counter += 1
        self.parent[mid], self.seq[mid], self.text[mid] = parent, self.counter, text
        self.head = mid

    def path(self, leaf: str | None) -> list[str]:
        out: list[str] = []
        node = leaf
        while node is not None and node in self.parent:
            out.append(node)
            node = self.parent[node]
        return out[::-1]

    def children(self, mid: str) -> list[str]:
        return sorted((c for c, p in self.parent.items() if p == mid), key=self.seq.__getitem__)

    def delete(self, ids: list[str]) -> int:
        gone = [i for i in dict.fromkeys(ids) if i in self.parent]
        for i in gone:
            del self.parent[i], self.seq[i], self.text[i]
        if self.head in gone:
            leaves = [m for m in self.parent if not self.children(m)]
            self.head = max(leaves, key=self.seq.__getitem__) if leaves else None
        return len(gone)

    def apply_overlays(self, path: list[str]) -> list[str]:
        """§11: walk from the root; at each message the newest overlay starting there and
        ending further along the path replaces the range; starts inside a range are ignored."""
        pos = {m: i for i, m in enumerate(path)}
        out: list[str] = []
        i = 0
        while i < len(path):
            best = None
            for n, (_, frm, to) in enumerate(self.overlays):
                if frm == path[i] and to in pos and pos[to] >= i:
                    best = n  # later in creation order = newer
            if best is None:
                out.append(path[i])
                i += 1
            else:
                out.append(f"overlay:{self.overlays[best][0]}")
                i = pos[self.overlays[best][2]] + 1
        return out


def observed_ids(history: list[dict[str, Any]]) -> list[str]:
    """History ids with overlay messages named by their (unique) summary, as in the model."""
    return [f"overlay:{m['parts'][0]['text']}" if m["id"].startswith("compaction_") else m["id"]
            for m in history]


def pick(items: list[str], n: int) -> str | None:
    return items[n % len(items)] if items else None


def run_op(session: Session, model: Model, op: str, n: int) -> None:
    existing = sorted(model.parent, key=model.seq.__getitem__)
    if op == "append":
        mid = model.new_id()
        session.append_message({"id": mid, "role": "user", "content": f"text {mid}"})
        model.add(mid, model.head, f"text {mid}")
    elif op == "append_to":
        target = pick(existing, n)
        mid = model.new_id()
        if target is None or n % 7 == 0:
            with pytest.raises(MessageNotFoundError):
                session.append_message({"id": mid, "role": "user", "content": "x"}, "missing")
            return
        session.append_message({"id": mid, "role": "user", "content": f"text {mid}"}, target)
        model.add(mid, target, f"text {mid}")
    elif op == "append_root":
        mid = model.new_id()
        session.append_message({"id": mid, "role": "user", "content": f"text {mid}"}, None)
        model.add(mid, None, f"text {mid}")
    elif op == "reappend":
        target = pick(existing, n)
        if target is not None:
            out = session.append_message({"id": target, "role": "user", "content": "changed"},
                                         pick(existing, n // 3))
            assert out["parts"] == [{"type": "text", "text": model.text[target]}]
    elif op == "checkout":
        target = pick(existing, n)
        if target is not None:
            session.checkout(target)
            model.head = target
    elif op == "update":
        target = pick(existing, n)
        if target is not None:
            text = f"updated {target} " + "é" * (n % 50)
            session.update_message({"id": target, "role": "assistant", "content": text})
            model.text[target] = text
    elif op == "delete":
        targets = [t for t in (pick(existing, n), pick(existing, n // 5)) if t is not None]
        assert session.delete_messages([*targets, "never-existed"]) == model.delete(targets)
    elif op == "compact":
        to = pick(existing, n)
        if to is not None:
            path = model.path(to)
            frm = path[(n // 3) % len(path)]
            summary = f"summary {len(model.overlays)}"
            session.add_compaction(summary, frm, to)
            model.overlays.append((summary, frm, to))
    elif op == "clear":
        session.clear_messages()
        model.parent.clear()
        model.seq.clear()
        model.text.clear()
        model.overlays.clear()
        model.head = None
        assert session.get_compactions() == []
        assert session.search("text") == []
    elif op == "batch":
        a, b = model.new_id(), model.new_id()
        old = pick(existing, n)
        batch = [{"id": a, "role": "user", "content": f"text {a}"}]
        if old is not None:
            batch.append({"id": old, "role": "user", "content": "ignored"})
        batch.append({"id": b, "role": "user", "content": f"text {b}"})
        session.append_messages(batch)
        model.add(a, model.head, f"text {a}")
        model.add(b, old if old is not None else a, f"text {b}")


def check(session: Session, model: Model, n: int) -> None:
    leaf = session.get_latest_leaf()
    assert (None if leaf is None else leaf["id"]) == model.head
    raw = model.path(model.head)
    assert session.get_path_length() == len(raw)
    history = session.get_history()
    assert observed_ids(history) == model.apply_overlays(raw)
    for m in history:
        if not m["id"].startswith("compaction_"):
            assert m["parts"] == [{"type": "text", "text": model.text[m["id"]]}]
    for mid in list(model.parent)[:: max(1, len(model.parent) // 4)]:
        assert [c["id"] for c in session.get_branches(mid)] == model.children(mid)
        assert session.get_path_length(mid) == len(model.path(mid))
        assert observed_ids(session.get_history(mid)) == model.apply_overlays(
            model.path(mid))
    # recent history: byte window over the raw head path, overlays applied inside it only
    stored = [session.get_message(mid) for mid in raw]
    sizes = [size(m) for m in stored if m is not None]
    budget = max(0, sum(sizes[len(sizes) // 2:]) + (n % 3) - 1)
    recent = session.get_recent_history(budget)
    keep = 0
    while keep < len(sizes) and sum(sizes[len(sizes) - keep - 1:]) <= budget:
        keep += 1
    keep = max(keep, min(1, len(sizes)))
    window = raw[len(raw) - keep:]
    assert observed_ids(recent.messages) == model.apply_overlays(window)
    assert recent.truncated == (keep < len(raw))
    assert recent.total_content_bytes == sum(sizes)


@SETTINGS
@given(ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 10_000)), max_size=30))
def test_random_operations_match_the_model(store: Any, ops: list[tuple[str, int]]) -> None:
    session = Session.create(store).for_session(f"model-{uuid.uuid4().hex}")
    model = Model()
    for op, n in ops:
        run_op(session, model, op, n)
        check(session, model, n)
