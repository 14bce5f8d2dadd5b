"""The studio (the viewer's write actions) in a real Chromium against a real uvicorn: every
action is driven by clicks and keys, checked through the API, and seen live (SSE) by a second
open viewer. Screenshots of each view go to the artifacts folder (see conftest.py)."""

from __future__ import annotations

import re
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (or fails) with the reason
    expect = None

Server = Any  # conftest.Server

pytestmark = pytest.mark.timeout(240)

LIVE = 20_000  # ms a live update may take (the SQLite event hub polls)


def shot(page: Any, artifacts: Path, name: str) -> None:
    path = artifacts / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")


def open_viewer(page: Any, server: Server, hash_: str = "") -> None:
    page.goto(f"{server.base}/ui/{hash_}")
    page.fill("#key-input", server.key)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-dialog")).to_be_hidden()


def node(page: Any, message_id: str) -> Any:
    return page.locator(f'li.node[data-id="{message_id}"]')


def live_on(page: Any) -> None:
    expect(page.locator("#live")).to_have_class(re.compile(r"\bon\b"), timeout=LIVE)


@pytest.fixture
def second(browser: Any, server: Server) -> Iterator[Any]:
    """Another viewer (its own tab and key entry), to watch changes arrive live."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.set_default_timeout(15_000)
    try:
        yield tab
    finally:
        context.close()
    assert not errors, f"errors in the second page: {errors}"


def text(mid: str, body: str, role: str = "user") -> dict[str, Any]:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body}]}


def make_session(server: Server, sid: str, count: int = 4, **fields: Any) -> None:
    server.call("POST", "sessions", {"session_id": sid, "name": fields.get("name", sid)})
    messages = [
        text(f"{sid}-{i}", f"message {i} of {sid}", "user" if i % 2 else "assistant")
        for i in range(1, count + 1)
    ]
    server.call("POST", f"sessions/{sid}/messages", {"messages": messages})


def dialog(page: Any) -> Any:
    box = page.locator("#action-dialog")
    expect(box).to_be_visible()
    return box


def menu_action(page: Any, message_id: str, action: str) -> None:
    card = node(page, message_id)
    card.locator(":scope > .card details.menu > summary").click()
    card.locator(f':scope > .card button[data-action="{action}"]').click()


def test_edit_a_writable_block_replace_and_append(
    page: Any, second: Any, server: Server, artifacts: Path
) -> None:
    make_session(server, "blocks-s")
    open_viewer(page, server, "#/s/blocks-s")
    open_viewer(second, server, "#/s/blocks-s")
    live_on(second)
    # The readonly block has no controls; the writable one has Edit and Append.
    expect(page.locator('[data-block="soul"] button')).to_have_count(0)
    page.locator('button[data-edit="memory"]').click()
    box = dialog(page)
    box.locator("#field-content").fill("Likes *quiet* streets.")
    shot(page, artifacts, "20-studio-edit-block")
    box.locator("#action-confirm").click()
    expect(box).to_be_hidden()
    block = server.call("GET", "sessions/blocks-s/blocks/memory")
    assert block["content"] == "Likes *quiet* streets."
    expect(second.locator('[data-block="memory"] .block-content')).to_have_text(
        "Likes *quiet* streets.", timeout=LIVE
    )
    page.locator('button[data-append="memory"]').click()
    box = dialog(page)
    box.locator("#field-content").fill(" Vegetarian.")
    page.keyboard.press("Control+Enter")  # submits from the textarea
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/blocks-s/blocks/memory")["content"].endswith("Vegetarian.")
    expect(second.locator('[data-block="memory"] .block-content')).to_contain_text(
        "Vegetarian.", timeout=LIVE
    )
    # An error from the API is shown in the dialog, which stays open.
    page.locator('button[data-edit="memory"]').click()
    box = dialog(page)
    box.locator("#field-content").fill("word " * 2000)  # over max_tokens=400
    box.locator("#action-confirm").click()
    expect(box.locator("#action-error")).not_to_be_empty()
    shot(page, artifacts, "21-studio-api-error")
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/blocks-s/blocks/memory")["content"].endswith("Vegetarian.")
    # The API refuses a readonly block as well.
    with pytest.raises(urllib.error.HTTPError):
        server.call("PUT", "sessions/blocks-s/blocks/soul", {"content": "x"})


def test_edit_state_with_json_values(page: Any, second: Any, server: Server) -> None:
    make_session(server, "state-s")
    open_viewer(page, server, "#/s/state-s")
    open_viewer(second, server, "#/s/state-s")
    live_on(second)
    page.locator("#state-add").click()
    box = dialog(page)
    box.locator("#field-key").fill("plan")
    box.locator("#field-value").fill("not json")
    box.locator("#action-confirm").click()
    expect(box.locator("#action-error")).to_contain_text("not JSON")
    box.locator("#field-value").fill('{"days": [1, 2], "ok": true}')
    box.locator("#action-confirm").click()
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/state-s/state")["state"]["plan"] == {
        "days": [1, 2],
        "ok": True,
    }
    expect(second.locator("#state-panel")).to_contain_text('"days"', timeout=LIVE)
    page.locator('button[data-state-edit="plan"]').click()
    box = dialog(page)
    box.locator("#field-value").fill("42")
    box.locator("#action-confirm").click()
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/state-s/state")["state"]["plan"] == 42
    page.locator('button[data-state-delete="plan"]').click()
    dialog(page).locator("#action-confirm").click()
    expect(page.locator("#action-dialog")).to_be_hidden()
    assert "plan" not in server.call("GET", "sessions/state-s/state")["state"]
    expect(second.locator("#state-panel")).not_to_contain_text("plan", timeout=LIVE)


def test_rename_shows_live_in_the_other_viewer_and_its_list(
    page: Any, second: Any, server: Server
) -> None:
    make_session(server, "rename-s", name="Before")
    open_viewer(page, server, "#/s/rename-s")
    open_viewer(second, server, "#/s/rename-s")
    live_on(second)
    second.fill("#session-q", "half-typed")  # the other viewer is typing a search meanwhile
    page.locator("#rename-session").click()
    box = dialog(page)
    box.locator("#field-name").fill("After the rename")
    page.keyboard.press("Enter")
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/rename-s")["name"] == "After the rename"
    expect(page.locator("#session-title")).to_have_text("After the rename")
    expect(second.locator("#session-title")).to_have_text("After the rename", timeout=LIVE)
    expect(second.locator("#session-q")).to_have_value("half-typed")  # a redraw keeps it
    expect(second.locator("#session-q")).to_be_focused()
    expect(second.locator('.session-link[data-session="rename-s"]')).to_contain_text(
        "After the rename", timeout=LIVE
    )


def test_fork_at_a_message(page: Any, second: Any, server: Server, artifacts: Path) -> None:
    make_session(server, "fork-s", count=6)
    open_viewer(page, server, "#/s/fork-s")
    open_viewer(second, server, "#/s/fork-s")
    live_on(second)
    menu_action(page, "fork-s-3", "fork")
    shot(page, artifacts, "22-studio-menu-and-fork")
    box = dialog(page)
    box.locator("#field-name").fill("The fork")
    box.locator("#action-confirm").click()
    expect(box).to_be_hidden()
    expect(page.locator("#session-title")).to_have_text("The fork")
    forked = [s for s in server.call("GET", "sessions")["sessions"] if s["name"] == "The fork"]
    assert len(forked) == 1 and forked[0]["parent_session_id"] == "fork-s"
    history = server.call("GET", f"sessions/{forked[0]['id']}/messages")["messages"]
    assert len(history) == 3 and history[-1]["parts"][0]["text"] == "message 3 of fork-s"
    # The other viewer's session list (GET /v1/events) shows the new session.
    link = second.locator(f'.session-link[data-session="{forked[0]["id"]}"]')
    expect(link).to_contain_text("The fork", timeout=LIVE)


def test_rewind_to_before_a_message(page: Any, second: Any, server: Server) -> None:
    make_session(server, "rewind-s", count=5)
    open_viewer(page, server, "#/s/rewind-s")
    open_viewer(second, server, "#/s/rewind-s")
    live_on(second)
    menu_action(page, "rewind-s-4", "rewind")
    dialog(page).locator("#action-confirm").click()
    expect(page.locator("#action-dialog")).to_be_hidden()
    assert server.head_id("rewind-s") == "rewind-s-3"
    expect(node(page, "rewind-s-3")).to_have_class(re.compile(r"\bis-head\b"))
    expect(node(second, "rewind-s-3")).to_have_class(re.compile(r"\bis-head\b"), timeout=LIVE)


def test_delete_a_message_asks_first(
    page: Any, second: Any, server: Server, artifacts: Path
) -> None:
    make_session(server, "delete-m", count=3)
    open_viewer(page, server, "#/s/delete-m")
    open_viewer(second, server, "#/s/delete-m")
    live_on(second)
    menu_action(page, "delete-m-3", "delete")
    box = dialog(page)
    expect(box).to_contain_text("delete-m-3")
    shot(page, artifacts, "23-studio-confirm-delete")
    page.keyboard.press("Escape")  # cancelled: nothing happens
    expect(box).to_be_hidden()
    assert server.call("GET", "sessions/delete-m/messages/delete-m-3")["id"] == "delete-m-3"
    menu_action(page, "delete-m-3", "delete")
    dialog(page).locator("#action-confirm").click()
    expect(node(page, "delete-m-3")).to_have_count(0)
    with pytest.raises(urllib.error.HTTPError) as gone:
        server.call("GET", "sessions/delete-m/messages/delete-m-3")
    assert gone.value.code == 404
    expect(node(second, "delete-m-3")).to_have_count(0, timeout=LIVE)


def test_delete_a_session_asks_first(page: Any, second: Any, server: Server) -> None:
    make_session(server, "delete-s")
    open_viewer(page, server, "#/s/delete-s")
    open_viewer(second, server, "#/s/delete-s")
    live_on(second)
    page.locator("#delete-session").click()
    dialog(page).locator("#action-cancel").click()
    assert server.call("GET", "sessions/delete-s")["id"] == "delete-s"
    page.locator("#delete-session").click()
    dialog(page).locator("#action-confirm").click()
    expect(page).to_have_url(re.compile(r"#/$"))
    with pytest.raises(urllib.error.HTTPError) as gone:
        server.call("GET", "sessions/delete-s")
    assert gone.value.code == 404
    expect(second.get_by_text("Session not found")).to_be_visible(timeout=LIVE)
    expect(page.locator('.session-link[data-session="delete-s"]')).to_have_count(0)


def test_compact_now_renders_the_summary_as_markdown(
    page: Any, second: Any, server: Server, artifacts: Path
) -> None:
    make_session(server, "compact-s", count=6)
    open_viewer(page, server, "#/s/compact-s")
    open_viewer(second, server, "#/s/compact-s")
    live_on(second)
    page.locator("#compact-session").click()
    summary = page.locator("li.node.summary")
    expect(summary).to_have_count(1, timeout=LIVE)
    overlays = server.call("GET", "sessions/compact-s/compactions")["compactions"]
    assert [(c["from_message_id"], c["to_message_id"]) for c in overlays] == [
        ("compact-s-1", "compact-s-4")
    ]
    # The summary's markdown: strong text, a list, inline code; never raw HTML.
    expect(summary.locator(".card-body strong")).to_have_text("Summary")
    expect(summary.locator(".card-body li code").first).to_have_text("compact-s-1")
    expect(second.locator("li.node.summary")).to_have_count(1, timeout=LIVE)
    shot(page, artifacts, "24-studio-compacted")
    # Compacted again later: the newer summary covers the same start, the older is superseded
    # (the API says so, and the Summaries panel marks it).
    more = [text("compact-s-7", "seven", "user"), text("compact-s-8", "eight", "assistant")]
    server.call("POST", "sessions/compact-s/messages", {"messages": more})
    expect(node(page, "compact-s-8")).to_be_attached(timeout=LIVE)
    page.locator("#compact-session").click()
    panel = page.locator("#summaries-panel li[data-compaction]")
    expect(panel).to_have_count(2, timeout=LIVE)
    overlays = server.call("GET", "sessions/compact-s/compactions")["compactions"]
    assert [c["superseded"] for c in overlays] == [True, False]
    superseded = page.locator("#summaries-panel li.superseded")
    expect(superseded).to_have_count(1)
    assert superseded.get_attribute("data-compaction") == overlays[0]["id"]
    expect(superseded.locator(".superseded-pill")).to_have_text("superseded")
    expect(page.locator("li.node.summary")).to_contain_text("6 messages")
    shot(page, artifacts, "27-studio-superseded")


def test_check_out_a_branch_shows_live(page: Any, second: Any, server: Server) -> None:
    make_session(server, "branch-s", count=3)
    branch = {"messages": [text("alt", "other")], "parent_id": "branch-s-1"}
    server.call("POST", "sessions/branch-s/messages", branch)
    server.call("PUT", "sessions/branch-s/head", {"leaf_id": "branch-s-3"})
    open_viewer(page, server, "#/s/branch-s")
    open_viewer(second, server, "#/s/branch-s")
    live_on(second)
    node(page, "branch-s-1").locator(".branch-toggle").click()
    node(page, "alt").locator("button.checkout").click()
    expect(node(page, "alt")).to_have_class(re.compile(r"\bis-head\b"))
    assert server.head_id("branch-s") == "alt"
    expect(node(second, "alt")).to_have_class(re.compile(r"\bis-head\b"), timeout=LIVE)


def test_markdown_in_messages_is_safe(page: Any, server: Server, artifacts: Path) -> None:
    body = (
        "# Plan\n\nSee [the docs](https://example.org/a?b=1) and [bad](javascript:alert(1)) "
        "and [rel](/v1/sessions).\n\n- **one**\n- _two_\n\n```\n<b>code</b>\n```\n\n"
        '<img src=x onerror="window.__pwned=1"> `x<y`'
    )
    server.call("POST", "sessions/md-s/messages", text("md1", body))
    open_viewer(page, server, "#/s/md-s")
    card = node(page, "md1").locator(".card-body")
    expect(card.locator("h3")).to_have_text("Plan")
    links = card.locator("a")
    expect(links).to_have_count(1)
    assert links.get_attribute("href") == "https://example.org/a?b=1"
    assert "noopener" in (links.get_attribute("rel") or "")
    expect(card).to_contain_text("[bad](javascript:alert(1))")
    expect(card.locator("strong")).to_have_text("one")
    expect(card.locator("em")).to_have_text("two")
    expect(card.locator("pre code")).to_have_text("<b>code</b>")
    expect(card).to_contain_text('<img src=x onerror="window.__pwned=1">')
    assert card.locator("img, b, script").count() == 0
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned === undefined")
    shot(page, artifacts, "25-studio-markdown")


def test_keyboard_menu_and_dialog(page: Any, server: Server) -> None:
    make_session(server, "keys-s", count=2)
    open_viewer(page, server, "#/s/keys-s")
    summary = node(page, "keys-s-2").locator(":scope > .card details.menu > summary")
    summary.focus()
    page.keyboard.press("Enter")
    fork = node(page, "keys-s-2").locator(':scope > .card button[data-action="fork"]')
    expect(fork).to_be_visible()
    page.keyboard.press("Tab")
    expect(fork).to_be_focused()
    page.keyboard.press("Enter")
    box = dialog(page)
    expect(box.locator("#field-name")).to_be_focused()
    page.keyboard.press("Escape")
    expect(box).to_be_hidden()
    sessions = server.call("GET", "sessions")["sessions"]
    assert not [s for s in sessions if s.get("parent_session_id") == "keys-s"]
    # Escape closes an open menu and gives the focus back to its button.
    summary.focus()
    page.keyboard.press("Enter")
    expect(fork).to_be_visible()
    page.keyboard.press("Escape")
    expect(fork).to_be_hidden()
    expect(summary).to_be_focused()


def test_studio_in_dark_mode(browser: Any, server: Server, artifacts: Path) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, color_scheme="dark")
    try:
        tab = context.new_page()
        open_viewer(tab, server, "#/s/lisbon")
        expect(node(tab, "u1")).to_be_visible()
        tab.locator('button[data-edit="memory"]').click()
        expect(tab.locator("#action-dialog")).to_be_visible()
        background = tab.evaluate(
            "getComputedStyle(document.querySelector('#action-dialog')).backgroundColor"
        )
        assert background != "rgb(255, 255, 255)"
        shot(tab, artifacts, "26-studio-dark-dialog")
        tab.keyboard.press("Escape")
    finally:
        context.close()


def test_a_key_bound_to_a_user_gets_no_app_wide_controls(page: Any, server: Server) -> None:
    from threadline.server import create_key

    server.call("PATCH", "sessions/lisbon/state", {"app:currency": "EUR"})
    app_key = server.key
    ana = create_key(server.db, "travel", "ana")
    server.key = ana  # this test's tab uses ana's key
    try:
        open_viewer(page, server, "#/s/lisbon")
        state = page.locator("#state-panel")
        expect(state).to_contain_text("app:currency")
        expect(page.locator('button[data-state-edit="budget_eur"]')).to_be_visible()
        expect(page.locator('button[data-state-edit="app:currency"]')).to_have_count(0)
        page.locator("#state-add").click()
        box = dialog(page)
        box.locator("#field-key").fill("app:currency")
        box.locator("#field-value").fill('"USD"')
        box.locator("#action-confirm").click()
        expect(box.locator("#action-error")).to_contain_text("bound to a user")
        page.keyboard.press("Escape")
    finally:
        server.key = app_key
    with pytest.raises(urllib.error.HTTPError) as refused:
        server.call("PATCH", "sessions/lisbon/state", {"app:currency": "USD"}, key=ana)
    assert refused.value.code == 403
    assert server.call("GET", "sessions/lisbon/state")["state"]["app:currency"] == "EUR"
