"""The studio's context view ("what the model sees", GET .../context) and chat (POST .../turns
with the model the app's profile names: a scripted OpenAI-compatible endpoint started by the
test) in a real Chromium against a real uvicorn. The numbers shown are the API's (the Runner's
own context builder); the answer appears in this viewer and, live, in a second one."""

from __future__ import annotations

import json
import re
import urllib.request
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


def routes_of(server: Server) -> set[str]:
    with urllib.request.urlopen(f"{server.base}/openapi.json", timeout=30) as response:
        return set(json.loads(response.read())["paths"])


def needs(server: Server, path: str) -> None:
    if path not in routes_of(server):
        pytest.skip(f"this server has no {path}")


def open_viewer(page: Any, server: Server, hash_: str) -> None:
    page.goto(f"{server.base}/ui/{hash_}")
    page.fill("#key-input", server.key)
    page.click("#key-form button[type=submit]")
    expect(page.locator("#key-dialog")).to_be_hidden()


@pytest.fixture
def tabs(browser: Any) -> Iterator[Any]:
    """Fresh tabs (``tabs()`` makes one) that fail the test on a script error."""
    contexts: list[Any] = []
    errors: list[str] = []

    def make() -> Any:
        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        contexts.append(context)
        tab = context.new_page()
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.set_default_timeout(15_000)
        return tab

    try:
        yield make
    finally:
        for context in contexts:
            context.close()
    assert not errors, f"errors in the page: {errors}"


def test_the_context_view_shows_the_runners_numbers(
    tabs: Any, server: Server, artifacts: Path
) -> None:
    needs(server, "/v1/sessions/{session_id}/context")
    page = tabs()
    open_viewer(page, server, "#/s/lisbon")
    page.locator("#tab-context").click()
    expect(page).to_have_url(re.compile(r"#/s/lisbon/context$"))
    api = server.call("GET", "sessions/lisbon/context")
    totals = page.locator("#context-totals")
    for name in ("system", "history", "total"):
        expect(totals.locator(f'[data-total="{name}"]')).to_have_text(f"{api['totals'][name]:,}")
    labels = [b["label"] for b in api["system"]["blocks"] if b["label"]]
    for label in labels:
        expect(page.locator(f'.context-blocks li[data-label="{label}"]')).to_be_visible()
    sent = page.locator(".context-messages:not(.dropped) > li.context-row")
    expect(sent).to_have_count(len(api["messages"]))
    page.screenshot(path=str(artifacts / "50-studio-context.png"))
    # A smaller window: one run. The view asks the API again and shows what falls out.
    page.fill("#ctx-runs", "1")
    page.press("#ctx-runs", "Enter")
    one = server.call("GET", "sessions/lisbon/context?runs=1")
    expect(sent).to_have_count(len(one["messages"]))
    expect(page.locator(".context-messages.dropped > li.context-row")).to_have_count(
        len(one["dropped"])
    )
    expect(totals.locator('[data-total="total"]')).to_have_text(f"{one['totals']['total']:,}")
    assert one["dropped"], "runs=1 drops the older runs"
    page.locator("#tab-conversation").click()
    expect(page.locator('li.node[data-id="u1"]')).to_be_attached()


def test_no_chat_box_without_a_model(tabs: Any, server: Server) -> None:
    page = tabs()
    open_viewer(page, server, "#/s/lisbon")
    expect(page.locator('li.node[data-id="u1"]')).to_be_attached()
    page.wait_for_timeout(300)
    assert page.locator("#chat-form").count() == 0


def test_chat_sends_a_turn_and_the_answer_shows_live(
    tabs: Any, chat_server: Server, llm: Any, artifacts: Path
) -> None:
    needs(chat_server, "/v1/sessions/{session_id}/turns")
    page, other = tabs(), tabs()
    open_viewer(page, chat_server, "#/s/porto")
    open_viewer(other, chat_server, "#/s/porto")
    expect(other.locator("#live")).to_have_class(re.compile(r"\bon\b"), timeout=20_000)
    box = page.locator("#chat-input")
    expect(box).to_be_visible()
    box.fill("Is it open on Sundays?")
    page.keyboard.press("Enter")
    answer = page.locator("li.node.is-head .card-body")
    expect(answer).to_contain_text("Echo: Is it open on Sundays?", timeout=30_000)
    expect(box).to_have_value("")
    history = chat_server.call("GET", "sessions/porto/messages")["messages"]
    assert history[-2]["role"] == "user" and history[-1]["role"] == "assistant"
    assert "Is it open on Sundays?" in json.dumps(history[-2])
    expect(other.locator("li.node.is-head .card-body")).to_contain_text(
        "Echo: Is it open on Sundays?", timeout=20_000
    )
    page.screenshot(path=str(artifacts / "51-studio-chat.png"))
    # The endpoint failing: the error is shown, the text is kept to send again.
    llm.add({"status": 500, "body": "model overloaded"})
    box.fill("Again?")
    page.locator("#chat-send").click()
    expect(page.locator("#chat-status")).to_contain_text("failed")
    expect(box).to_have_value("Again?")
