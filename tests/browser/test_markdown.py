"""The studio's markdown renderer (static/js/markdown.js) in Chromium, without a server: what
it builds for the markdown it supports, and — for any text, hostile or random — only elements
of a fixed safe set, only http(s)/mailto links, and every character of the source that is not
markdown syntax kept as text. Also: a superseded summary is marked."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.timeout(300)

SAFE_TAGS = {
    "DIV", "P", "H3", "H4", "H5", "H6", "PRE", "CODE", "BLOCKQUOTE", "UL", "OL", "LI", "HR",
    "STRONG", "EM", "A",
}  # fmt: skip

RENDER = """(text) => {
  const box = window.md.renderMarkdown(text);
  const elements = [...box.querySelectorAll("*")];
  return {
    tags: [...new Set(elements.map((e) => e.tagName))],
    attributes: [...new Set(elements.flatMap((e) => [...e.attributes].map((a) => a.name)))],
    hrefs: [...box.querySelectorAll("a")].map((a) => a.getAttribute("href")),
    text: box.textContent,
    html: box.innerHTML,
  };
}"""


def render(page: Any, text: str) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(RENDER, text)
    return result


def test_what_it_supports(model_page: Any) -> None:
    out = render(
        model_page,
        "## Title\n\nSome **bold**, *em*, _em too_ and `co*de`.\n\n> quoted\n\n"
        "1. one\n2. two\n\n- [site](https://example.org/x) and [mail](mailto:a@b.c)\n\n---\n\n"
        "```py\nprint('<b>')\n```",
    )
    assert {"H4", "STRONG", "EM", "CODE", "BLOCKQUOTE", "OL", "UL", "LI", "A", "HR", "PRE"} <= set(
        out["tags"]
    )
    assert out["hrefs"] == ["https://example.org/x", "mailto:a@b.c"]
    assert "co*de" in out["text"] and "print('<b>')" in out["text"]


@pytest.mark.parametrize(
    "text",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](data:text/html,<script>alert(1)</script>)",
        "[x](//evil.example/a)",
        "[x](/relative)",
        "[x](vbscript:msgbox)",
        "[x](https:)",
    ],
)
def test_unsafe_links_stay_text(model_page: Any, text: str) -> None:
    out = render(model_page, text)
    assert out["hrefs"] == [] and out["text"] == text


def test_raw_html_is_text(model_page: Any) -> None:
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><a href="x">'
    out = render(model_page, hostile)
    assert out["tags"] == ["P"] and out["text"] == hostile
    assert model_page.evaluate("window.__pwned === undefined")


def test_intraword_underscores_are_text(model_page: Any) -> None:
    text = "window.__pwned = 1 and snake_case_name and window.__pwned = 2"
    assert render(model_page, text)["text"] == text


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.sampled_from([*"ab <>\"'=/:()[]*_`#>-\n\\&;", "javascript:", "http://x", "1. "]),
        max_size=60,
    ).map("".join)
)
def test_any_text_gives_only_safe_elements(model_page: Any, text: str) -> None:
    out = render(model_page, text)
    assert set(out["tags"]) <= SAFE_TAGS, out
    assert set(out["attributes"]) <= {"class", "href", "target", "rel", "start", "data-lang"}, out
    for href in out["hrefs"]:
        assert href.lower().startswith(("http:", "https:", "mailto:")), out
    # Nothing of the text appears that it did not hold (markup syntax may go, never come).
    visible = out["text"].replace("\n", "")
    assert all(visible.count(c) <= text.count(c) for c in set(visible)), out


def test_a_superseded_summary_is_marked(model_page: Any) -> None:
    marked = model_page.evaluate(
        """() => {
          const messages = ["a", "b", "c"].map((id, i) => ({ id,
            parentId: i ? ["a", "b"][i - 1] : null,
            message: { id, role: "user", parts: [{ type: "text", text: id }] } }));
          const overlay = (superseded) => ({ id: "o", summary: "**sum**", from: "a", to: "b",
            createdAt: "2026-01-01T00:00:00Z", superseded });
          const draw = (superseded) => {
            const tree = window.tree.buildTree(messages, "c", [overlay(superseded)]);
            const view = { sessionId: "s", expandedLines: new Set(), expandedSummaries: new Set() };
            const box = window.render.renderConversation(tree, view);
            const summary = box.querySelector("li.node.summary");
            return [summary.classList.contains("superseded"),
              Boolean(summary.querySelector(".superseded-pill")),
              summary.querySelector(".card-body strong")?.textContent];
          };
          return [draw(true), draw(false)];
        }"""
    )
    assert marked == [[True, True, "sum"], [False, False, "sum"]]
