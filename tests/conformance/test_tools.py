"""Tools generated from blocks.

Black-box: only the public API of ``threadline`` is used; custom provider classes below are
the documented user extension point.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from threadline import (
    Session,
    SessionManager,
    StaticContext,
    StoreSearchProvider,
    StoreSkillProvider,
    Toolset,
)
from threadline.messages import tool_call, user

# ---------------------------------------------------------------------------- reference keys
# The documented key format, written from the contract (not from the implementation).


def _units(s: str) -> list[int]:
    raw = s.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def ref_hash(s: str) -> str:
    h = 0x811C9DC5
    for unit in _units(s):
        h = ((h ^ unit) * 0x01000193) & 0xFFFFFFFF
    return _base36(h)


def ref_slug(s: str) -> str:
    cut = b"".join(u.to_bytes(2, "little") for u in _units(s)[:60])
    text = cut.decode("utf-16-le", "surrogatepass").lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def ref_key(content: str, title: str | None = None) -> str:
    if title is not None:
        return ref_slug(title) or f"entry-{ref_hash(title)}"
    return f"{ref_slug(content) or 'entry'}-{ref_hash(content)}"


def test_reference_key_examples() -> None:
    assert ref_key("no key") == "no-key-1nprufp"
    assert ref_key("Hello world") == "hello-world-os091j"
    assert ref_key("", title="Pirate style") == "pirate-style"


# ---------------------------------------------------------------------------- providers


class Skills:
    """Skill provider without ``set`` (read-only collection)."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs

    def get(self) -> str | None:
        return "\n".join(f"- {k}" for k in self.docs) or None

    def load(self, key: str) -> str | None:
        return self.docs.get(key)


class Search:
    """Search provider without ``set``."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.docs = docs

    def get(self) -> str | None:
        return f"{len(self.docs)} docs"

    def search(self, query: str) -> str | None:
        found = [v for v in self.docs.values() if query in v]
        return "\n".join(found) or None


class FailingWritable:
    """Writable provider whose ``set`` raises (a broken user provider)."""

    def get(self) -> str | None:
        return "start"

    def set(self, content: str) -> None:
        raise RuntimeError("set exploded")


class FailingSearch:
    """Search provider whose ``search`` raises."""

    def get(self) -> str | None:
        return "summary"

    def search(self, query: str) -> str | None:
        raise RuntimeError("search exploded")


class FlakyWritable:
    """Writable provider whose ``get`` starts raising once armed."""

    def __init__(self) -> None:
        self.armed = False
        self.value = "start"

    def get(self) -> str | None:
        if self.armed:
            raise RuntimeError("get exploded")
        return self.value

    def set(self, content: str) -> None:
        self.value = content


class FailingSkills:
    def get(self) -> str | None:
        return "- boom"

    def load(self, key: str) -> str | None:
        raise RuntimeError("load exploded")


def new(store: Any, sid: str = "t1") -> Session:
    return Session.create(store).for_session(sid)


def full(store: Any, sid: str = "t1") -> Session:
    return (
        new(store, sid)
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory", description="Facts", max_tokens=1100)
        .with_context("notes")
        .with_context("kb", description="Knowledge base", provider=StoreSearchProvider(store))
        .with_context("skills", description="Playbooks", provider=StoreSkillProvider(store))
    )


# ---------------------------------------------------------------------------- which tools


def test_no_tools_without_writable_skill_or_search_blocks(store: Any) -> None:
    assert set(new(store).tools()) == set()
    ro = new(store).with_context("soul", provider="x").with_context("dyn", provider=lambda: "y")
    tools = ro.tools()
    assert isinstance(tools, Toolset)
    assert set(tools) == set()
    assert tools.to_openai() == []


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("writable", {"set_context"}),
        ("skill", {"load_context", "unload_context"}),
        ("store-skill", {"load_context", "unload_context", "set_context"}),
        ("search", {"search_context"}),
        ("store-search", {"search_context", "set_context"}),
    ],
)
def test_tools_per_block_kind(store: Any, kind: str, expected: set[str]) -> None:
    providers: dict[str, Any] = {
        "writable": None,
        "skill": Skills({"a": "doc a"}),
        "store-skill": StoreSkillProvider(store),
        "search": Search({"a": "doc a"}),
        "store-search": StoreSearchProvider(store),
    }
    session = (
        new(store)
        .with_context("soul", provider="ro")
        .with_context("block", provider=providers[kind])
    )
    tools = session.tools()
    assert set(tools) == expected
    for name in expected:
        tool = tools[name]
        assert tool.name == name
        assert isinstance(tool.description, str) and tool.description
        assert isinstance(tool.parameters, dict)
        assert callable(tool.execute)


def test_all_block_kinds_give_four_tools_and_manager_adds_session_search(store: Any) -> None:
    tools = full(store).tools()
    assert isinstance(tools, Mapping)
    assert set(tools) == {"set_context", "load_context", "unload_context", "search_context"}
    assert len(tools) == 4 and "set_context" in tools and "session_search" not in tools
    manager_tools = SessionManager(store).tools()
    assert "session_search" in set(manager_tools)
    merged = tools | manager_tools
    assert isinstance(merged, Toolset)
    assert set(merged) == set(tools) | set(manager_tools)
    assert merged.execute("session_search", {"query": "nothing here"}) == "No results found."
    assert merged.execute("set_context", {"label": "notes", "content": "hello"}).startswith(
        "Written to notes."
    )


# ---------------------------------------------------------------------------- schemas and exports


def test_parameters_are_valid_json_schema(store: Any) -> None:
    tools = full(store).tools() | SessionManager(store).tools()
    for name in tools:
        params = tools[name].parameters
        jsonschema.Draft202012Validator.check_schema(params)
        assert params.get("type") == "object", name


def test_set_context_schema(store: Any) -> None:
    params = full(store).tools()["set_context"].parameters
    props = params["properties"]
    assert set(props["label"]["enum"]) == {"memory", "notes", "kb", "skills"}
    assert {"label", "content"} <= set(params["required"])
    assert set(props["action"]["enum"]) == {"replace", "append"}
    assert props["content"]["type"] == "string"
    assert {"title", "description"} <= set(props["metadata"]["properties"])
    validator = jsonschema.Draft202012Validator(params)
    validator.validate({"label": "memory", "content": "x"})
    validator.validate({"label": "kb", "content": "x", "metadata": {"title": "T"}})
    assert not validator.is_valid({"label": "soul", "content": "x"})  # read-only not in enum
    assert not validator.is_valid({"label": "memory"})
    # metadata only when a keyed writable block exists
    plain = new(store).with_context("memory").tools()["set_context"].parameters
    assert "metadata" not in plain["properties"]
    assert plain["properties"]["label"]["enum"] == ["memory"]


def test_set_context_description_lists_writable_blocks(store: Any) -> None:
    description = full(store).tools()["set_context"].description
    assert '- "memory" (writable): Facts' in description
    assert '- "notes" (writable): no description' in description
    assert '- "kb" (searchable, keyed entries): Knowledge base' in description
    assert '- "skills" (skill collection, keyed entries): Playbooks' in description
    assert '"soul"' not in description
    assert "metadata" in description
    plain = new(store).with_context("memory").tools()["set_context"].description
    assert '- "memory" (writable): no description' in plain


def test_load_search_and_session_search_schemas(store: Any) -> None:
    session = full(store).with_context("more", provider=Skills({"x": "y"}))
    tools = session.tools()
    load = tools["load_context"].parameters
    assert set(load["properties"]["label"]["enum"]) == {"skills", "more"}
    assert set(load["required"]) == {"label", "key"}
    unload = tools["unload_context"].parameters
    assert set(unload["properties"]["label"]["enum"]) == {"skills", "more"}
    assert set(unload["required"]) == {"label", "key"}
    search = tools["search_context"].parameters
    assert search["properties"]["label"]["enum"] == ["kb"]
    assert set(search["required"]) == {"label", "query"}
    session_search = SessionManager(store).tools()["session_search"].parameters
    assert "query" in session_search["properties"]
    assert "query" in session_search["required"]


def test_export_shapes(store: Any) -> None:
    tools = full(store).tools() | SessionManager(store).tools()
    names = set(tools)

    openai = tools.to_openai()
    assert isinstance(openai, list)
    assert {t["function"]["name"] for t in openai} == names
    for entry in openai:
        assert entry["type"] == "function"
        assert {"name", "description", "parameters"} <= set(entry["function"])
        assert entry["function"]["parameters"] == tools[entry["function"]["name"]].parameters

    responses = tools.to_openai_responses()
    assert isinstance(responses, list)
    assert {t["name"] for t in responses} == names
    for entry in responses:
        assert entry["type"] == "function"
        assert {"name", "description", "parameters"} <= set(entry)

    anthropic = tools.to_anthropic()
    assert isinstance(anthropic, list)
    assert {t["name"] for t in anthropic} == names
    for entry in anthropic:
        assert set(entry) == {"name", "description", "input_schema"}
        assert entry["input_schema"] == tools[entry["name"]].parameters

    mcp = tools.to_mcp()
    assert isinstance(mcp, list)
    assert {t["name"] for t in mcp} == names
    for entry in mcp:
        assert {"name", "description", "inputSchema"} <= set(entry)
        jsonschema.Draft202012Validator.check_schema(entry["inputSchema"])


# ---------------------------------------------------------------------------- set_context results


def test_set_context_plain_results(store: Any) -> None:
    session = full(store, "plain")
    tools = session.tools()
    assert tools.execute("set_context", {"label": "memory", "content": "likes TypeScript"}) == (
        "Written to memory. Usage: 0% (4/1100 tokens)"
    )
    assert tools.execute("set_context", {"label": "notes", "content": "likes TypeScript"}) == (
        "Written to notes. Usage: 4 tokens"
    )
    appended = tools.execute(
        "set_context", {"label": "notes", "content": "and Python", "action": "append"}
    )
    assert appended == "Written to notes. Usage: 7 tokens"  # 27 chars -> ceil(6.75)
    assert session.get_context_block("notes").content == "likes TypeScript\nand Python"  # type: ignore[union-attr]
    replaced = tools.execute(
        "set_context", {"label": "notes", "content": "fresh", "action": "replace"}
    )
    assert replaced == "Written to notes. Usage: 2 tokens"
    assert session.get_context_block("notes").content == "fresh"  # type: ignore[union-attr]
    # Tool.execute directly
    assert tools["set_context"].execute({"label": "memory", "content": "x" * 44}) == (
        "Written to memory. Usage: 1% (11/1100 tokens)"
    )


def test_set_context_usage_rounds_half_up(store: Any) -> None:
    session = new(store, "half").with_context("tiny", max_tokens=16)
    assert session.tools().execute("set_context", {"label": "tiny", "content": "hi"}) == (
        "Written to tiny. Usage: 13% (2/16 tokens)"
    )


def test_set_context_errors(store: Any) -> None:
    session = full(store, "errs").with_context("small", max_tokens=5)
    tools = session.tools()
    assert tools.execute("set_context", {"label": "nope", "content": "x"}) == (
        'Error: block "nope" not found'
    )
    readonly = tools.execute("set_context", {"label": "soul", "content": "x"})
    assert readonly.startswith("Error: ") and "readonly" in readonly
    too_big = tools.execute("set_context", {"label": "small", "content": "word " * 30})
    assert too_big.startswith("Error: ") and "exceeds max_tokens" in too_big
    assert session.get_context_block("small").content == ""  # type: ignore[union-attr]
    too_big_append = tools.execute(
        "set_context", {"label": "small", "content": "word " * 30, "action": "append"}
    )
    assert too_big_append.startswith("Error: ") and "exceeds max_tokens" in too_big_append
    bad_action = tools.execute(
        "set_context", {"label": "memory", "content": "x", "action": "delete"}
    )
    assert bad_action.startswith("Error: ")
    assert session.get_context_block("memory").content == ""  # type: ignore[union-attr]
    assert session.get_context_block("soul").content == "You are helpful."  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("content", "title"),
    [
        ("no key", None),
        ("Hello world", None),
        ("anything at all", "Pirate style"),
        ("body", "!!!"),
        ("日本語のテキスト", None),
        ("A" * 80 + " tail", None),
        ("emoji 😀 " * 10, None),
        ("body", "  Mixed CASE -- Title__2  "),
    ],
)
def test_keyed_entry_keys(store: Any, content: str, title: str | None) -> None:
    session = new(store, "keys").with_context("kb", provider=StoreSearchProvider(store))
    args: dict[str, Any] = {"label": "kb", "content": content}
    if title is not None:
        args["metadata"] = {"title": title}
    key = ref_key(content, title)
    assert session.tools().execute("set_context", args) == f'Indexed "{key}" in kb.'


def test_keyed_examples_exact(store: Any) -> None:
    tools = new(store, "ex").with_context("kb", provider=StoreSearchProvider(store)).tools()
    assert tools.execute("set_context", {"label": "kb", "content": "no key"}) == (
        'Indexed "no-key-1nprufp" in kb.'
    )
    assert tools.execute("set_context", {"label": "kb", "content": "Hello world"}) == (
        'Indexed "hello-world-os091j" in kb.'
    )


def test_same_title_updates_same_entry(store: Any) -> None:
    session = new(store, "title").with_context("kb", provider=StoreSearchProvider(store))
    tools = session.tools()
    for text in ("arrr matey first", "arrr matey second"):
        assert (
            tools.execute(
                "set_context",
                {"label": "kb", "content": text, "metadata": {"title": "Pirate style"}},
            )
            == 'Indexed "pirate-style" in kb.'
        )
    assert tools.execute("search_context", {"label": "kb", "query": "arrr"}) == (
        "[pirate-style]\narrr matey second"
    )
    session.refresh_system_prompt()
    fresh = new(store, "title2").with_context("kb", provider=StoreSearchProvider(store))
    assert fresh.get_context_block("kb").content == "1 entries indexed."  # type: ignore[union-attr]


# ---------------------------------------------------------------------------- search_context


def test_search_context_results(store: Any) -> None:
    session = full(store, "search").with_context("docs", provider=Search({"a": "alpha doc"}))
    tools = session.tools()
    tools.execute("set_context", {"label": "kb", "content": "no key"})
    tools.execute("set_context", {"label": "kb", "content": "Hello world"})
    assert tools.execute("search_context", {"label": "kb", "query": "key"}) == (
        "[no-key-1nprufp]\nno key"
    )
    both = tools.execute("search_context", {"label": "kb", "query": "hello OR key"})
    assert isinstance(both, str)
    assert tools.execute("search_context", {"label": "kb", "query": "zzzqqq"}) == (
        "No results found."
    )
    assert tools.execute("search_context", {"label": "docs", "query": "alpha"}) == "alpha doc"
    assert tools.execute("search_context", {"label": "docs", "query": "omega"}) == (
        "No results found."
    )
    assert tools.execute("search_context", {"label": "memory", "query": "x"}) == (
        'Error: "memory" is not searchable. Searchable blocks: kb, docs'
    )
    assert session.get_context_block("kb").content == "2 entries indexed."  # type: ignore[union-attr]


def test_search_context_returns_top_ten_joined_by_blank_line(store: Any) -> None:
    session = new(store, "top").with_context("kb", provider=StoreSearchProvider(store))
    tools = session.tools()
    for i in range(12):
        tools.execute(
            "set_context",
            {"label": "kb", "content": f"walrus fact {i}", "metadata": {"title": f"w{i}"}},
        )
    result = tools.execute("search_context", {"label": "kb", "query": "walrus"})
    chunks = result.split("\n\n")
    assert len(chunks) == 10
    for chunk in chunks:
        key, text = chunk.split("\n")
        assert re.fullmatch(r"\[w\d+\]", key)
        assert text == f"walrus fact {key[2:-1]}"


# ---------------------------------------------------------------------------- load / unload


def _skill_session(store: Any, sid: str = "skills") -> Session:
    return (
        new(store, sid)
        .with_context("alpha", provider=StoreSkillProvider(store))
        .with_context("beta", provider=Skills({"b1": "beta doc"}))
        .with_context("memory")
    )


def test_load_context_results(store: Any) -> None:
    session = _skill_session(store, "load")
    tools = session.tools()
    assert (
        tools.execute(
            "set_context",
            {
                "label": "alpha",
                "content": "Always answer like a pirate.",
                "metadata": {"title": "Pirate"},
            },
        )
        == 'Indexed "pirate" in alpha.'
    )
    assert tools.execute("load_context", {"label": "alpha", "key": "pirate"}) == (
        "Always answer like a pirate."
    )
    assert tools.execute("load_context", {"label": "beta", "key": "b1"}) == "beta doc"
    assert tools.execute("load_context", {"label": "alpha", "key": "nokey"}) == "Not found: nokey"
    assert tools.execute("load_context", {"label": "memory", "key": "x"}) == (
        'Error: "memory" is not a skill block. Skill blocks: alpha, beta'
    )
    # the document never enters the system prompt
    assert "Always answer like a pirate." not in session.refresh_system_prompt()


def _loaded(store: Any, sid: str) -> tuple[Session, str]:
    session = _skill_session(store, sid)
    tools = session.tools()
    tools.execute(
        "set_context",
        {
            "label": "alpha",
            "content": "Always answer like a pirate.",
            "metadata": {"title": "Pirate"},
        },
    )
    session.append_message(user("talk like a pirate", id="u1"))
    doc = tools.execute("load_context", {"label": "alpha", "key": "pirate"})
    message = tool_call("load_context", {"label": "alpha", "key": "pirate"}, doc, "call-1")
    message["id"] = "a1"
    stored = session.append_message(message)
    part = stored["parts"][0]
    assert part["type"] == "tool-load_context"
    assert part["state"] == "output-available"
    assert part["input"] == {"label": "alpha", "key": "pirate"}
    assert part["output"] == doc == "Always answer like a pirate."
    return session, doc


def test_load_unload_flow(store: Any) -> None:
    session, _ = _loaded(store, "flow")
    assert "alpha:pirate" in session.loaded_skills
    assert session.tools()["unload_context"].description.endswith(
        " Currently loaded: alpha:pirate."
    )
    # a new session object rebuilds loaded_skills from history
    again = _skill_session(store, "flow")
    assert again.loaded_skills == {"alpha:pirate"}
    tools = again.tools()
    assert tools.execute("unload_context", {"label": "alpha", "key": "pirate"}) == (
        'Unloaded "pirate" from alpha. Context reclaimed.'
    )
    stored = again.get_message("a1")
    assert stored is not None
    part = stored["parts"][0]
    assert part["output"] == "[skill unloaded: pirate]"
    assert part["input"] == {"label": "alpha", "key": "pirate"}
    assert part["toolCallId"] == "call-1"
    history_part = next(m for m in again.get_history() if m["id"] == "a1")["parts"][0]
    assert history_part["output"] == "[skill unloaded: pirate]"
    assert again.loaded_skills == set()
    assert tools.execute("unload_context", {"label": "alpha", "key": "pirate"}) == (
        'Skill "pirate" is not currently loaded in "alpha".'
    )
    assert again.tools()["unload_context"].description.endswith(" No skills currently loaded.")
    assert _skill_session(store, "flow").loaded_skills == set()


def test_unload_not_loaded_message(store: Any) -> None:
    tools = _skill_session(store, "nl").tools()
    assert tools.execute("unload_context", {"label": "beta", "key": "b1"}) == (
        'Skill "b1" is not currently loaded in "beta".'
    )
    assert tools["unload_context"].description.endswith(" No skills currently loaded.")


def test_session_unload_skill_rewrites_history_like_the_tool(store: Any) -> None:
    session, _ = _loaded(store, "api")
    assert session.unload_skill("alpha", "pirate") is True
    assert session.get_message("a1")["parts"][0]["output"] == "[skill unloaded: pirate]"  # type: ignore[index]
    assert session.loaded_skills == set()
    assert session.unload_skill("alpha", "pirate") is False
    assert _skill_session(store, "api").loaded_skills == set()


def test_loaded_skills_are_per_session(store: Any) -> None:
    _loaded(store, "one")
    assert _skill_session(store, "two").loaded_skills == set()


# ---------------------------------------------------------------------------- execute never raises


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("no_such_tool", {}),
        ("set_context", {"label": "memory"}),
        ("set_context", {"content": "x"}),
        ("set_context", {"label": "memory", "content": 5}),
        ("set_context", {"label": 5, "content": "x"}),
        ("set_context", "memory"),
        ("set_context", None),
        ("set_context", ["memory", "x"]),
        ("set_context", {"label": "memory", "content": "x", "action": 3}),
        ("set_context", {"label": "kb", "content": "x", "metadata": "title"}),
        ("load_context", {"label": "skills"}),
        ("load_context", {"label": "skills", "key": 7}),
        ("unload_context", {}),
        ("search_context", {"label": "kb"}),
        ("search_context", {"label": "kb", "query": None}),
        ("session_search", {}),
        ("session_search", {"query": 12}),
    ],
)
def test_execute_bad_input_returns_error_string(store: Any, name: str, args: Any) -> None:
    session = full(store, "bad")
    tools = session.tools() | SessionManager(store).tools()
    result = tools.execute(name, args)
    assert isinstance(result, str)
    assert result.startswith("Error: "), result
    assert session.get_context_block("memory").content == ""  # type: ignore[union-attr]


def test_provider_failures_return_error_strings(store: Any) -> None:
    flaky = FlakyWritable()
    session = (
        new(store, "fail")
        .with_context("broken", provider=FailingWritable())
        .with_context("lookup", provider=FailingSearch())
        .with_context("boom", provider=FailingSkills())
        .with_context("flaky", provider=flaky)
    )
    tools = session.tools()
    result = tools.execute("set_context", {"label": "broken", "content": "x"})
    assert result.startswith("Error: ")
    assert session.get_context_block("broken").content == "start"  # type: ignore[union-attr]
    result = tools.execute("search_context", {"label": "lookup", "query": "x"})
    assert result.startswith("Error: ")
    result = tools.execute("load_context", {"label": "boom", "key": "k"})
    assert result.startswith("Error: ")
    flaky.armed = True  # get() now raises: whatever the tool does, it must not raise
    result = tools.execute("set_context", {"label": "flaky", "content": "y", "action": "append"})
    assert isinstance(result, str)
    result = tools.execute("set_context", {"label": "flaky", "content": "z"})
    assert isinstance(result, str)


# ---------------------------------------------------------------------------- session_search


def test_session_search_tool(store: Any) -> None:
    manager = SessionManager(store, app_name="search-app")
    manager.append("s1", user("the quick brown fox", id="m1"))
    manager.append(
        "s2", {"id": "m2", "role": "assistant", "parts": [{"type": "text", "text": "a fox again"}]}
    )
    tools = manager.tools()
    result = tools.execute("session_search", {"query": "fox"})
    chunks = result.split("\n---\n")
    assert sorted(chunks) == ["[assistant] a fox again", "[user] the quick brown fox"]
    assert tools.execute("session_search", {"query": "brown"}) == "[user] the quick brown fox"
    assert tools.execute("session_search", {"query": "zzzqqq"}) == "No results found."
    # other apps are not searched
    other = SessionManager(store, app_name="elsewhere").tools()
    assert other.execute("session_search", {"query": "fox"}) == "No results found."


def test_session_search_top_ten(store: Any) -> None:
    manager = SessionManager(store, app_name="ten")
    manager.append_all("s", [user(f"otter number {i}", id=f"o{i}") for i in range(13)])
    result = manager.tools().execute("session_search", {"query": "otter"})
    assert len(result.split("\n---\n")) == 10


class RecordingSkills:
    """Skill provider with the optional ``set(key, content, description=None)``."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[str, str | None]] = {}

    def get(self) -> str | None:
        return "\n".join(f"- {k}: {d or ''}" for k, (_, d) in self.docs.items()) or None

    def load(self, key: str) -> str | None:
        found = self.docs.get(key)
        return found[0] if found else None

    def set(self, key: str, content: str, description: str | None = None) -> None:
        self.docs[key] = (content, description)


class RecordingSearch:
    """Search provider with the optional ``set(key, content)``."""

    def __init__(self) -> None:
        self.docs: dict[str, str] = {}

    def get(self) -> str | None:
        return f"{len(self.docs)} docs" if self.docs else None

    def search(self, query: str) -> str | None:
        return "\n".join(v for v in self.docs.values() if query in v) or None

    def set(self, key: str, content: str) -> None:
        self.docs[key] = content


def test_custom_keyed_providers_receive_derived_keys(store: Any) -> None:
    skills, search = RecordingSkills(), RecordingSearch()
    session = (
        new(store, "custom").with_context("sk", provider=skills).with_context("se", provider=search)
    )
    tools = session.tools()
    assert set(tools) == {"set_context", "load_context", "unload_context", "search_context"}
    assert (
        tools.execute(
            "set_context",
            {
                "label": "sk",
                "content": "Use bullet points.",
                "metadata": {"title": "Bullet Style", "description": "format answers"},
            },
        )
        == 'Indexed "bullet-style" in sk.'
    )
    assert skills.docs == {"bullet-style": ("Use bullet points.", "format answers")}
    assert tools.execute("set_context", {"label": "se", "content": "no key"}) == (
        'Indexed "no-key-1nprufp" in se.'
    )
    assert search.docs == {"no-key-1nprufp": "no key"}
    assert tools.execute("load_context", {"label": "sk", "key": "bullet-style"}) == (
        "Use bullet points."
    )
    assert tools.execute("search_context", {"label": "se", "query": "key"}) == "no key"


def test_run_time_blocks_change_the_tools(store: Any) -> None:
    session = new(store, "rt").with_context("soul", provider="ro")
    assert set(session.tools()) == set()
    session.add_context("notes")
    tools = session.tools()
    assert set(tools) == {"set_context"}
    assert tools["set_context"].parameters["properties"]["label"]["enum"] == ["notes"]
    session.add_context("kb", provider=StoreSearchProvider(store))
    assert set(session.tools()) == {"set_context", "search_context"}
    assert session.remove_context("notes") is True
    tools = session.tools()
    assert tools["set_context"].parameters["properties"]["label"]["enum"] == ["kb"]
    assert tools.execute("set_context", {"label": "notes", "content": "x"}) == (
        'Error: block "notes" not found'
    )


def test_search_context_never_raises_on_query_text(store: Any) -> None:
    tools = new(store, "q").with_context("kb", provider=StoreSearchProvider(store)).tools()
    tools.execute("set_context", {"label": "kb", "content": "zebra crossing"})
    for query in ["zebra AND(", '"unbalanced', "*", "NEAR(zebra)", "😀", "  ", "-zebra"]:
        result = tools.execute("search_context", {"label": "kb", "query": query})
        assert isinstance(result, str)
        assert not result.startswith("Error: "), (query, result)
    assert tools.execute("search_context", {"label": "kb", "query": "   "}) == "No results found."


def test_clear_messages_forgets_loaded_skills(store: Any) -> None:
    session, _ = _loaded(store, "clear")
    assert session.loaded_skills == {"alpha:pirate"}
    session.clear_messages()
    assert session.loaded_skills == set()
    assert _skill_session(store, "clear").loaded_skills == set()
