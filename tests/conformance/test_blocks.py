"""Context blocks and providers.

Black-box: only the public API of ``threadline`` is used; custom provider classes below are
the documented user extension point, not fakes of threadline's storage.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from threadline import (
    BlockNotFoundError,
    BlockTooLargeError,
    ContextBlock,
    DirectorySkillProvider,
    ReadOnlyBlockError,
    Session,
    SessionManager,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
    ThreadlineError,
)
from threadline.tokens import estimate_tokens

BLOCK_FIELDS = {
    "label",
    "description",
    "content",
    "tokens",
    "max_tokens",
    "writable",
    "is_skill",
    "is_searchable",
    "scope",
}


class Box:
    """A writable provider that records every call (user extension point)."""

    def __init__(self, value: str | None = None) -> None:
        self.value = value
        self.sets: list[str] = []
        self.inits: list[str] = []
        self.gets = 0

    def init(self, label: str) -> None:
        self.inits.append(label)

    def get(self) -> str | None:
        self.gets += 1
        return self.value

    def set(self, content: str) -> None:
        self.sets.append(content)
        self.value = content


class Counting:
    """Read-only provider counting init/get calls and recording their order."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.inits: list[str] = []
        self.gets = 0

    def init(self, label: str) -> None:
        self.events.append("init")
        self.inits.append(label)

    def get(self) -> str:
        self.events.append("get")
        self.gets += 1
        return f"value {self.gets}"


def new(store: Any, sid: str = "s1", user: str | None = None) -> Session:
    session = Session.create(store).for_session(sid)
    if user is not None:
        session.for_user(user)
    return session


def content(session: Session, label: str) -> str:
    got = session.get_context_block(label)
    assert got is not None, label
    return got.content


# ---------------------------------------------------------------------------- ContextBlock


def test_context_block_fields(store: Any) -> None:
    session = (
        new(store, "fields", "u1")
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory", description="Facts", max_tokens=1100)
        .with_context("profile", description="About the user", scope="user")
        .with_context("kb", provider=StoreSearchProvider(store))
        .with_context("skills", provider=StoreSkillProvider(store))
    )
    session.replace_context_block("memory", "likes TypeScript")
    blocks = session.get_context_blocks()
    assert [b.label for b in blocks] == ["soul", "memory", "profile", "kb", "skills"]
    for b in blocks:
        assert isinstance(b, ContextBlock)
        assert {f.name for f in dataclasses.fields(b)} == BLOCK_FIELDS
        assert set(b.to_dict()) == BLOCK_FIELDS
        assert b.tokens == estimate_tokens(b.content)
    soul, memory, profile, kb, skills = blocks
    assert (soul.description, soul.content, soul.max_tokens) == (None, "You are helpful.", None)
    assert (soul.writable, soul.is_skill, soul.is_searchable) == (False, False, False)
    assert (memory.description, memory.content, memory.max_tokens) == (
        "Facts",
        "likes TypeScript",
        1100,
    )
    assert memory.tokens == 4
    assert (memory.writable, memory.is_skill, memory.is_searchable, memory.scope) == (
        True,
        False,
        False,
        "session",
    )
    assert (profile.scope, profile.writable, profile.content) == ("user", True, "")
    assert (kb.is_searchable, kb.is_skill, kb.writable) == (True, False, True)
    assert (skills.is_skill, skills.is_searchable, skills.writable) == (True, False, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        memory.content = "x"  # type: ignore[misc]


def test_get_context_block_unknown_label_is_none(store: Any) -> None:
    session = new(store).with_context("memory")
    assert session.get_context_block("nope") is None


def test_plain_string_and_callable_are_read_only_providers(store: Any) -> None:
    calls = {"n": 0}

    def dynamic() -> str:
        calls["n"] += 1
        return f"dynamic {calls['n']}"

    session = (
        new(store, "ro")
        .with_context("plain", provider="Plain text")
        .with_context("dyn", description="Live", provider=dynamic)
    )
    plain = session.get_context_block("plain")
    dyn = session.get_context_block("dyn")
    assert plain is not None and dyn is not None
    assert (plain.content, plain.writable, plain.description) == ("Plain text", False, None)
    assert (dyn.content, dyn.writable, dyn.description) == ("dynamic 1", False, "Live")
    assert len(session.tools()) == 0  # no writable, skill or search block -> no tools
    with pytest.raises(ReadOnlyBlockError):
        session.replace_context_block("plain", "x")
    refreshed = session.refresh_system_prompt()  # re-reads every provider
    assert "dynamic 2" in refreshed
    assert "Plain text" in refreshed


def test_store_context_provider_is_writable_default(store: Any) -> None:
    session = new(store, "explicit").with_context("notes", provider=StoreContextProvider(store))
    block = session.replace_context_block("notes", "kept")
    assert isinstance(block, ContextBlock)
    assert block.writable and block.content == "kept"
    again = new(store, "explicit").with_context("notes", provider=StoreContextProvider(store))
    assert content(again, "notes") == "kept"


# ---------------------------------------------------------------------------- writes


def test_replace_and_append_return_the_updated_block_and_persist(store: Any) -> None:
    session = new(store, "w").with_context("memory", description="Facts", max_tokens=1100)
    block = session.replace_context_block("memory", "likes tea")
    assert isinstance(block, ContextBlock)
    assert (block.label, block.content, block.tokens) == (
        "memory",
        "likes tea",
        estimate_tokens("likes tea"),
    )
    block = session.append_context_block("memory", "likes jazz")
    assert block.content == "likes tea\nlikes jazz"
    assert content(session, "memory") == "likes tea\nlikes jazz"
    fresh = new(store, "w").with_context("memory", description="Facts", max_tokens=1100)
    assert content(fresh, "memory") == "likes tea\nlikes jazz"


@pytest.mark.parametrize(
    ("existing", "added", "joined"),
    [
        ("", "first", "first"),
        ("a", "b", "a\nb"),
        ("a", "\nb", "a\nb"),
        ("a\n", "b", "a\n\nb"),
        ("a", "\n\nb", "a\n\nb"),
    ],
)
def test_append_joining_rule(store: Any, existing: str, added: str, joined: str) -> None:
    session = new(store, "join").with_context("memory")
    if existing:
        session.replace_context_block("memory", existing)
    assert session.append_context_block("memory", added).content == joined
    assert content(session, "memory") == joined


def test_read_only_write_raises_and_leaves_provider_untouched(store: Any) -> None:
    session = new(store, "ro2").with_context("soul", provider=StaticContext("fixed"))
    with pytest.raises(ReadOnlyBlockError) as caught:
        session.replace_context_block("soul", "changed")
    assert isinstance(caught.value, ThreadlineError)
    with pytest.raises(ReadOnlyBlockError):
        session.append_context_block("soul", "more")
    assert content(session, "soul") == "fixed"
    assert session.refresh_system_prompt().endswith("fixed")


def test_too_large_write_raises_and_leaves_provider_untouched(store: Any) -> None:
    box = Box("small start")
    session = new(store, "big").with_context("mem", max_tokens=5, provider=box)
    too_big = "word " * 50
    with pytest.raises(BlockTooLargeError) as caught:
        session.replace_context_block("mem", too_big)
    assert isinstance(caught.value, ThreadlineError)
    with pytest.raises(BlockTooLargeError):
        session.append_context_block("mem", "one two three four five")
    assert box.sets == []
    assert box.value == "small start"
    assert content(session, "mem") == "small start"
    # exactly at the limit is allowed
    session.replace_context_block("mem", "x" * 20)  # 20 chars -> 5 tokens
    assert box.sets == ["x" * 20]


def test_too_large_write_to_store_block_keeps_stored_value(store: Any) -> None:
    session = new(store, "big2").with_context("memory", max_tokens=10)
    session.replace_context_block("memory", "kept value")
    with pytest.raises(BlockTooLargeError):
        session.replace_context_block("memory", "word " * 40)
    assert content(session, "memory") == "kept value"
    fresh = new(store, "big2").with_context("memory", max_tokens=10)
    assert content(fresh, "memory") == "kept value"


def test_unknown_label_raises_block_not_found(store: Any) -> None:
    session = new(store, "unknown").with_context("memory")
    for write in (session.replace_context_block, session.append_context_block):
        with pytest.raises(BlockNotFoundError) as caught:
            write("nope", "x")
        assert isinstance(caught.value, KeyError)
        assert isinstance(caught.value, ThreadlineError)


@pytest.mark.parametrize("kind", ["search", "skill"])
def test_keyed_block_needs_a_key(store: Any, kind: str) -> None:
    provider = StoreSearchProvider(store) if kind == "search" else StoreSkillProvider(store)
    session = new(store, "keyed").with_context("keyed", provider=provider)
    for write in (session.replace_context_block, session.append_context_block):
        with pytest.raises(ValueError) as caught:
            write("keyed", "some content")
        assert isinstance(caught.value, ThreadlineError)


def test_add_context_and_remove_context(store: Any) -> None:
    session = new(store, "rt").with_context("memory")
    session.add_context("notes", description="Run-time notes", max_tokens=50)
    notes = session.get_context_block("notes")
    assert notes is not None
    assert (notes.description, notes.max_tokens, notes.writable) == ("Run-time notes", 50, True)
    session.replace_context_block("notes", "written")
    assert content(session, "notes") == "written"
    session.add_context("extra", provider="EXTRA")
    assert [b.label for b in session.get_context_blocks()] == ["memory", "notes", "extra"]
    with pytest.raises(ValueError):
        session.add_context("extra", provider="again")
    with pytest.raises(ValueError):
        session.add_context("memory")
    assert session.remove_context("extra") is True
    assert session.get_context_block("extra") is None
    assert session.remove_context("extra") is False
    assert session.remove_context("never") is False
    assert [b.label for b in session.get_context_blocks()] == ["memory", "notes"]


# ---------------------------------------------------------------------------- init


def test_init_called_exactly_once_per_provider_per_session_object(store: Any) -> None:
    provider = Counting()
    session = new(store, "init").with_context("persona", provider=provider)
    assert provider.inits == []  # providers are resolved on first use
    session.get_context_blocks()
    session.freeze_system_prompt()
    first_refresh = session.refresh_system_prompt()
    second_refresh = session.refresh_system_prompt()
    session.get_context_block("persona")
    assert provider.inits == ["persona"]
    assert provider.events[0] == "init"
    assert provider.gets >= 3
    assert first_refresh != second_refresh  # refresh re-reads get()
    other = new(store, "init").with_context("persona", provider=provider)
    other.get_context_blocks()
    other.refresh_system_prompt()
    assert provider.inits == ["persona", "persona"]


def test_init_receives_label_of_each_block(store: Any) -> None:
    a, b = Box("a"), Box("b")
    session = (
        new(store, "labels").with_context("first", provider=a).with_context("second", provider=b)
    )
    session.freeze_system_prompt()
    session.replace_context_block("first", "a2")
    session.refresh_system_prompt()
    assert (a.inits, b.inits) == (["first"], ["second"])


# ---------------------------------------------------------------------------- scopes


def _scoped(store: Any, sid: str, user: str) -> Session:
    return (
        new(store, sid, user)
        .with_context("notes")
        .with_context("profile", scope="user")
        .with_context("shared", scope="app")
    )


def test_auto_wired_block_scopes(store: Any) -> None:
    a = _scoped(store, "a", "u1")
    a.replace_context_block("notes", "notes of a")
    a.replace_context_block("profile", "profile of u1")
    a.replace_context_block("shared", "app wide")
    scopes = {b.label: b.scope for b in a.get_context_blocks()}
    assert scopes == {"notes": "session", "profile": "user", "shared": "app"}

    b = _scoped(store, "b", "u1")  # same user, other session
    assert content(b, "notes") == ""
    assert content(b, "profile") == "profile of u1"
    assert content(b, "shared") == "app wide"

    c = _scoped(store, "c", "u2")  # other user
    assert content(c, "notes") == ""
    assert content(c, "profile") == ""
    assert content(c, "shared") == "app wide"

    # a bare Session belongs to app "default": a manager of that app sees its app block
    default_app = SessionManager(store).with_context("shared", scope="app")
    assert content(default_app.get_session("z"), "shared") == "app wide"
    # ... and another app does not
    other_app = SessionManager(store, app_name="other").with_context("shared", scope="app")
    assert content(other_app.get_session("a"), "shared") == ""


def test_user_scope_without_user_raises_value_error_at_first_use(store: Any) -> None:
    def build() -> Session:
        # building must not raise: providers are resolved on first use
        return new(store, "nouser").with_context("profile", scope="user")

    for use in (
        lambda s: s.get_context_blocks(),
        lambda s: s.get_context_block("profile"),
        lambda s: s.freeze_system_prompt(),
    ):
        with pytest.raises(ValueError) as caught:
            use(build())
        assert isinstance(caught.value, ThreadlineError)


# ---------------------------------------------------------------------------- built-in providers


def _skill_dir(tmp_path: Path) -> Path:
    (tmp_path / "pirate.md").write_text(
        "---\ndescription: Talk like a pirate\n---\n# Pirate\nSay arr.\n", encoding="utf-8"
    )
    (tmp_path / "formal.md").write_text("# Formal Tone\n\nUse formal language.\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a skill\n", encoding="utf-8")
    return tmp_path


def test_directory_skill_provider(tmp_path: Path) -> None:
    provider = DirectorySkillProvider(_skill_dir(tmp_path))
    listing = provider.get()
    assert listing is not None
    for text in ("pirate", "Talk like a pirate", "formal", "Formal Tone"):
        assert text in listing
    assert "notes" not in listing
    assert "# Formal" not in listing  # heading text without '#'
    body = provider.load("pirate")
    assert body is not None
    assert "description:" not in body
    assert "---" not in body
    assert body.strip() == "# Pirate\nSay arr."
    formal = provider.load("formal")
    assert formal is not None and formal.strip() == "# Formal Tone\n\nUse formal language."
    assert provider.load("missing") is None
    assert provider.load("notes") is None


def test_directory_skill_provider_keys_allow_list(tmp_path: Path) -> None:
    provider = DirectorySkillProvider(str(_skill_dir(tmp_path)), keys=["pirate"])
    listing = provider.get()
    assert listing is not None
    assert "pirate" in listing
    assert "formal" not in listing.lower()
    assert provider.load("formal") is None
    assert provider.load("pirate") is not None


def test_directory_skill_provider_in_a_session(store: Any, tmp_path: Path) -> None:
    provider = DirectorySkillProvider(_skill_dir(tmp_path))
    session = new(store, "dir").with_context("skills", provider=provider)
    block = session.get_context_block("skills")
    assert block is not None and block.is_skill and not block.is_searchable
    assert "SKILLS [loadable]" in session.freeze_system_prompt()
    tools = session.tools()
    assert {"load_context", "unload_context"} <= set(tools)
    doc = tools.execute("load_context", {"label": "skills", "key": "pirate"})
    assert doc == provider.load("pirate")
    assert tools.execute("load_context", {"label": "skills", "key": "nope"}) == "Not found: nope"


def _keyed(store: Any, sid: str, user: str) -> Session:
    return (
        new(store, sid, user)
        .with_context("kb", provider=StoreSearchProvider(store))
        .with_context("skills", provider=StoreSkillProvider(store))
    )


def test_store_search_and_skill_entries_shared_per_app_and_label(store: Any) -> None:
    a = _keyed(store, "a", "u1")
    ta = a.tools()
    assert (
        ta.execute(
            "set_context",
            {"label": "kb", "content": "the zebra sleeps", "metadata": {"title": "Zebra fact"}},
        )
        == 'Indexed "zebra-fact" in kb.'
    )
    assert ta.execute("set_context", {"label": "kb", "content": "giraffes are tall"}).startswith(
        'Indexed "giraffes-are-tall-'
    )
    assert (
        ta.execute(
            "set_context",
            {
                "label": "skills",
                "content": "Speak like a pirate.",
                "metadata": {"title": "Pirate style", "description": "pirate voice"},
            },
        )
        == 'Indexed "pirate-style" in skills.'
    )
    # another session of the same app, another user
    b = _keyed(store, "b", "u2")
    tb = b.tools()
    assert tb.execute("search_context", {"label": "kb", "query": "zebra"}) == (
        "[zebra-fact]\nthe zebra sleeps"
    )
    assert tb.execute("load_context", {"label": "skills", "key": "pirate-style"}) == (
        "Speak like a pirate."
    )
    assert content(b, "kb") == "2 entries indexed."
    listing = content(b, "skills")
    assert "pirate-style" in listing
    assert "pirate voice" in listing
    # another label of the same app does not share entries
    c = new(store, "c").with_context("kb2", provider=StoreSearchProvider(store))
    assert c.tools().execute("search_context", {"label": "kb2", "query": "zebra"}) == (
        "No results found."
    )
    assert content(c, "kb2") == ""
    # another app does not see them either
    other = (
        SessionManager(store, app_name="other")
        .with_context("kb", provider=StoreSearchProvider(store))
        .get_session("a")
    )
    assert other.tools().execute("search_context", {"label": "kb", "query": "zebra"}) == (
        "No results found."
    )
    assert content(other, "kb") == ""


# ---------------------------------------------------------------------------- building


def test_builder_methods_return_the_same_session_and_order_does_not_matter(store: Any) -> None:
    a = Session.create(store)
    chained = [
        a.for_session("order-a"),
        a.for_user("u1"),
        a.with_context("soul", provider="You are helpful."),
        a.with_context("memory", description="Facts", max_tokens=1100),
        a.with_cached_prompt(),
        a.on_compaction(lambda messages: None),
        a.compact_after(100_000),
        a.on_compaction_error(lambda *args: None),
    ]
    assert all(s is a for s in chained)
    b = (
        Session.create(store)
        .compact_after(100_000)
        .with_cached_prompt()
        .with_context("soul", provider="You are helpful.")
        .on_compaction(lambda messages: None)
        .with_context("memory", description="Facts", max_tokens=1100)
        .for_user("u1")
        .for_session("order-b")
    )
    a.replace_context_block("memory", "likes TypeScript")
    b.replace_context_block("memory", "likes TypeScript")
    assert a.freeze_system_prompt() == b.freeze_system_prompt()
    assert store.get_block("default", "session", "order-b", "memory") == "likes TypeScript"


def test_direct_constructor_with_context_configs(store: Any) -> None:
    from threadline import ContextConfig

    session = Session(
        store,
        session_id="direct",
        context=[
            ContextConfig("soul", provider=StaticContext("You are helpful.")),
            ContextConfig("memory", description="Facts", max_tokens=1100),
        ],
    )
    session.replace_context_block("memory", "likes TypeScript")
    built = (
        new(store, "built")
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory", description="Facts", max_tokens=1100)
    )
    built.replace_context_block("memory", "likes TypeScript")
    assert session.freeze_system_prompt() == built.freeze_system_prompt()
    assert [b.label for b in session.get_context_blocks()] == ["soul", "memory"]


def test_default_session_id_is_default(store: Any) -> None:
    session = Session.create(store).with_context("memory")
    session.replace_context_block("memory", "x")
    assert store.get_block("default", "session", "default", "memory") == "x"
