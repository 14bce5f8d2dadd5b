"""The web viewer in a real Chromium against a real uvicorn (see conftest.py): the key prompt,
the session list, the tree with its head path, a branch and a compaction, checkout by click
(checked through the API), search with a jump to the hit, panels, live updates, keyboard use,
and markup in messages shown as text."""

from __future__ import annotations

import re
import urllib.error
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails) with the reason
    expect = None

Server = Any  # conftest.Server (test modules cannot import conftest under importlib mode)

pytestmark = pytest.mark.timeout(180)


def shot(page: Any, artifacts: Path, name: str) -> Path:
    """Save a screenshot of the page and print where it went."""
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def open_viewer(page: Any, server: Server, hash_: str = "") -> None:
    page.goto(f"{server.base}/ui/{hash_}")
    dialog = page.locator("#key-dialog")
    expect(dialog).to_be_visible()
    page.fill("#key-input", server.key)
    page.click("#key-form button[type=submit]")
    expect(dialog).to_be_hidden()


def node(page: Any, message_id: str) -> Any:
    return page.locator(f'li.node[data-id="{message_id}"]')


def test_key_is_asked_once_and_kept_for_the_tab(page: Any, server: Server, artifacts: Path) -> None:
    page.goto(f"{server.base}/ui/")
    expect(page.locator("#key-dialog")).to_be_visible()
    shot(page, artifacts, "01-key-prompt")
    page.fill("#key-input", "tl_nothere_wrong")
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-error")).to_contain_text("not accepted")
    page.fill("#key-input", server.key)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-dialog")).to_be_hidden()
    links = page.locator(".session-link")
    expect(links).to_have_count(3)
    assert page.evaluate("sessionStorage.getItem('threadline.apiKey')") == server.key
    assert page.evaluate("localStorage.length") == 0
    page.reload()  # same tab: the key is still there, no prompt
    expect(page.locator(".session-link")).to_have_count(3)
    expect(page.locator("#key-dialog")).to_be_hidden()
    page.fill("#session-filter", "porto")
    expect(page.locator(".session-link")).to_have_count(1)
    expect(page.locator(".session-link")).to_contain_text("Weekend in Porto")


def test_tree_branch_summary_and_checkout_by_click(
    page: Any, server: Server, artifacts: Path
) -> None:
    ids = server.ids
    open_viewer(page, server, "#/s/lisbon")
    # The head path: every message of it on the main line, the head marked.
    head = node(page, ids["head"])
    expect(head).to_have_class(re.compile(r"\bis-head\b"))
    main = page.locator(".conversation > ol.thread.main")
    on_path = main.locator(":scope > li.node.on-path")
    expect(on_path).to_have_count(7)  # u1, a2, the summary, u3, a4, u4, t2
    expect(page.locator(".stats")).to_contain_text("12 messages")
    # The other branch is collapsed under u1; its messages are not shown yet.
    toggle = node(page, "u1").locator(".branch-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_contain_text("3 messages")
    expect(node(page, ids["other_leaf"])).to_have_count(0)
    # The compaction is a summary node; the originals open under it.
    summary = page.locator("li.node.summary")
    expect(summary).to_contain_text("Cervejaria Ramiro (4.7)")
    expect(node(page, ids["overlay_from"])).to_have_count(0)
    shot(page, artifacts, "02-session")
    summary.locator(".summary-toggle").click()
    for original in ("u2", "t1", "a3"):
        expect(node(page, original)).to_be_visible()
    expect(node(page, "t1")).to_contain_text("search_restaurants")
    shot(page, artifacts, "03-summary-expanded")
    # Check out the other branch's leaf by clicking it; the API sees the head move.
    assert server.head_id("lisbon") == ids["head"]
    toggle.click()
    leaf = node(page, ids["other_leaf"])
    expect(leaf).to_be_visible()
    leaf.locator("button.checkout").click()
    expect(node(page, ids["other_leaf"])).to_have_class(re.compile(r"\bis-head\b"))
    assert server.head_id("lisbon") == ids["other_leaf"]
    # Now the old head path is the collapsed branch, and its leaf can be checked out back.
    expect(main.locator(":scope > li.node.on-path")).to_have_count(4)  # u1, a1, u1b, a1b
    expect(node(page, ids["head"])).to_have_count(0)
    shot(page, artifacts, "04-after-checkout")
    back = node(page, "u1").locator(".branch-toggle")
    back.click()
    node(page, ids["head"]).locator("button.checkout").click()
    expect(node(page, ids["head"])).to_have_class(re.compile(r"\bis-head\b"))
    assert server.head_id("lisbon") == ids["head"]


def test_search_in_a_session_jumps_into_collapsed_places(
    page: Any, server: Server, artifacts: Path
) -> None:
    open_viewer(page, server, "#/s/lisbon")
    expect(node(page, "u1")).to_be_visible()
    # A hit inside the compaction: the jump opens the summary.
    page.fill("#session-q", "seafood")
    page.press("#session-q", "Enter")
    hit = page.locator('#session-results button.hit[data-hit="a3"]')
    expect(hit).to_be_visible()
    expect(hit.locator("mark").first).to_have_text(re.compile("seafood", re.I))
    shot(page, artifacts, "05-search-results")
    hit.click()
    target = node(page, "a3")
    expect(target).to_be_visible()
    expect(target).to_be_in_viewport()
    expect(target.locator(":scope > .card")).to_be_focused()
    # A hit on the collapsed branch: the jump opens the branch.
    page.fill("#session-q", "fado houses")
    page.press("#session-q", "Enter")
    page.locator('#session-results button.hit[data-hit="a1b"]').click()
    expect(node(page, "a1b")).to_be_in_viewport()
    shot(page, artifacts, "06-jumped-to-hit")


def test_search_across_sessions_opens_the_hit(page: Any, server: Server, artifacts: Path) -> None:
    open_viewer(page, server)
    page.fill("#global-q", "francesinha")
    page.press("#global-q", "Enter")
    hit = page.locator('button.hit[data-hit="p1"]')
    expect(hit).to_contain_text("porto")
    shot(page, artifacts, "07-search-all")
    hit.click()
    expect(page).to_have_url(re.compile(r"#/s/porto/m/p1$"))
    expect(node(page, "p1")).to_be_in_viewport()
    expect(page.locator(".session-link.active")).to_contain_text("Weekend in Porto")


def test_tool_calls_attachments_blocks_and_state(
    page: Any, server: Server, artifacts: Path
) -> None:
    open_viewer(page, server, "#/s/lisbon")
    tool = node(page, "t2").locator("details.tool")
    expect(tool.locator(".tool-name")).to_have_text("get_weather")
    tool.locator("summary").click()
    expect(tool).to_contain_text('"city": "Sintra"')
    expect(tool).to_contain_text('"forecast": "sunny"')
    image = node(page, "u3").locator("img.preview")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    expect(node(page, "u3").locator(".attachment")).to_contain_text("palette.png")
    blocks = page.locator("#blocks-panel")
    expect(blocks).to_contain_text("memory")
    expect(blocks).to_contain_text("Likes seafood.")
    state = page.locator("#state-panel")
    expect(state).to_contain_text("budget_eur")
    expect(state).to_contain_text("1200")
    expect(page.locator("#summaries-panel")).to_contain_text("u2 → a3")
    shot(page, artifacts, "08-tool-and-panels")


def test_markup_in_a_message_is_shown_as_text(page: Any, server: Server, artifacts: Path) -> None:
    open_viewer(page, server, "#/s/hostile")
    card = node(page, "x1").locator(".card-body")
    expect(card).to_contain_text('<img src=x onerror="window.__pwned = 1">')
    expect(card).to_contain_text("<script>window.__pwned = 2</script>")
    assert card.locator("img, script, b").count() == 0
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned === undefined")
    shot(page, artifacts, "09-markup-as-text")


def test_live_update_shows_a_message_appended_elsewhere(page: Any, server: Server) -> None:
    open_viewer(page, server, "#/s/porto")
    expect(node(page, "p2")).to_be_visible()
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
    server.call(
        "POST",
        "sessions/porto/messages",
        {"id": "p3", "role": "user", "parts": [{"type": "text", "text": "And port wine?"}]},
    )
    expect(node(page, "p3")).to_be_visible(timeout=20_000)
    expect(node(page, "p3")).to_have_class(re.compile(r"\bis-head\b"))


def test_keyboard_only(page: Any, server: Server) -> None:
    open_viewer(page, server, "#/s/lisbon")
    expect(node(page, "u1")).to_be_visible()
    page.keyboard.press("/")
    expect(page.locator("#session-q")).to_be_focused()
    page.keyboard.press("Escape")
    toggle = node(page, "u1").locator(".branch-toggle")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(node(page, "a1")).to_be_visible()
    checkout = node(page, "a1b").locator("button.checkout")
    checkout.focus()
    expect(checkout).to_be_focused()


def test_a_refused_key_asks_again(page: Any, server: Server) -> None:
    page.goto(f"{server.base}/ui/")
    page.evaluate("sessionStorage.setItem('threadline.apiKey', 'tl_revoked_key')")
    page.goto(f"{server.base}/ui/#/s/lisbon")
    expect(page.locator("#key-dialog")).to_be_visible()
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.call("GET", "sessions", key="tl_revoked_key")
    assert refused.value.code == 401


def test_overview_in_light_and_dark(browser: Any, server: Server, artifacts: Path) -> None:
    """The picture of docs/viewer.md, in both colour schemes (which really differ)."""
    backgrounds = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 1440, "height": 1000}, color_scheme=scheme)
        try:
            tab = context.new_page()
            open_viewer(tab, server, "#/s/lisbon")
            node(tab, "u1").locator(".branch-toggle").click()
            expect(node(tab, "a1b")).to_be_visible()
            tab.evaluate("document.querySelector('#main').scrollTop = 0")  # the title too
            tab.wait_for_timeout(300)
            backgrounds[scheme] = tab.evaluate("getComputedStyle(document.body).backgroundColor")
            shot(tab, artifacts, f"10-overview-{scheme}")
        finally:
            context.close()
    assert backgrounds["light"] != backgrounds["dark"]


def test_an_attachment_stored_out_of_row_loads_on_demand(page: Any, server: Server) -> None:
    open_viewer(page, server, "#/s/porto")
    chip = node(page, "p_photo").locator(".attachment")
    expect(chip).to_contain_text("queue.png")
    expect(chip).to_contain_text("KB")  # the size from the reference, nothing downloaded yet
    assert node(page, "p_photo").locator("img").count() == 0
    chip.locator("button", has_text="preview").click()
    image = node(page, "p_photo").locator("img.preview")
    expect(image).to_be_visible()
    assert image.evaluate("img => img.complete && img.naturalWidth") == 300


def test_a_deleted_session_ends_the_live_view(page: Any, server: Server) -> None:
    """The stream's ``gone`` event: the view says the session is gone and live is off."""
    server.call("POST", "sessions/doomed/messages", {"id": "d1", "role": "user", "content": "hi"})
    open_viewer(page, server, "#/s/doomed")
    expect(node(page, "d1")).to_be_visible()
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
    server.call("DELETE", "sessions/doomed")
    expect(page.get_by_text("Session not found")).to_be_visible(timeout=20_000)
    expect(page.locator("#live")).to_be_hidden()


def test_an_edit_and_a_delete_made_elsewhere_redraw_the_live_view(
    page: Any, server: Server
) -> None:
    """The stream's ``message_updated`` and ``messages_deleted`` events reload the view."""
    server.call("POST", "sessions/faro/messages", {"id": "f1", "role": "user", "content": "hi"})
    server.call("POST", "sessions/faro/messages", {"id": "f2", "role": "user", "content": "two"})
    open_viewer(page, server, "#/s/faro")
    expect(node(page, "f2")).to_be_visible()
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"))
    server.call("PUT", "sessions/faro/messages/f1", {"role": "user", "content": "edited elsewhere"})
    expect(node(page, "f1")).to_contain_text("edited elsewhere", timeout=20_000)
    server.call("DELETE", "sessions/faro/messages/f2")
    expect(node(page, "f2")).to_have_count(0, timeout=20_000)
