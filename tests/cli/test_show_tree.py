"""``threadline show`` on trees that broke the old drawing: 10,000 messages with 50
branches, a 1,200-message chat (each message one level deeper in the old recursive tree), a
balanced binary tree (the deepest branch nesting a tree of that size can have), several
roots, and an 80-column terminal — every message drawn exactly once, no line wider than
the terminal, nothing cut without saying so."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

import threadline
from threadline.cli._tree import layout

from .conftest import Run

ID = re.compile(r"\bm\d{5}\b")


def _message(i: int, words: int = 3) -> dict[str, object]:
    text = " ".join(f"word{i}x{k}" for k in range(words))
    return {"id": f"m{i:05d}", "role": "user" if i % 2 else "assistant",
            "parts": [{"type": "text", "text": text}]}  # fmt: skip


def _shown_ids(out: str) -> Counter[str]:
    return Counter(ID.findall(out))


def _check_widths(out: str, width: int) -> None:
    widest = max(cell_len(line) for line in out.splitlines())
    assert widest <= width, widest


def test_ten_thousand_messages_with_fifty_branches(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "big.db")
    with threadline.connect(db) as store:
        store.append_messages("app", "big", [_message(i) for i in range(9000)], None)
        n = 9000
        for b in range(50):  # 20 messages each, forking all along the main line
            branch = [_message(n + k) for k in range(20)]
            store.append_messages("app", "big", branch, f"m{b * 179 + 3:05d}")
            n += 20
        store.set_head("app", "big", "m08999")
    result = run("show", db, "big", "--app", "app")
    assert result.code == 0, result.err
    counts = _shown_ids(result.out)
    assert len(counts) == 10_000 and set(counts.values()) == {1}
    assert result.out.count("← head") == 1
    assert result.out.count("├─") == 50  # each branch opens once
    _check_widths(result.out, 80)


def test_a_1200_message_chat(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "long.db")
    with threadline.connect(db) as store:
        store.append_messages("app", "long", [_message(i, 30) for i in range(1200)])
    result = run("show", db, "long", "--app", "app", "--full")
    assert result.code == 0, result.err
    assert set(_shown_ids(result.out).values()) == {1} and len(_shown_ids(result.out)) == 1200
    assert "word1199x29" in result.out  # the last word of the last message
    _check_widths(result.out, 80)


def test_an_80_column_terminal_cuts_nothing_silently(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "wide.db")
    with threadline.connect(db) as store:
        store.append_messages("app", "chat", [_message(i, 60) for i in range(100)])
    short = run("show", db, "chat", "--app", "app")
    assert len(_shown_ids(short.out)) == 100
    assert short.out.count("more characters (--full shows all)") == 100
    _check_widths(short.out, 80)
    full = run("show", db, "chat", "--app", "app", "--full")
    words = set(re.findall(r"word\d+x\d+", full.out))
    assert len(words) == 100 * 60  # every word of every message
    _check_widths(full.out, 80)
    narrow = run("show", db, "chat", "--app", "app", "--full", "--width", "30")
    assert len(set(re.findall(r"word\d+x\d+", narrow.out))) == 6000
    _check_widths(narrow.out, 30)


def test_a_balanced_binary_tree_and_several_roots(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "binary.db")
    with threadline.connect(db) as store:
        for i in range(1, 1024):
            parent = None if i == 1 else f"m{i // 2:05d}"
            store.append_messages("app", "bin", [_message(i)], parent)
        for i in range(2000, 2003):  # three more roots
            store.append_messages("app", "bin", [_message(i)], None)
    result = run("show", db, "bin", "--app", "app", "--width", "60")
    assert result.code == 0, result.err
    counts = _shown_ids(result.out)
    assert len(counts) == 1026 and set(counts.values()) == {1}
    assert "root 4 of 4" in result.out
    _check_widths(result.out, 60)


def test_show_draws_attachments_and_every_part(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "parts.db")
    image = "data:image/png;base64," + "QUJD" * 200_000
    parts = [
        {"type": "text", "text": "[bold]not markup[/bold]"},
        {"type": "reasoning", "text": "thinking"},
        {"type": "file", "mediaType": "image/png", "filename": "map.png", "url": image},
        {"type": "tool-search", "toolCallId": "c1", "state": "output-error",
         "input": {"q": "x"}, "errorText": "boom"},
        {"type": "data-weather", "data": {"t": 21}},
    ]  # fmt: skip
    with threadline.connect(db) as store:
        store.append_messages("app", "s", [{"id": "m00001", "role": "user", "parts": parts}])
    out = run("show", db, "s", "--app", "app", "--full", "--width", "120").out
    assert "[bold]not markup[/bold]" in out
    assert "💭 thinking" in out
    assert "📎 image/png map.png (600.0 kB inline)" in out
    assert '⚙ search({"q": "x"}) ✗ boom' in out
    assert '[data-weather] {"data": {"t": 21}}' in out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=60))
def test_layout_places_every_message_once(choices: list[int]) -> None:
    nodes: list[tuple[str, str | None]] = []
    for i, choice in enumerate(choices):
        parent = None if i == 0 or choice % 7 == 0 else nodes[choice % i][0]
        nodes.append((f"n{i}", parent))
    rows = [r for r in layout(nodes, [nodes[-1][0]]) if r.kind == "message"]
    assert sorted(r.message_id for r in rows) == sorted(n for n, _ in nodes)
    seen: set[str] = set()
    parent_of = dict(nodes)
    for row in rows:  # preorder: a parent is drawn before its children
        parent = parent_of[row.message_id]
        assert parent is None or parent in seen
        seen.add(row.message_id)


@pytest.mark.parametrize("depth", [5000])
def test_layout_of_a_very_deep_chain_is_flat(depth: int) -> None:
    nodes = [(f"n{i}", f"n{i - 1}" if i else None) for i in range(depth)]
    rows = layout(nodes)
    assert len(rows) == depth and {r.level for r in rows} == {0}
