"""The viewer's tree model (static/js/tree.js) in Chromium, without a server: the ES modules are
served from the package directory through Playwright's request routing.

- ``visibleOverlays`` is the JavaScript twin of ``threadline.compaction.visible_overlays``: a
  hypothesis property checks they pick the same spans on random paths and overlays;
- a 5,000-message chat with 50 branches builds and renders without recursion, every message
  in the model once, the main line drawn whole.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline.compaction import visible_overlays
from threadline.types import Compaction

pytestmark = pytest.mark.timeout(300)


_T0 = datetime(2026, 1, 1, tzinfo=UTC)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    length=st.integers(0, 12),
    raw=st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13), st.integers(0, 4)), max_size=6),
)
def test_visible_overlays_matches_the_library(
    model_page: Any, length: int, raw: list[tuple[int, int, int]]
) -> None:
    path = [f"m{i}" for i in range(length)]
    compactions = [
        Compaction(f"c{n}", f"summary {n}", f"m{a}", f"m{b}", _T0 + timedelta(seconds=t))
        for n, (a, b, t) in enumerate(raw)
    ]
    expected = [
        (s.start, s.end, s.compaction.id)
        for s in visible_overlays([{"id": i} for i in path], compactions)
    ]
    overlays = [
        {"id": c.id, "summary": c.summary, "from": c.from_message_id, "to": c.to_message_id,
         "createdAt": c.created_at.isoformat().replace("+00:00", "Z")}
        for c in compactions
    ]  # fmt: skip
    got = model_page.evaluate(
        "([path, overlays]) => window.tree.visibleOverlays(path, overlays)"
        ".map((s) => [s.start, s.end, s.overlay.id])",
        [path, overlays],
    )
    assert [tuple(span) for span in got] == expected


def test_a_long_chat_with_many_branches_builds_without_recursion(model_page: Any) -> None:
    result = model_page.evaluate(
        """() => {
          const messages = [];
          let parent = null;
          for (let i = 0; i < 5000; i += 1) {
            const id = `m${i}`;
            messages.push({ id, parentId: parent, message: { id, role: i % 2 ? "assistant" : "user",
              parts: [{ type: "text", text: `message ${i}` }] } });
            parent = id;
          }
          for (let b = 0; b < 50; b += 1) {  // 50 branches of 3 messages off every 100th message
            let at = `m${b * 100}`;
            for (let k = 0; k < 3; k += 1) {
              const id = `b${b}_${k}`;
              messages.push({ id, parentId: at, message: { id, role: "assistant", parts: [] } });
              at = id;
            }
          }
          const tree = window.tree.buildTree(messages, "m4999", [
            { id: "c1", summary: "s", from: "m10", to: "m500", createdAt: "2026-01-01T00:00:00Z" },
          ]);
          const seen = new Map();
          for (const line of tree.lines.values()) {
            for (const item of line.items) {
              const inner = item.kind === "summary" ? item.items : [item];
              for (const m of inner) seen.set(m.id, (seen.get(m.id) || 0) + 1);
            }
          }
          const main = tree.lines.get(tree.main);
          const view = { sessionId: "s", expandedLines: new Set(), expandedSummaries: new Set(),
            onCheckout: () => {} };
          document.body.appendChild(window.render.renderConversation(tree, view));
          const rendered = document.querySelectorAll(".thread.main > li.node").length;
          const toggles = document.querySelectorAll(".branch-toggle").length;
          return {
            lines: tree.lines.size, seen: seen.size, once: [...seen.values()].every((n) => n === 1),
            mainItems: main.items.length, mainSize: main.size, rendered, toggles,
            reveal: window.tree.revealPath(tree, "b49_2"),
            revealHidden: window.tree.revealPath(tree, "b3_0"),
          };
        }"""
    )
    assert result["seen"] == 5150 and result["once"]
    assert result["lines"] == 51
    assert result["mainSize"] == 5150
    assert result["mainItems"] == 5000 - 491 + 1  # m10..m500 folded into one summary
    assert result["rendered"] == result["mainItems"]
    assert result["toggles"] == 50 - 5  # the branches off m100..m500 sit inside the summary
    assert result["reveal"] == {"lines": ["line:b49_0"], "summaries": []}
    assert result["revealHidden"] == {"lines": ["line:b3_0"], "summaries": ["c1"]}


def test_a_call_and_its_result_stored_apart_are_one_answered_step(model_page: Any) -> None:
    """Amendment 22: the call's card shows the result's state and output (not "called"),
    on the branch the result is on; a result off the call's path answers nothing."""
    result = model_page.evaluate(
        """() => {
          const call = { type: "tool-weather", toolCallId: "c1", toolName: "weather",
            state: "input-available", input: { city: "Oslo" } };
          const answer = { type: "tool-weather", toolCallId: "c1", toolName: "weather",
            state: "output-error", errorText: "station offline" };
          const messages = [
            { id: "u", parentId: null, message: { id: "u", role: "user",
              parts: [{ type: "text", text: "weather?" }] } },
            { id: "a", parentId: "u", message: { id: "a", role: "assistant", parts: [call] } },
            { id: "t", parentId: "a", message: { id: "t", role: "tool", parts: [answer] } },
            { id: "x", parentId: "u", message: { id: "x", role: "tool", parts: [answer] } },
          ];
          const tree = window.tree.buildTree(messages, "t", []);
          const view = { sessionId: "s", expandedLines: new Set(), expandedSummaries: new Set(),
            onCheckout: () => {} };
          const box = document.createElement("div");
          box.appendChild(window.render.renderConversation(tree, view));
          const card = box.querySelector('[data-id="a"] .card-body');
          return {
            answered: [...tree.answers.keys()],
            from: tree.answers.get("a").get("c1").messageId,
            pill: card.querySelector(".pill").textContent,
            text: card.textContent,
          };
        }"""
    )
    assert result["answered"] == ["a"] and result["from"] == "t"
    assert result["pill"] == "error"  # the result's state, not "called"
    assert "station offline" in result["text"] and "Oslo" in result["text"]
