"""The extractive summary claims only what its range holds: its counts, its user requests in
order, its last user and assistant messages, and points and open items found in the range —
also when a later compaction extends an earlier summary (issue 25: the demo's summary named
one topic for a range of several and a "last user message" that was not the last)."""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import threadline
from threadline.compaction.function import build_summary_prompt
from threadline.messages import assistant, text_of, user
from threadline.session import Session
from threadline.summarizers import extractive
from threadline.types import Message

SECTIONS = ["## Topic", "## Key Points", "## Current State", "## Open Items"]
# No "[" (a line "[user]" reads as a new message), no ":" / "(" (tool lines, "(no text)").
WORD = st.text(alphabet=string.ascii_letters + string.digits + ".?!,'", min_size=1, max_size=9)
LINE = st.lists(WORD, min_size=1, max_size=12).map(" ".join)
TEXT = st.lists(LINE, max_size=3).map("\n".join)


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for index in range(draw(st.integers(1, 14))):
        role = draw(st.sampled_from(["user", "user", "assistant", "assistant", "tool"]))
        parts: list[dict[str, Any]] = []
        text = draw(TEXT)
        if text and role != "tool":
            parts.append({"type": "text", "text": text})
        if role != "user" and draw(st.booleans()):
            name = draw(st.sampled_from(["search_trains", "book_hotel"]))
            parts.append(
                {"type": f"tool-{name}", "toolCallId": f"c{index}", "state": "output-available",
                 "input": {"q": text[:20]}, "output": "ok"}
            )  # fmt: skip
        out.append({"id": f"m{index}", "role": role, "parts": parts})
    return out


def norm(text: str) -> str:
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    text = norm(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def section(summary: str, name: str) -> list[str]:
    match = re.search(rf"^{re.escape(name)}\n(.*?)(?=^## |\Z)", summary, re.S | re.M)
    assert match is not None, name
    return [line for line in match.group(1).splitlines() if line.strip()]


def bullets(summary: str, name: str) -> list[str]:
    lines = section(summary, name)
    assert all(line.startswith("- ") for line in lines), lines
    return [line[2:] for line in lines if line != "- None."]


def found_in(claim: str, texts: list[str]) -> bool:
    stem = norm(claim.removesuffix("…"))
    return any(stem in norm(text) for text in texts)


def check(summary: str, covered: list[Message]) -> None:
    """Every claim of ``summary`` holds for ``covered`` (the range it stands for)."""
    assert [line for line in summary.splitlines() if line.startswith("## ")] == SECTIONS
    roles = [m["role"] for m in covered]
    counts = (roles.count("user"), roles.count("assistant"), roles.count("tool"))
    topic = section(summary, "## Topic")
    plural = "" if len(covered) == 1 else "s"
    other = f", {counts[2]} other" if counts[2] else ""
    assert topic[0] == (
        f"Covers {len(covered)} message{plural} ({counts[0]} user, {counts[1]} assistant{other})."
    )
    requests = [text_of(m) for m in covered if m["role"] == "user" and text_of(m).strip()]
    listed = [re.match(r"^(\d+)\. (.*)$", line) for line in topic[2:]]
    numbered = [(int(m.group(1)), m.group(2)) for m in listed if m]
    assert [n for n, _ in numbered] == sorted({n for n, _ in numbered})  # in order, once each
    for number, text in numbered:
        assert text == clip(requests[number - 1], 160)
    if requests:
        assert numbered[-1][0] == len(requests) and numbered[0][0] == 1
        assert topic[1] == ("User request:" if len(requests) == 1 else "User requests, in order:")
    else:
        assert topic[1:] == ["No user request with text in this range."]
    state = bullets(summary, "## Current State")
    for role in ("user", "assistant"):
        last = next((m for m in reversed(covered) if m["role"] == role), None)
        lines = [s for s in state if s.startswith(f"Last {role} message in this range: ")]
        if last is None:
            assert lines == []
        else:
            claimed = lines[0].split(": ", 1)[1]
            if text_of(last).strip():
                assert claimed == clip(text_of(last), 200)
            else:
                assert claimed.startswith("(no text")
    texts = [text_of(m) for m in covered]
    tools = {p["type"][5:] for m in covered for p in m["parts"] if p["type"].startswith("tool-")}
    for claim in bullets(summary, "## Key Points") + bullets(summary, "## Open Items"):
        tool = re.fullmatch(r"Used tool (.+)\.", claim)
        assert (tool is not None and tool.group(1) in tools) or found_in(claim, texts), claim


@settings(max_examples=150, deadline=None)
@given(messages(), st.integers(1, 8))
def test_one_summary_claims_only_its_range(covered: list[Message], max_points: int) -> None:
    check(extractive(max_points=max_points)(build_summary_prompt(covered, None, 100)), covered)


@settings(max_examples=150, deadline=None)
@given(messages(), st.integers(0, 14), st.integers(1, 8), st.integers(20, 400))
def test_an_extended_summary_claims_only_the_whole_range(
    covered: list[Message], cut: int, max_points: int, target: int
) -> None:
    summarize = extractive(max_points=max_points)
    cut = min(cut, len(covered) - 1)
    earlier = summarize(build_summary_prompt(covered[:cut], None, target)) if cut else None
    check(summarize(build_summary_prompt(covered[cut:], earlier, target)), covered)


def test_the_demos_compaction_names_every_request_of_its_range(tmp_path: Path) -> None:
    topics = ["flights", "hotels", "museums", "trams", "food", "fado", "beaches", "day trips"]
    with threadline.connect(str(tmp_path / "demo.db")) as store:
        session = (
            Session(store, session_id="long-chat")
            .on_compaction(threadline.create_compact_function(extractive(), tail_token_budget=60))
            .compact_after(150)
        )
        for topic in topics:
            session.append_message(user(f"Tell me about {topic} in Lisbon. Any tips?"))
            session.append_message(assistant(f"For {topic}: book early, ask locals, check prices."))
        compactions = session.get_compactions()
        assert len(compactions) > 1  # extended again and again
        newest = compactions[-1]
        path = store.get_path("default", "long-chat")
        ids = [m["id"] for m in path]
        covered = path[ids.index(newest.from_message_id) : ids.index(newest.to_message_id) + 1]
        check(newest.summary, covered)
        topic = "\n".join(section(newest.summary, "## Topic"))
        assert "1. Tell me about museums" in topic and "5. Tell me about beaches" in topic
