"""A big session in the studio (a smaller stand-in for the benchmark's 100,000 messages, see
benchmarks/studio.py): it opens at its head from one page of the path, pages back as the top is
scrolled into view, never holds more than a bounded number of cards in the DOM, opens a branch
as its own path, jumps to a message not loaded yet, and shows an append live."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails) with the reason
    expect = None

Server = Any  # conftest.Server

pytestmark = pytest.mark.timeout(300)

SID = "big"
COUNT = 2600  # over the viewer's TREE_LIMIT (2,000): the paged view
MAX_CARDS = 160 + 40  # paged.js MAX_ITEMS, and MAX_ORIGINALS of the one summary opened


def text(mid: str, body: str, role: str) -> dict[str, Any]:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body}]}


@pytest.fixture(scope="module")
def big(server: Server) -> str:
    """A session of COUNT messages on one line, with branches off m10 and m2590."""
    server.call("POST", "sessions", {"session_id": SID, "name": "Big one"})
    for start in range(1, COUNT + 1, 1000):
        batch = [
            text(f"m{i}", f"message number {i}", "user" if i % 2 else "assistant")
            for i in range(start, min(COUNT, start + 999) + 1)
        ]
        server.call("POST", f"sessions/{SID}/messages", {"messages": batch})
    for fork, name in (("m10", "early"), ("m2590", "late")):
        branch = [
            text(f"{name}-1", f"{name} branch", "assistant"),
            text(f"{name}-2", "more", "user"),
        ]
        server.call("POST", f"sessions/{SID}/messages", {"messages": branch, "parent_id": fork})
    server.call("PUT", f"sessions/{SID}/head", {"leaf_id": f"m{COUNT}"})
    import threadline  # a summary of m2570..m2580, on the first page of the head's path

    store = threadline.connect(server.db)
    try:
        store.add_compaction(server.ids["app"], SID, "**Eleven** messages.", "m2570", "m2580")
        # one that starts two pages back: it applies once its start is loaded
        store.add_compaction(server.ids["app"], SID, "Sixty-six messages.", "m2500", "m2565")
    finally:
        store.close()
    return SID


def open_viewer(page: Any, server: Server, hash_: str) -> None:
    page.goto(f"{server.base}/ui/{hash_}")
    page.fill("#key-input", server.key)
    page.click("#key-form button[type=submit]")


def cards(page: Any) -> int:
    count: int = page.locator("#main li.node").count()
    return count


def test_opens_at_the_head_and_pages_back_with_a_bounded_dom(
    page: Any, server: Server, big: str, artifacts: Path
) -> None:
    open_viewer(page, server, f"#/s/{big}")
    head = page.locator(f'li.node[data-id="m{COUNT}"]')
    expect(head).to_have_class(re.compile(r"\bis-head\b"))
    expect(head).to_be_in_viewport()
    expect(page.locator(".stats")).to_contain_text(f"{COUNT + 4} messages")
    assert cards(page) <= 50  # one page of the path, not the tree
    # The summary stands for its messages, as in the tree view; it opens to them.
    summary = page.locator("li.node.summary")
    expect(summary).to_contain_text("11 messages compacted")
    expect(summary.locator("strong")).to_have_text("Eleven")
    expect(page.locator('li.node[data-id="m2575"]')).to_have_count(0)
    summary.locator(".summary-toggle").click()
    expect(page.locator('li.node[data-id="m2575"]')).to_be_visible()
    # The branch off m2590 shows where it forks.
    expect(page.locator('li.node[data-id="m2590"] button[data-branch="late-1"]')).to_be_visible()
    page.screenshot(path=str(artifacts / "30-big-session-head.png"))
    # Scroll to the top again and again: older pages come, the DOM stays bounded.
    seen_oldest = []
    for i in range(12):
        if i == 3:  # three pages loaded (m2481..): the summary starting at m2500 now applies
            expect(page.locator("li.node.summary")).to_have_count(2)
            sixty = page.locator("li.node.summary", has_text="Sixty-six messages.")
            expect(sixty).to_have_count(1)
            assert page.locator('ol.paged > li.node[data-id="m2563"]').count() == 0
            page.screenshot(path=str(artifacts / "32-big-session-summary-paged-in.png"))
        page.evaluate("document.querySelector('#main').scrollTop = 0")
        page.wait_for_timeout(250)
        first = page.locator("#main ol.paged > li.node").first.get_attribute("data-id")
        seen_oldest.append(int(first.removeprefix("m")))
        assert cards(page) <= MAX_CARDS
    assert seen_oldest[-1] < COUNT - 300, seen_oldest  # it paged back
    assert seen_oldest == sorted(seen_oldest, reverse=True)
    page.screenshot(path=str(artifacts / "31-big-session-paged-back.png"))
    # Something happens meanwhile: the reader is not moved; a button offers the latest.
    server.call("POST", f"sessions/{big}/messages", text("while-away", "new", "user"))
    activity = page.locator("#activity")
    expect(activity).to_be_visible(timeout=20_000)
    assert page.locator("#main ol.paged > li.node").first.get_attribute("data-id") == first
    activity.click()
    expect(page.locator('li.node[data-id="while-away"]')).to_be_in_viewport()
    expect(activity).to_be_hidden()
    server.call("PUT", f"sessions/{big}/head", {"leaf_id": f"m{COUNT}"})
    # Back down: the newer cards come back from memory, still bounded.
    for _ in range(12):
        page.evaluate("document.querySelector('#main').scrollTop = 1e9")
        page.wait_for_timeout(150)
        assert cards(page) <= MAX_CARDS
    expect(head).to_be_attached()


def test_a_branch_opens_as_its_own_path_and_back(page: Any, server: Server, big: str) -> None:
    open_viewer(page, server, f"#/s/{big}")
    page.locator('button[data-branch="late-1"]').click()
    banner = page.locator(".branch-banner")
    expect(banner).to_be_visible()
    expect(page.locator('li.node[data-id="late-2"]')).to_be_visible()
    expect(page.locator(f'li.node[data-id="m{COUNT}"]')).to_have_count(0)
    banner.get_by_role("button", name="Back to the head").click()
    expect(page.locator(f'li.node[data-id="m{COUNT}"]')).to_be_visible()
    expect(banner).to_be_hidden()


def test_a_search_hit_far_back_opens_the_path_to_it(page: Any, server: Server, big: str) -> None:
    open_viewer(page, server, f"#/s/{big}")
    expect(page.locator(f'li.node[data-id="m{COUNT}"]')).to_be_visible()
    page.fill("#session-q", "early branch")
    page.press("#session-q", "Enter")
    page.locator('#session-results button.hit[data-hit="early-1"]').click()
    target = page.locator('li.node[data-id="early-1"]')
    expect(target).to_be_in_viewport()
    expect(page.locator(".branch-banner")).to_be_visible()
    assert cards(page) <= MAX_CARDS


def test_an_append_shows_live_at_the_end(page: Any, server: Server, big: str) -> None:
    open_viewer(page, server, f"#/s/{big}")
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"), timeout=20_000)
    server.call("POST", f"sessions/{big}/messages", text("newest", "just now", "user"))
    newest = page.locator('li.node[data-id="newest"]')
    expect(newest).to_have_class(re.compile(r"\bis-head\b"), timeout=20_000)
    expect(newest).to_be_in_viewport()
    # The studio's actions work in the paged view too: rewind to before the newest message.
    newest.locator(":scope > .card details.menu > summary").click()
    newest.locator(':scope > .card button[data-action="rewind"]').click()
    page.locator("#action-confirm").click()
    head = page.locator(f'li.node[data-id="m{COUNT}"]')
    expect(head).to_have_class(re.compile(r"\bis-head\b"), timeout=20_000)
    assert server.head_id(big) == f"m{COUNT}"
