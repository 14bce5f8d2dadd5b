"""Context tools and Toolset over a real in-memory store.

The host below is a minimal ToolHost: blocks come from ``ContextBlocks`` (store-backed
providers on ``threadline.connect(":memory:")``); loaded skills are tracked in a set, as a
Session tracks them from history.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import threadline
from threadline.context import (
    ContextBlocks,
    ContextConfig,
    StaticContext,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.store import Store
from threadline.tools import Tool, Toolset, build_context_tools, make_session_search_tool
from threadline.types import ContextBlock, SearchHit


class BlocksHost:
    """ToolHost over ContextBlocks; loads are remembered in ``loaded_skills``."""

    def __init__(self, blocks: ContextBlocks) -> None:
        self.blocks = blocks
        self.loaded_skills: set[str] = set()

    def get_context_blocks(self) -> list[ContextBlock]:
        return self.blocks.all()

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        return self.blocks.replace(label, content)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        return self.blocks.append(label, content)

    def write_context_entry(
        self, label: str, content: str, *, title: str | None = None, description: str | None = None
    ) -> str:
        return self.blocks.write_entry(label, content, title=title, description=description)

    def load_context_entry(self, label: str, key: str) -> str | None:
        content = self.blocks.load(label, key)
        if content is not None:
            self.loaded_skills.add(f"{label}:{key}")
        return content

    def search_context_block(self, label: str, query: str) -> str | None:
        return self.blocks.search(label, query)

    def unload_skill(self, label: str, key: str) -> bool:
        name = f"{label}:{key}"
        if name not in self.loaded_skills:
            return False
        self.loaded_skills.discard(name)
        return True


class Exploding:
    """A writable provider whose writes fail (a provider bug the tool must report)."""

    def get(self) -> str | None:
        return "stable"

    def set(self, content: str) -> None:
        raise RuntimeError("disk on fire")


@pytest.fixture
def store() -> Iterator[Store]:
    with threadline.connect(":memory:") as s:
        yield s


@pytest.fixture
def host(store: Store) -> BlocksHost:
    blocks = ContextBlocks(
        [
            ContextConfig("soul", provider=StaticContext("You are helpful.")),
            ContextConfig("memory", description="Learned facts", max_tokens=20),
            ContextConfig("scratch"),
            ContextConfig("skills", description="How-tos", provider=StoreSkillProvider(store)),
            ContextConfig("notes", provider=StoreSearchProvider(store)),
            ContextConfig("broken", provider=Exploding()),
        ],
        store=store,
        session_id="s1",
    )
    return BlocksHost(blocks)


@pytest.fixture
def tools(host: BlocksHost) -> Toolset:
    return build_context_tools(host)


# --------------------------------------------------------------------------- which tools


def test_tools_follow_block_kinds(tools: Toolset) -> None:
    assert list(tools) == ["set_context", "load_context", "unload_context", "search_context"]


def test_only_readonly_blocks_give_no_tools(store: Store) -> None:
    host = BlocksHost(ContextBlocks([ContextConfig("soul", provider="Be kind.")]))
    assert len(build_context_tools(host)) == 0


def test_plain_writable_only(store: Store) -> None:
    host = BlocksHost(ContextBlocks([ContextConfig("memory")], store=store))
    tools = build_context_tools(host)
    assert list(tools) == ["set_context"]
    assert "metadata" not in tools["set_context"].parameters["properties"]


# --------------------------------------------------------------------------- set_context


def test_set_context_schema_lists_writable_labels(tools: Toolset) -> None:
    params = tools["set_context"].parameters
    assert params["properties"]["label"]["enum"] == [
        "memory",
        "scratch",
        "skills",
        "notes",
        "broken",
    ]
    assert params["required"] == ["label", "content"]
    assert params["properties"]["action"]["enum"] == ["replace", "append"]
    assert set(params["properties"]["metadata"]["properties"]) == {"title", "description"}


def test_set_context_description(tools: Toolset) -> None:
    text = tools["set_context"].description
    assert '- "memory" (writable): Learned facts' in text
    assert '- "scratch" (writable): no description' in text
    assert '- "skills" (skill collection, keyed entries): How-tos' in text
    assert '- "notes" (searchable, keyed entries): no description' in text
    assert "metadata: { title, description }" in text
    assert "durable" in text


def test_replace_and_append_report_usage(tools: Toolset, host: BlocksHost) -> None:
    result = tools.execute("set_context", {"label": "memory", "content": "likes TypeScript"})
    assert result == "Written to memory. Usage: 20% (4/20 tokens)"
    result = tools.execute(
        "set_context", {"label": "memory", "content": "uses vim", "action": "append"}
    )
    assert result == "Written to memory. Usage: 35% (7/20 tokens)"
    assert host.blocks.get("memory").content == "likes TypeScript\nuses vim"  # type: ignore[union-attr]
    assert tools.execute("set_context", {"label": "scratch", "content": "Hello world"}) == (
        "Written to scratch. Usage: 3 tokens"
    )


def test_writes_reach_the_store(tools: Toolset, store: Store) -> None:
    tools.execute("set_context", {"label": "memory", "content": "likes tea"})
    assert store.get_block("default", "session", "s1", "memory") == "likes tea"


def test_set_context_errors(tools: Toolset, host: BlocksHost) -> None:
    assert tools.execute("set_context", {"label": "nope", "content": "x"}) == (
        'Error: block "nope" not found'
    )
    readonly = tools.execute("set_context", {"label": "soul", "content": "x"})
    assert readonly.startswith("Error: ") and "readonly" in readonly
    big = tools.execute("set_context", {"label": "memory", "content": "word " * 30})
    assert big.startswith("Error: ") and "exceeds max_tokens" in big
    assert host.blocks.get("memory").content == ""  # type: ignore[union-attr]
    bad = tools.execute("set_context", {"label": "memory", "content": "x", "action": "delete"})
    assert bad.startswith("Error: ")
    assert tools.execute("set_context", {"label": "broken", "content": "x"}) == (
        "Error: disk on fire"
    )


def test_append_over_limit_leaves_block_untouched(tools: Toolset, host: BlocksHost) -> None:
    tools.execute("set_context", {"label": "memory", "content": "word " * 10})
    result = tools.execute(
        "set_context", {"label": "memory", "content": "word " * 8, "action": "append"}
    )
    assert "exceeds max_tokens" in result
    assert host.blocks.get("memory").content == "word " * 10  # type: ignore[union-attr]


def test_keyed_writes_index_entries(tools: Toolset, store: Store, host: BlocksHost) -> None:
    result = tools.execute(
        "set_context",
        {
            "label": "skills",
            "content": "Say arr.",
            "metadata": {"title": "Pirate style", "description": "Talk like a pirate"},
        },
    )
    assert result == 'Indexed "pirate-style" in skills.'
    assert tools.execute("set_context", {"label": "notes", "content": "no key"}) == (
        'Indexed "no-key-1nprufp" in notes.'
    )
    assert host.blocks.get("skills").content == "- pirate-style: Talk like a pirate"  # type: ignore[union-attr]
    assert host.blocks.get("notes").content == "1 entries indexed."  # type: ignore[union-attr]
    entry = store.get_entry("default", "skills", "pirate-style")
    assert entry is not None and entry.content == "Say arr."


# --------------------------------------------------------------------------- skills


def test_load_and_unload(tools: Toolset, host: BlocksHost) -> None:
    host.write_context_entry("skills", "Step 1: relax.", title="Deploy")
    assert tools.execute("load_context", {"label": "skills", "key": "deploy"}) == "Step 1: relax."
    assert host.loaded_skills == {"skills:deploy"}
    assert tools.execute("load_context", {"label": "skills", "key": "missing"}) == (
        "Not found: missing"
    )
    assert tools.execute("unload_context", {"label": "skills", "key": "deploy"}) == (
        'Unloaded "deploy" from skills. Context reclaimed.'
    )
    assert tools.execute("unload_context", {"label": "skills", "key": "deploy"}) == (
        'Skill "deploy" is not currently loaded in "skills".'
    )


def test_skill_tools_reject_other_labels(tools: Toolset) -> None:
    expected = 'Error: "memory" is not a skill block. Skill blocks: skills'
    assert tools.execute("load_context", {"label": "memory", "key": "k"}) == expected
    assert tools.execute("unload_context", {"label": "memory", "key": "k"}) == expected


def test_unload_description_lists_loaded_skills(host: BlocksHost) -> None:
    assert build_context_tools(host)["unload_context"].description.endswith(
        " No skills currently loaded."
    )
    host.loaded_skills.update({"skills:b", "skills:a"})
    assert build_context_tools(host)["unload_context"].description.endswith(
        " Currently loaded: skills:a, skills:b."
    )


# --------------------------------------------------------------------------- search


def test_search_context(tools: Toolset, host: BlocksHost) -> None:
    host.write_context_entry("notes", "The user drinks green tea.", title="tea")
    host.write_context_entry("notes", "The user rides a bike.", title="bike")
    assert tools.execute("search_context", {"label": "notes", "query": "tea"}) == (
        "[tea]\nThe user drinks green tea."
    )
    assert tools.execute("search_context", {"label": "notes", "query": "volcano"}) == (
        "No results found."
    )
    assert tools.execute("search_context", {"label": "skills", "query": "x"}) == (
        'Error: "skills" is not searchable. Searchable blocks: notes'
    )


# --------------------------------------------------------------------------- Toolset.execute


def test_execute_never_raises(tools: Toolset) -> None:
    cases: list[tuple[Any, Any]] = [
        ("no_such_tool", {}),
        ("set_context", "not json"),
        ("set_context", [1, 2]),
        ("set_context", 42),
        ("set_context", {}),
        ("set_context", {"label": "memory"}),
        ("set_context", {"label": 7, "content": "x"}),
        ("set_context", {"label": "memory", "content": ["x"]}),
        ("set_context", {"label": "memory", "content": "x", "extra": 1}),
        ("set_context", {"label": "skills", "content": "x", "metadata": "title"}),
        ("set_context", {"label": "skills", "content": "x", "metadata": {"title": 3}}),
        ("load_context", {"label": "skills"}),
        ("search_context", {"query": "x"}),
        (None, {}),
    ]
    for name, args in cases:
        result = tools.execute(name, args)
        assert isinstance(result, str) and result.startswith("Error: "), (name, args, result)


def test_execute_messages(tools: Toolset) -> None:
    assert tools.execute("nope", {}).startswith('Error: unknown tool "nope"')
    assert tools.execute("set_context", {"label": "memory"}) == (
        'Error: missing required argument "content" for tool "set_context"'
    )
    assert "must be of type string" in tools.execute("set_context", {"label": 1, "content": "x"})


def test_execute_accepts_json_argument_strings(tools: Toolset) -> None:
    args = json.dumps({"label": "scratch", "content": "hi"})
    assert tools.execute("set_context", args) == "Written to scratch. Usage: 2 tokens"


def test_tool_execute_called_directly_never_raises(tools: Toolset) -> None:
    assert tools["set_context"].execute({"label": "memory"}).startswith("Error: ")
    assert tools["set_context"].execute({"label": "broken", "content": "x"}) == (
        "Error: disk on fire"
    )


def test_plain_tool_exceptions_become_errors() -> None:
    def boom(args: dict[str, Any]) -> str:
        raise ValueError("bad input")

    tool = Tool("boom", "Fails.", {"type": "object", "properties": {}}, boom)
    assert Toolset([tool]).execute("boom", {}) == "Error: bad input"


# --------------------------------------------------------------------------- schemas and exports


def test_every_schema_is_valid_draft_2020_12(tools: Toolset) -> None:
    every = tools | Toolset([make_session_search_tool(lambda q: [])])
    assert len(every) == 5
    for tool in every.values():
        Draft202012Validator.check_schema(tool.parameters)
        assert tool.parameters["type"] == "object"
        assert tool.parameters["additionalProperties"] is False
        assert tool.parameters["required"]
        assert set(tool.parameters["required"]) <= set(tool.parameters["properties"])
        assert tool.description


def test_valid_calls_validate_against_the_schemas(tools: Toolset) -> None:
    call = {"label": "skills", "content": "x", "action": "append", "metadata": {"title": "t"}}
    Draft202012Validator(tools["set_context"].parameters).validate(call)


def test_exports(tools: Toolset) -> None:
    names = list(tools)
    openai = tools.to_openai()
    assert [t["type"] for t in openai] == ["function"] * 4
    assert [t["function"]["name"] for t in openai] == names
    assert set(openai[0]["function"]) == {"name", "description", "parameters"}
    responses = tools.to_openai_responses()
    assert set(responses[0]) == {"type", "name", "description", "parameters", "strict"}
    assert responses[0]["type"] == "function" and responses[0]["strict"] is False
    anthropic = tools.to_anthropic()
    assert set(anthropic[0]) == {"name", "description", "input_schema"}
    mcp = tools.to_mcp()
    assert set(mcp[0]) == {"name", "description", "inputSchema"}
    assert mcp[0]["inputSchema"] == tools["set_context"].parameters
    for export in (openai, responses, anthropic, mcp):
        assert isinstance(export, list)
        json.dumps(export)


def test_exports_are_copies(tools: Toolset) -> None:
    tools.to_anthropic()[0]["input_schema"]["properties"].clear()
    assert tools["set_context"].parameters["properties"]


def test_merge_right_side_wins(tools: Toolset) -> None:
    mine = Tool("set_context", "Mine.", {"type": "object", "properties": {}}, lambda a: "mine")
    extra = Tool("ping", "Pong.", {"type": "object", "properties": {}}, lambda a: "pong")
    merged = tools | Toolset([mine, extra])
    assert list(merged) == [*tools, "ping"]
    assert merged.execute("set_context", {}) == "mine"
    assert (Toolset([mine]) | tools)["set_context"] is tools["set_context"]
    assert isinstance(merged, Toolset) and len(tools) == 4
    from_dict = {"ping": extra} | tools
    assert isinstance(from_dict, Toolset) and list(from_dict) == ["ping", *tools]


# --------------------------------------------------------------------------- session_search


def hit(role: str, content: str) -> SearchHit:
    return SearchHit(
        id=content, role=role, content=content, created_at=None, session_id="s", score=1.0
    )


def test_session_search_tool() -> None:
    hits = [hit("user", f"message {i}") for i in range(12)]
    tool = make_session_search_tool(lambda query: hits if query == "message" else [])
    tools = Toolset([tool])
    result = tools.execute("session_search", {"query": "message"})
    assert result.split("\n---\n") == [f"[user] message {i}" for i in range(10)]
    assert tools.execute("session_search", {"query": "other"}) == "No results found."
    assert tools.execute("session_search", {}).startswith("Error: ")
    assert tool.parameters["required"] == ["query"]


# --------------------------------------------------------------------------- robustness


class Notes:
    """An in-memory writable provider (user-defined; no storage involved)."""

    def __init__(self) -> None:
        self.text: str | None = None

    def get(self) -> str | None:
        return self.text

    def set(self, content: str) -> None:
        self.text = content


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ARG_NAMES = st.sampled_from(["label", "content", "action", "metadata", "key", "query", "x"])


@given(
    st.sampled_from(["set_context", "load_context", "unload_context", "search_context", "zzz"]),
    st.one_of(JSON, st.dictionaries(ARG_NAMES, JSON | st.sampled_from(["m", "s", "append"]))),
)
def test_execute_returns_a_string_for_any_input(name: str, args: Any) -> None:
    skills = {"doc": "text"}

    class Skills:
        def get(self) -> str:
            return "- doc"

        def load(self, key: str) -> str | None:
            return skills.get(key)

    class Index:
        def get(self) -> None:
            return None

        def search(self, query: str) -> str:
            return query

    blocks = ContextBlocks(
        [
            ContextConfig("m", provider=Notes(), max_tokens=5),
            ContextConfig("s", provider=Skills()),
            ContextConfig("i", provider=Index()),
        ]
    )
    result = build_context_tools(BlocksHost(blocks)).execute(name, args)
    assert isinstance(result, str)
