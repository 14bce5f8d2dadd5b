"""Conformance: an app's profile in the store, and managers built from it, on every backend
(integrations.md §18.1, api.md clarification 27)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import threadline
from threadline import CompactResult, Profile, SessionManager
from threadline.aio import AsyncSessionManager
from threadline.compaction import create_compact_function
from threadline.errors import InvalidArgumentError, ReadOnlyBlockError
from threadline.store import Store
from threadline.summarizers import named

FULL = {
    "format": 1,
    "blocks": [
        {"label": "persona", "kind": "readonly", "text": "You are a travel agent."},
        {"label": "memory", "description": "Facts", "scope": "user", "max_tokens": 400,
         "initial": "Nothing yet."},
        {"label": "notes", "kind": "writable", "scope": "session"},
        {"label": "kb", "kind": "search", "store": True},
        {"label": "skills", "kind": "skill", "store": True},
        {"label": "history", "kind": "history", "history": "user"},
    ],
    "compaction": {"after_tokens": 6000, "min_messages": 40, "keep": 10,
                   "summarizer": {"type": "extractive"}},
    "size_policy": {"policy": "truncate", "max_message_bytes": 100_000},
    "runner": {"runs": 3, "max_context_tokens": 8000, "max_steps": 4},
    "model": {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m",
              "api_key_env": "LLM_KEY"},
    "token_counter": "default",
    "cached_prompt": True,
}  # fmt: skip


def test_a_profile_is_stored_with_a_growing_version(store: Store) -> None:
    assert store.get_profile("travel") is None
    first = store.put_profile("travel", {"format": 1})
    second = store.put_profile("travel", {"format": 1, "cached_prompt": True})
    assert (first.version, second.version) == (1, 2)
    assert second.updated_at >= first.updated_at
    assert store.get_profile("travel") == second
    assert store.get_profile("other") is None
    assert [p.app for p in store.list_profiles()] == ["travel"]


def test_concurrent_writes_each_count(store: Store) -> None:
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(10):
                store.put_profile("travel", {"format": 1})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = store.get_profile("travel")
    assert stored is not None and stored.version == 40


def test_load_profile_keeps_version_and_time(store: Store) -> None:
    source = threadline.connect(":memory:")
    source.put_profile("travel", FULL)
    stored = source.put_profile("travel", FULL)
    store.load_profile("travel", stored)
    assert store.get_profile("travel") == stored


def test_the_full_document_round_trips(store: Store) -> None:
    saved = Profile.from_dict(FULL).save(store, "travel")
    loaded = Profile.load(store, "travel")
    assert loaded == saved
    document = loaded.to_dict()
    assert document.pop("version") == 1
    document.pop("updated_at")
    assert Profile.from_dict(document).document() == Profile.from_dict(FULL).document()


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"blocks": [{"label": "a"}, {"label": "b"}, {"label": "c", "scope": "team"}]},
         "blocks[2].scope"),
        ({"blocks": [{"label": "a", "colour": "red"}]}, "blocks[0].colour"),
        ({"blocks": [{"label": ""}]}, "blocks[0].label"),
        ({"blocks": [{"label": "a"}, {"label": "a"}]}, "blocks[1].label"),
        ({"blocks": [{"label": "a", "max_tokens": 0}]}, "blocks[0].max_tokens"),
        ({"blocks": [{"label": "a", "kind": "magic"}]}, "blocks[0].kind"),
        ({"blocks": "memory"}, "blocks"),
        ({"compaction": {"after_tokens": "many"}}, "compaction.after_tokens"),
        ({"compaction": {"min_messages": 10}}, "compaction"),
        ({"compaction": {"summarizer": {"type": "gpt"}}}, "compaction.summarizer.type"),
        ({"model": {"type": "openai", "base_url": "file:///etc", "model": "m"}},
         "model.base_url"),
        ({"model": {"type": "extractive"}}, "model.type"),
        ({"runner": {"max_steps": 0}}, "runner.max_steps"),
        ({"size_policy": {"policy": "shrink"}}, "size_policy.policy"),
        ({"token_counter": "words"}, "token_counter"),
        ({"token_counter": "tiktoken:nope"}, "token_counter"),
        ({"token_counter": "tiktoken:gpt2\n"}, "token_counter"),
        ({"cached_prompt": "yes"}, "cached_prompt"),
        ({"surprise": 1}, "surprise"),
        ({"format": 9}, "format"),
    ],
)  # fmt: skip
def test_bad_documents_name_the_path(document: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        Profile.from_dict(document)
    assert str(raised.value).startswith(path + " ")


def test_a_manager_from_the_profile_has_the_declared_memory(store: Store) -> None:
    Profile.from_dict(FULL).save(store, "travel")
    manager = SessionManager.from_profile(store, app_name="travel")
    session = manager.get_session("s1", user_id="ana")
    blocks = {b.label: b for b in session.get_context_blocks()}
    assert list(blocks) == ["persona", "memory", "notes", "kb", "skills", "history"]
    assert blocks["persona"].content == "You are a travel agent."
    assert blocks["memory"].content == "Nothing yet."
    assert blocks["memory"].max_tokens == 400
    with pytest.raises(ReadOnlyBlockError):
        session.replace_context_block("persona", "Be a pirate.")
    session.replace_context_block("memory", "Likes trains.")
    # user-scoped: another session of the same user reads it
    other = manager.get_session("s2", user_id="ana")
    assert other.get_context_block("memory").content == "Likes trains."
    assert manager.profile is not None and manager.profile.runner["max_steps"] == 4


def test_compaction_runs_with_the_named_summarizer(store: Store) -> None:
    compaction = {"protect_head": 0, "tail_token_budget": 0, "summarizer": {"type": "extractive"}}
    Profile.from_dict({"compaction": compaction}).save(store, "app")
    manager = SessionManager.from_profile(store, app_name="app")
    for text in ("Book a hotel in Oslo.", "Which dates?", "From 3 to 5 May.", "Done, thanks."):
        manager.append("s1", {"role": "user", "content": text})
    overlay = manager.get_session("s1").compact()
    assert overlay is not None and overlay.summary.strip()


def test_save_profile_stores_what_the_builder_declared(store: Store) -> None:
    summarize = named({"type": "extractive"})
    manager = (
        SessionManager(store, "travel")
        .with_context("persona", provider="Be brief.")
        .with_context("memory", scope="user", max_tokens=300)
        .with_searchable_history("history", scope="app")
        .on_compaction(create_compact_function(summarize, protect_head=1))
        .compact_after(5000)
        .with_cached_prompt()
    )
    saved = manager.save_profile(runner={"runs": 2})
    assert saved.version == 1
    assert [b["kind"] for b in saved.blocks] == ["readonly", "writable", "history"]
    assert saved.blocks[2]["history"] == "app"
    assert saved.compaction == {"after_tokens": 5000, "protect_head": 1,
                                "summarizer": {"type": "extractive"}}  # fmt: skip
    assert saved.runner["runs"] == 2 and saved.cached_prompt is True
    follower = SessionManager.from_profile(store, app_name="travel")
    assert [b.label for b in follower.get_session("s", user_id="ana").get_context_blocks()] == [
        "persona", "memory", "history",
    ]  # fmt: skip


def test_code_parts_are_listed_as_code(store: Store) -> None:
    def summarize(history: Any) -> CompactResult:
        return CompactResult(history[0]["id"], history[-1]["id"], "Custom.")

    class Mood:
        def get(self) -> str:
            return "cheerful"

    manager = SessionManager(store, "app").with_context("mood", provider=Mood())
    manager = manager.with_context("notes").on_compaction(summarize).with_cached_prompt()
    saved = manager.save_profile()
    assert saved.blocks[0] == {"label": "mood", "kind": "code", "scope": "session",
                               "provides": "readonly"}  # fmt: skip
    assert saved.compaction == {"summarizer": {"type": "code"}}
    follower = SessionManager.from_profile(store, app_name="app")
    session = follower.get_session("s1")
    assert [b.label for b in session.get_context_blocks()] == ["mood", "notes"]
    session.freeze_system_prompt()
    # a process without the code never persists a prompt missing its content
    assert store.get_prompt("app", "s1") is None


def test_builder_calls_on_top_override_the_profile(store: Store) -> None:
    Profile.from_dict({"blocks": [{"label": "memory", "max_tokens": 100}]}).save(store, "app")
    manager = SessionManager.from_profile(store, app_name="app").with_context(
        "memory", max_tokens=900
    )
    assert manager.get_session("s").get_context_block("memory").max_tokens == 900


def test_a_new_version_is_picked_up_by_other_managers(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threadline._manager_profile as following

    monkeypatch.setattr(following, "PROFILE_TTL", 0.0)
    Profile.from_dict({"blocks": [{"label": "a"}]}).save(store, "app")
    follower = SessionManager.from_profile(store, app_name="app")
    assert [b.label for b in follower.get_session("s").get_context_blocks()] == ["a"]
    Profile.from_dict({"blocks": [{"label": "a"}, {"label": "b"}]}).save(store, "app")
    assert [b.label for b in follower.get_session("s").get_context_blocks()] == ["a", "b"]


def test_a_plain_manager_ignores_the_stored_profile(store: Store) -> None:
    Profile.from_dict({"blocks": [{"label": "a"}]}).save(store, "app")
    assert SessionManager(store, "app").get_session("s").get_context_blocks() == []


def test_tenant_rules_refuse_foreign_endpoints_and_paths() -> None:
    from threadline._profile_check import check_document, check_for_tenant

    allowed = {"local": ("http://llm:8000/v1", "LLM_KEY")}
    ok = check_document({"model": {"type": "openai", "base_url": "http://llm:8000/v1",
                                   "model": "x", "api_key_env": "LLM_KEY"}})  # fmt: skip
    check_for_tenant(ok, allowed)
    stolen = check_document({"model": {"type": "openai", "base_url": "http://llm:8000/v1",
                                       "model": "x", "api_key_env": "AWS_SECRET"}})  # fmt: skip
    with pytest.raises(InvalidArgumentError, match=r"^model "):
        check_for_tenant(stolen, allowed)
    path = check_document({"blocks": [{"label": "s", "kind": "skill", "skills_dir": "/etc"}]})
    with pytest.raises(InvalidArgumentError, match=r"^blocks\[0\]\.skills_dir "):
        check_for_tenant(path, allowed)
    check_for_tenant(path, allowed, current=path)  # the operator's own, written back unchanged


def test_async_manager_from_profile() -> None:
    import asyncio

    async def main() -> list[str]:
        manager = AsyncSessionManager(":memory:", "app").with_context("notes")
        await manager.save_profile()
        follower = AsyncSessionManager.from_profile(manager.sync.store, "app")
        session = await follower.get_session("s1")
        return [b.label for b in await session.get_context_blocks()]

    assert asyncio.run(main()) == ["notes"]


def test_connect_options_win_over_the_profile_size_policy(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sizes.db'}"
    with threadline.connect(url) as store:
        Profile.from_dict({"size_policy": {"policy": "error"}}).save(store, "app")
    big = {"role": "user", "content": "x" * 3_000_000}
    with (
        threadline.connect(url) as store,  # the profile's policy: refused
        pytest.raises(threadline.errors.MessageTooLargeError),
    ):
        SessionManager.from_profile(store, "app").append("s1", big)
    with threadline.connect(url, size_policy="attach") as store:  # connect() wins
        stored = SessionManager.from_profile(store, "app").append("s1", big)
        assert stored["id"]


def test_a_profile_this_process_cannot_apply_fails_typed_and_is_retried(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threadline._profile_build as build

    def unavailable(name: str) -> Any:
        raise RuntimeError("tiktoken is not installed")

    monkeypatch.setattr(build, "tiktoken_counter", unavailable)
    Profile.from_dict({"blocks": [{"label": "a"}], "token_counter": "tiktoken:cl100k_base"}).save(
        store, "app"
    )
    follower = SessionManager.from_profile(store, "app")
    for _ in range(2):  # not adopted half-way: every use says why
        with pytest.raises(threadline.ThreadlineError, match="token_counter"):
            follower.get_session("s")
    Profile.from_dict({"blocks": [{"label": "b"}]}).save(store, "app")
    assert [b.label for b in follower.get_session("s").get_context_blocks()] == ["b"]


def test_a_profile_replaced_verbatim_with_the_same_version_is_picked_up(store: Store) -> None:
    from datetime import timedelta

    from threadline.store import StoredProfile

    first = Profile.from_dict({"blocks": [{"label": "a"}]}).save(store, "app")
    follower = SessionManager.from_profile(store, "app")
    assert [b.label for b in follower.get_session("s").get_context_blocks()] == ["a"]
    assert first.updated_at is not None
    other = StoredProfile("app", {"format": 1, "blocks": [{"label": "b"}]}, first.version,
                          first.updated_at + timedelta(seconds=1))  # fmt: skip
    store.load_profile("app", other)  # what import/copy --replace do
    assert [b.label for b in follower.get_session("s").get_context_blocks()] == ["b"]
