"""ContextBlocks and providers: resolution, write rules and built-in providers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.context import (
    ContextBlocks,
    ContextConfig,
    DirectorySkillProvider,
    StaticContext,
    StoreContextProvider,
    StoreSearchProvider,
    StoreSkillProvider,
    provider_kind,
)
from threadline.errors import (
    BlockNotFoundError,
    BlockTooLargeError,
    InvalidArgumentError,
    ReadOnlyBlockError,
    ThreadlineError,
)
from threadline.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    with threadline.connect(":memory:") as s:
        yield s


class Recorder:
    """Writable provider recording init/get/set calls."""

    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.inits: list[str] = []
        self.gets = 0
        self.sets: list[str] = []

    def init(self, label: str) -> None:
        self.inits.append(label)

    def get(self) -> str | None:
        self.gets += 1
        return self.text

    def set(self, content: str) -> None:
        self.sets.append(content)
        self.text = content


class Skills:
    def __init__(self) -> None:
        self.docs: dict[str, tuple[str, str | None]] = {}

    def get(self) -> str | None:
        return "\n".join(f"- {k}" for k in sorted(self.docs)) or None

    def load(self, key: str) -> str | None:
        return self.docs[key][0] if key in self.docs else None

    def set(self, key: str, content: str, description: str | None = None) -> None:
        self.docs[key] = (content, description)


class ReadOnlySkills:
    def get(self) -> str | None:
        return "- a"

    def load(self, key: str) -> str | None:
        return "doc" if key == "a" else None


class Search:
    def get(self) -> str | None:
        return None

    def search(self, query: str) -> str | None:
        return f"found {query}"


# --------------------------------------------------------------------------- kinds


def test_provider_kinds() -> None:
    assert provider_kind(StaticContext("x")) == "readonly"
    assert provider_kind(Recorder()) == "writable"
    assert provider_kind(Skills()) == "skill"
    assert provider_kind(ReadOnlySkills()) == "skill"
    assert provider_kind(Search()) == "search"


def test_strings_and_callables_are_readonly_providers() -> None:
    calls = iter(["one", "two"])
    blocks = ContextBlocks(
        [ContextConfig("a", provider="text"), ContextConfig("b", provider=lambda: next(calls))]
    )
    a, b = blocks.all()
    assert (a.content, a.writable, b.content) == ("text", False, "one")
    assert blocks.reload()[1].content == "two"


def test_bad_provider_is_rejected_at_first_use() -> None:
    blocks = ContextBlocks([ContextConfig("a", provider=42)])
    with pytest.raises(InvalidArgumentError):
        blocks.all()


def test_async_provider_gets_a_clear_error() -> None:
    class Async:
        async def get(self) -> str:
            return "x"

    blocks = ContextBlocks([ContextConfig("a", provider=Async())])
    with pytest.raises(ThreadlineError, match="sync"):
        blocks.all()


def test_config_validation() -> None:
    for bad in ({"label": ""}, {"label": "a", "max_tokens": 0}, {"label": "a", "scope": "team"}):
        with pytest.raises(InvalidArgumentError):
            ContextConfig(**bad)


# --------------------------------------------------------------------------- resolution


def test_init_called_once_before_first_get() -> None:
    provider = Recorder("hello")
    blocks = ContextBlocks([ContextConfig("memory", provider=provider)])
    assert provider.inits == [] and provider.gets == 0  # lazy
    block = blocks.get("memory")
    assert block is not None and block.content == "hello"
    blocks.all()
    blocks.reload()
    blocks.replace("memory", "new")
    assert provider.inits == ["memory"]
    assert provider.gets == 2  # first use and reload; cached otherwise


def test_block_fields() -> None:
    blocks = ContextBlocks(
        [
            ContextConfig("memory", provider=Recorder(None), max_tokens=10),
            ContextConfig("skills", description="Docs", provider=Skills()),
            ContextConfig("index", provider=Search()),
            ContextConfig("ro", provider=ReadOnlySkills()),
        ]
    )
    memory, skills, index, ro = blocks.all()
    assert (memory.content, memory.tokens, memory.max_tokens, memory.description) == (
        "",
        0,
        10,
        None,
    )
    assert (memory.writable, memory.is_skill, memory.is_searchable) == (True, False, False)
    assert (skills.writable, skills.is_skill, skills.description) == (True, True, "Docs")
    assert (index.writable, index.is_searchable) == (False, True)
    assert (ro.writable, ro.is_skill) == (False, True)
    assert blocks.get("unknown") is None


def test_auto_wired_blocks_use_the_store(store: Store) -> None:
    blocks = ContextBlocks(
        [
            ContextConfig("memory"),
            ContextConfig("profile", scope="user"),
            ContextConfig("rules", scope="app"),
        ],
        store=store,
        app_name="app1",
        session_id="s1",
        user_id="u1",
    )
    blocks.replace("memory", "m")
    blocks.replace("profile", "p")
    blocks.replace("rules", "r")
    assert store.get_block("app1", "session", "s1", "memory") == "m"
    assert store.get_block("app1", "user", "u1", "profile") == "p"
    assert store.get_block("app1", "app", "", "rules") == "r"
    assert [b.scope for b in blocks.all()] == ["session", "user", "app"]
    other = ContextBlocks(
        [ContextConfig("profile", scope="user")],
        store=store,
        app_name="app1",
        session_id="s2",
        user_id="u1",
    )
    assert other.get("profile").content == "p"  # type: ignore[union-attr]


def test_user_scope_without_user_fails_at_first_use(store: Store) -> None:
    blocks = ContextBlocks([ContextConfig("profile", scope="user")], store=store)
    with pytest.raises(InvalidArgumentError) as info:
        blocks.all()
    assert isinstance(info.value, ValueError)


def test_auto_wiring_without_store_explains() -> None:
    blocks = ContextBlocks([ContextConfig("memory")])
    with pytest.raises(ThreadlineError, match="provider"):
        blocks.get("memory")


# --------------------------------------------------------------------------- writes


def test_write_rules() -> None:
    memory = Recorder("")
    blocks = ContextBlocks(
        [
            ContextConfig("memory", provider=memory, max_tokens=5),
            ContextConfig("soul", provider="Be kind."),
            ContextConfig("skills", provider=Skills()),
        ]
    )
    with pytest.raises(BlockNotFoundError):
        blocks.replace("nope", "x")
    with pytest.raises(ReadOnlyBlockError):
        blocks.replace("soul", "x")
    with pytest.raises(InvalidArgumentError) as keyed:
        blocks.append("skills", "x")
    assert isinstance(keyed.value, ValueError)
    with pytest.raises(BlockTooLargeError):
        blocks.replace("memory", "word " * 10)
    assert memory.sets == []
    block = blocks.replace("memory", "short")
    assert block.content == "short" and blocks.get("memory") == block


def test_append_joining() -> None:
    blocks = ContextBlocks([ContextConfig("m", provider=Recorder(""))])
    assert blocks.append("m", "a").content == "a"
    assert blocks.append("m", "b").content == "a\nb"
    assert blocks.append("m", "\nc").content == "a\nb\nc"
    assert blocks.append("m", "").content == "a\nb\nc\n"


def test_append_checks_the_full_content() -> None:
    memory = Recorder("word " * 3)
    blocks = ContextBlocks([ContextConfig("m", provider=memory, max_tokens=5)])
    with pytest.raises(BlockTooLargeError, match="exceeds max_tokens"):
        blocks.append("m", "more words")
    assert memory.sets == [] and blocks.get("m").content == "word " * 3  # type: ignore[union-attr]


def test_over_limit_stored_value_still_reads() -> None:
    blocks = ContextBlocks([ContextConfig("m", provider=Recorder("word " * 10), max_tokens=5)])
    assert blocks.get("m").tokens == 13  # type: ignore[union-attr]
    assert "[260% — 13/5 tokens]" in blocks.render()


def test_keyed_entries() -> None:
    skills = Skills()
    blocks = ContextBlocks(
        [
            ContextConfig("skills", provider=skills, max_tokens=50),
            ContextConfig("ro", provider=ReadOnlySkills()),
            ContextConfig("index", provider=Search()),
            ContextConfig("memory", provider=Recorder()),
        ]
    )
    key = blocks.write_entry("skills", "Say arr.", title="Pirate style", description="Pirates")
    assert key == "pirate-style" and skills.docs[key] == ("Say arr.", "Pirates")
    assert blocks.get("skills").content == "- pirate-style"  # type: ignore[union-attr]
    assert blocks.load("skills", "pirate-style") == "Say arr."
    assert blocks.load("skills", "missing") is None
    with pytest.raises(ReadOnlyBlockError):
        blocks.write_entry("ro", "x")
    with pytest.raises(ReadOnlyBlockError):
        blocks.write_entry("index", "x")  # a search provider without set()
    with pytest.raises(InvalidArgumentError):
        blocks.write_entry("memory", "x")
    with pytest.raises(BlockTooLargeError):
        blocks.write_entry("skills", "word " * 50)
    assert blocks.search("index", "tea") == "found tea"
    with pytest.raises(InvalidArgumentError):
        blocks.search("skills", "x")
    with pytest.raises(InvalidArgumentError):
        blocks.load("index", "x")
    with pytest.raises(BlockNotFoundError):
        blocks.load("nope", "x")


def test_add_and_remove() -> None:
    blocks = ContextBlocks([ContextConfig("a", provider="A")])
    blocks.add(ContextConfig("b", provider="B"))
    with pytest.raises(InvalidArgumentError) as dup:
        blocks.add(ContextConfig("a", provider="again"))
    assert isinstance(dup.value, ValueError)
    assert [b.label for b in blocks.all()] == ["a", "b"]
    assert blocks.remove("a") is True and blocks.remove("a") is False
    assert blocks.labels == ["b"] and "a" not in blocks


# --------------------------------------------------------------------------- store providers


def test_store_context_provider_label_from_init(store: Store) -> None:
    provider = StoreContextProvider(store, session_id="s1")
    with pytest.raises(ThreadlineError):
        provider.get()
    provider.init("memory")
    assert provider.get() is None
    provider.set("hi")
    assert store.get_block("default", "session", "s1", "memory") == "hi"
    with pytest.raises(InvalidArgumentError):
        StoreContextProvider(store, scope="user")


def test_store_skill_provider(store: Store) -> None:
    skills = StoreSkillProvider(store, label="skills")
    assert skills.get() is None
    skills.set("zeta", "Z doc")
    skills.set("alpha", "A doc", "First one")
    assert skills.get() == "- alpha: First one\n- zeta"
    assert skills.load("alpha") == "A doc" and skills.load("nope") is None


def test_store_search_provider(store: Store) -> None:
    search = StoreSearchProvider(store, label="notes")
    assert search.get() is None and search.search("tea") is None
    for i in range(12):
        search.set(f"k{i:02d}", f"tea note {i}")
    search.set("other", "coffee")
    assert search.get() == "13 entries indexed."
    found = search.search("tea")
    assert found is not None
    chunks = found.split("\n\n")
    assert len(chunks) == 10
    assert all(c.startswith("[k") and "\ntea note " in c for c in chunks)


def test_keyed_store_providers_adopt_the_session_app(store: Store) -> None:
    shared = StoreSkillProvider(store)
    pinned = StoreSkillProvider(store, app_name="pinned")
    blocks = ContextBlocks(
        [ContextConfig("skills", provider=shared), ContextConfig("pinned", provider=pinned)],
        app_name="app1",
    )
    blocks.write_entry("skills", "doc", title="a")
    blocks.write_entry("pinned", "doc", title="b")
    assert store.get_entry("app1", "skills", "a") is not None
    assert store.get_entry("pinned", "pinned", "b") is not None


def test_entries_are_shared_per_app_and_label(store: Store) -> None:
    first = ContextBlocks(
        [ContextConfig("notes", provider=StoreSearchProvider(store))], session_id="s1"
    )
    second = ContextBlocks(
        [ContextConfig("notes", provider=StoreSearchProvider(store))], session_id="s2"
    )
    first.write_entry("notes", "green tea", title="tea")
    assert second.search("notes", "tea") == "[tea]\ngreen tea"


# --------------------------------------------------------------------------- directory skills


def _write(directory: Path, name: str, text: str) -> None:
    (directory / name).write_text(text, encoding="utf-8")


def test_directory_skill_provider(tmp_path: Path) -> None:
    _write(tmp_path, "pirate.md", "---\ndescription: Talk like a pirate\n---\n# Pirate\nSay arr.\n")
    _write(tmp_path, "deploy.md", "Intro line\n\n## Deploying the app ##\nSteps.\n")
    _write(tmp_path, "plain.md", "no heading here\n")
    _write(tmp_path, "quoted.md", '---\ntitle: x\ndescription: "Quoted: yes"\n---\nBody\n')
    _write(tmp_path, "notes.txt", "ignored")
    (tmp_path / "sub.md").mkdir()
    provider = DirectorySkillProvider(tmp_path)
    assert provider_kind(provider) == "skill" and not hasattr(provider, "set")
    assert provider.get() == (
        "- deploy: Deploying the app\n- pirate: Talk like a pirate\n- plain\n- quoted: Quoted: yes"
    )
    assert provider.load("pirate") == "# Pirate\nSay arr.\n"
    assert provider.load("deploy") == "Intro line\n\n## Deploying the app ##\nSteps.\n"
    assert provider.load("notes") is None
    assert provider.load("../pirate") is None


def test_directory_skill_allow_list(tmp_path: Path) -> None:
    _write(tmp_path, "a.md", "# A")
    _write(tmp_path, "b.md", "# B")
    provider = DirectorySkillProvider(tmp_path, keys=["b", "missing"])
    assert provider.get() == "- b: B"
    assert provider.load("a") is None and provider.load("b") == "# B"


def test_directory_skill_block(tmp_path: Path) -> None:
    blocks = ContextBlocks([ContextConfig("skills", provider=DirectorySkillProvider(tmp_path))])
    block = blocks.get("skills")
    assert block is not None and block.content == "" and block.is_skill and not block.writable
    assert "SKILLS [loadable]" in blocks.render()
    with pytest.raises(ReadOnlyBlockError):
        blocks.write_entry("skills", "x")


def test_missing_skill_directory(tmp_path: Path) -> None:
    with pytest.raises(ThreadlineError, match="does not exist"):
        DirectorySkillProvider(tmp_path / "nope").get()


def test_provider_returning_non_string_is_reported() -> None:
    class Bad:
        def get(self) -> Any:
            return 42

    with pytest.raises(ThreadlineError, match="string"):
        ContextBlocks([ContextConfig("a", provider=Bad())]).all()
