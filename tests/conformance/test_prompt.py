"""System prompt rendering, freezing and caching.

Black-box: only the public API of ``threadline`` and the ``Store`` protocol are used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import threadline
from threadline import Session, SessionManager, StaticContext, StoreSearchProvider

SEP = "═" * 46



def block(header: str, content: str) -> str:
    return f"{SEP}\n{header}\n{SEP}\n{content}"


def golden_session(store: Any, sid: str = "golden") -> Session:
    return (
        Session.create(store)
        .for_session(sid)
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory", description="Facts", max_tokens=1100)
    )


class EmptySkills:
    """A skill provider with nothing to list (user extension point)."""

    def get(self) -> str | None:
        return None

    def load(self, key: str) -> str | None:
        return None


class Box:
    """A minimal writable provider (user extension point)."""

    def __init__(self, value: str | None = None) -> None:
        self.value = value
        self.sets: list[str] = []

    def get(self) -> str | None:
        return self.value

    def set(self, content: str) -> None:
        self.sets.append(content)
        self.value = content


# ---------------------------------------------------------------------------- rendering


def test_golden_rendering_byte_for_byte(store: Any, formats_golden: str) -> None:
    session = golden_session(store)
    session.replace_context_block("memory", "likes TypeScript")
    assert SEP == "\u2550" * 46
    prompt = session.freeze_system_prompt()
    assert prompt == formats_golden
    assert prompt.encode("utf-8") == formats_golden.encode("utf-8")


def test_no_blocks_renders_empty_string(store: Any) -> None:
    session = Session.create(store).for_session("none")
    assert session.freeze_system_prompt() == ""
    assert session.refresh_system_prompt() == ""


def test_header_variants_and_skipping(store: Any) -> None:
    session = (
        Session.create(store)
        .for_session("headers")
        .with_context("persona", description="Persona", provider="Be brief.")
        .with_context("blank", provider=StaticContext(""))
        .with_context("nothing", provider=lambda: None)
        .with_context("notes")
        .with_context("bounded", max_tokens=16)
        .with_context("kb", description="Knowledge", provider=StoreSearchProvider(store))
        .with_context("skills", provider=EmptySkills())
        .with_context("capped", max_tokens=8, provider="abc def")
    )
    session.replace_context_block("bounded", "hi")
    expected = "\n\n".join(
        [
            block("PERSONA (Persona) [readonly]", "Be brief."),
            # empty writable, search and skill blocks still render; empty read-only ones do not
            block("NOTES [writable]", ""),
            # 2/16 = 12.5 % -> rounded half up to 13
            block("BOUNDED [13% — 2/16 tokens] [writable]", "hi"),
            block("KB (Knowledge) [searchable]", ""),
            block("SKILLS [loadable]", ""),
            # 3/8 = 37.5 % -> 38; a read-only block with max_tokens shows the usage too
            block("CAPPED [38% — 3/8 tokens] [readonly]", "abc def"),
        ]
    )
    assert session.freeze_system_prompt() == expected


def test_blocks_render_in_registration_order(store: Any) -> None:
    session = Session.create(store).for_session("order")
    for label in ("zeta", "alpha", "mid"):
        session.with_context(label, provider=f"text of {label}")
    prompt = session.freeze_system_prompt()
    assert prompt.index("ZETA") < prompt.index("ALPHA") < prompt.index("MID")
    assert [b.label for b in session.get_context_blocks()] == ["zeta", "alpha", "mid"]


# ---------------------------------------------------------------------------- freezing


def test_freeze_unchanged_after_writes_refresh_picks_them_up(store: Any) -> None:
    session = golden_session(store, "freeze")
    first = session.freeze_system_prompt()
    session.replace_context_block("memory", "A")
    session.append_context_block("memory", "B")
    result = session.tools().execute(
        "set_context", {"label": "memory", "content": "C", "action": "append"}
    )
    assert result.startswith("Written to memory.")
    # writes update the block immediately ...
    assert session.get_context_block("memory").content == "A\nB\nC"  # type: ignore[union-attr]
    # ... but never the frozen prompt
    assert session.freeze_system_prompt() == first
    refreshed = session.refresh_system_prompt()
    assert refreshed != first
    assert refreshed.endswith("A\nB\nC")
    assert session.freeze_system_prompt() == refreshed


def test_add_and_remove_context_do_not_change_frozen_prompt(store: Any) -> None:
    session = golden_session(store, "addrm")
    first = session.freeze_system_prompt()
    session.add_context("extra", provider="EXTRA TEXT")
    assert session.freeze_system_prompt() == first
    assert session.remove_context("soul") is True
    assert session.freeze_system_prompt() == first
    refreshed = session.refresh_system_prompt()
    assert "EXTRA TEXT" in refreshed
    assert "SOUL" not in refreshed


def test_prompt_without_cache_is_rendered_fresh_by_a_new_session_object(store: Any) -> None:
    first = golden_session(store, "nocache")
    first.replace_context_block("memory", "one")
    assert first.freeze_system_prompt().endswith("one")
    first.replace_context_block("memory", "two")
    second = golden_session(store, "nocache")
    assert second.freeze_system_prompt().endswith("two")
    # nothing was persisted without with_cached_prompt()
    assert store.get_prompt("default", "nocache") is None


def test_cached_prompt_survives_new_session_object(store: Any) -> None:
    first = golden_session(store, "cached").with_cached_prompt()
    first.replace_context_block("memory", "one")
    frozen = first.freeze_system_prompt()
    first.replace_context_block("memory", "two")
    second = golden_session(store, "cached").with_cached_prompt()
    assert second.freeze_system_prompt() == frozen
    assert second.get_context_block("memory").content == "two"  # type: ignore[union-attr]
    refreshed = second.refresh_system_prompt()
    assert refreshed.endswith("two")
    third = golden_session(store, "cached").with_cached_prompt()
    assert third.freeze_system_prompt() == refreshed


def _cached_session(store: Any) -> Session:
    return (
        Session.create(store)
        .for_session("reopen")
        .with_context("memory", description="Facts", max_tokens=100)
        .with_cached_prompt()
    )


def test_cached_prompt_survives_reopening_the_store(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        session = _cached_session(store)
        session.replace_context_block("memory", "one")
        frozen = session.freeze_system_prompt()
        session.replace_context_block("memory", "two")
    with threadline.connect(file_store_url) as store:
        session = _cached_session(store)
        assert session.freeze_system_prompt() == frozen
        assert session.get_context_block("memory").content == "two"  # type: ignore[union-attr]
        refreshed = session.refresh_system_prompt()
        assert refreshed.endswith("two")
    with threadline.connect(file_store_url) as store:
        assert _cached_session(store).freeze_system_prompt() == refreshed


CHILD = textwrap.dedent(
    """
    import json, sys
    import threadline
    url = sys.argv[1]
    with threadline.connect(url) as store:
        session = (
            threadline.Session.create(store)
            .for_session("reopen")
            .with_context("memory", description="Facts", max_tokens=100)
            .with_cached_prompt()
        )
        prompt = session.freeze_system_prompt()
        content = session.get_context_block("memory").content
        if len(sys.argv) > 2:
            session.replace_context_block("memory", sys.argv[2])
            prompt = session.refresh_system_prompt()
    print(json.dumps({"prompt": prompt, "content": content}))
    """
)


def _run_child(url: str, *args: str) -> dict[str, str]:
    src = str(Path(threadline.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, url, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_cached_prompt_survives_another_process(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        session = _cached_session(store)
        session.replace_context_block("memory", "one")
        frozen = session.freeze_system_prompt()
        session.replace_context_block("memory", "two")
    seen = _run_child(file_store_url)
    assert seen == {"prompt": frozen, "content": "two"}
    # a refresh in another process is what this process sees next
    seen = _run_child(file_store_url, "three")
    assert seen["prompt"].endswith("three")
    with threadline.connect(file_store_url) as store:
        assert _cached_session(store).freeze_system_prompt() == seen["prompt"]


def test_with_cached_prompt_provider_persists_into_it(store: Any) -> None:
    box = Box()
    session = golden_session(store, "boxed").with_cached_prompt(box)
    session.replace_context_block("memory", "v1")
    frozen = session.freeze_system_prompt()
    assert box.value == frozen
    session.replace_context_block("memory", "v2")
    again = golden_session(store, "boxed").with_cached_prompt(box)
    assert again.freeze_system_prompt() == frozen
    # the prompt went to the provider, not to the store
    assert store.get_prompt("default", "boxed") is None
    refreshed = again.refresh_system_prompt()
    assert refreshed.endswith("v2")
    assert box.value == refreshed


def test_manager_sessions_cache_prompts_per_session(store: Any) -> None:
    manager = (
        SessionManager(store, app_name="cache-app")
        .with_context("soul", provider="You are helpful.")
        .with_context("memory", description="Facts", max_tokens=1100)
        .with_cached_prompt()
    )
    a = manager.get_session("a")
    b = manager.get_session("b")
    a.replace_context_block("memory", "alpha facts")
    pa = a.freeze_system_prompt()
    pb = b.freeze_system_prompt()
    assert pa.endswith("alpha facts")
    assert "alpha facts" not in pb
    assert store.get_prompt("cache-app", "a") == pa
    assert store.get_prompt("cache-app", "b") == pb


def test_clear_messages_refreshes_cached_prompt(store: Any) -> None:
    session = golden_session(store, "clear").with_cached_prompt()
    session.append_message({"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]})
    frozen = session.freeze_system_prompt()
    session.replace_context_block("memory", "after")
    assert session.freeze_system_prompt() == frozen
    session.clear_messages()
    assert session.freeze_system_prompt().endswith("after")
    assert store.get_prompt("default", "clear") == session.freeze_system_prompt()


def test_set_prompt_none_forgets_the_stored_prompt(store: Any) -> None:
    # Regression: the argument check refused None although the contract allows it.
    store.set_prompt("app", "s", "You are terse.")
    store.set_prompt("app", "s", None)
    assert store.get_prompt("app", "s") is None
