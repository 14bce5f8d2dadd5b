"""Tools an LLM calls to read and edit its memory, and their export to LLM APIs.

A :class:`Toolset` maps tool names to :class:`Tool` values. ``execute(name, args)`` always
returns a string — errors come back as ``"Error: ..."`` for the model to read, never as
exceptions.

>>> echo = Tool("echo", "Repeat the text.", {"type": "object",
...     "properties": {"text": {"type": "string"}}, "required": ["text"],
...     "additionalProperties": False}, lambda args: args["text"])
>>> tools = Toolset([echo])
>>> tools.execute("echo", {"text": "hi"}), tools.execute("echo", {})
('hi', 'Error: missing required argument "text" for tool "echo"')
"""

from __future__ import annotations

import copy
import json
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from threadline._validate import json_problem
from threadline.context.render import usage_percent
from threadline.errors import BlockNotFoundError, ReadOnlyBlockError
from threadline.types import ContextBlock

__all__ = [
    "SEARCH_RESULT_LIMIT",
    "Tool",
    "ToolHost",
    "Toolset",
    "build_context_tools",
    "format_search_hits",
    "make_session_search_tool",
]

SEARCH_RESULT_LIMIT = 10
"""``session_search`` shows at most this many hits."""

NO_RESULTS = "No results found."


@dataclass(frozen=True)
class Tool:
    """One tool: a name, a description for the model, a JSON Schema for its arguments and the
    function that runs it (``execute(args) -> str``).

    >>> Tool("ping", "Answer pong.", {"type": "object", "properties": {}}, lambda a: "pong").name
    'ping'
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Callable[[dict[str, Any]], str]


# --------------------------------------------------------------------------- argument checks

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list, tuple),
    "null": (type(None),),
}


def _type_ok(value: Any, expected: Any) -> bool:
    names = expected if isinstance(expected, list) else [expected]
    for name in names:
        kinds = _JSON_TYPES.get(name)
        if kinds is None:
            return True  # a type we do not check
        if isinstance(value, bool) and name in ("integer", "number"):
            continue  # JSON booleans are not numbers
        if isinstance(value, kinds):
            return True
    return False


def _argument_error(schema: Mapping[str, Any], args: Mapping[str, Any], where: str) -> str | None:
    """First problem of ``args`` against an object schema (required, types, unknown keys).

    ``enum`` is deliberately not checked: tools answer unknown values themselves with a more
    useful message (for example ``block "x" not found``).
    """
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    for name in schema.get("required", ()):
        if name not in args or args[name] is None:
            return f'missing required argument "{name}"{where}'
    for name, value in args.items():
        spec = props.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f'unknown argument "{name}"{where}; expected: {", ".join(props)}'
            continue
        if not isinstance(spec, Mapping) or (
            value is None and name not in schema.get("required", ())
        ):
            continue  # null for an optional argument means "not given"
        if "type" in spec and not _type_ok(value, spec["type"]):
            return f'argument "{name}"{where} must be of type {spec["type"]}'
        if spec.get("type") == "object" and isinstance(value, dict):
            problem = _argument_error(spec, value, f' in "{name}"')
            if problem:
                return problem
    return None


def _coerce_args(args: Any) -> dict[str, Any] | str:
    """Arguments as a dict (a JSON object string is decoded), else an error message."""
    if args is None:
        return {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except RecursionError:
            return "arguments are nested too deeply"
        except ValueError:
            return "arguments must be a JSON object"
    if not isinstance(args, Mapping):
        return f"arguments must be an object, got {type(args).__name__}"
    problem = json_problem(args)
    if problem is not None:
        return "arguments are nested too deeply" if "nested" in problem else f"arguments: {problem}"
    return dict(args)


def run_tool(
    name: str,
    parameters: Mapping[str, Any],
    args: Any,
    run: Callable[[dict[str, Any]], Any],
) -> str:
    """Check ``args`` against ``parameters`` and call ``run``; never raises.

    Every failure (bad arguments, a tool that raises, even a ``RecursionError``) comes back
    as ``"Error: <message>"`` for the model to read.

    >>> run_tool("echo", {"type": "object"}, '{"a": 1}', lambda a: a["a"])
    '1'
    >>> run_tool("echo", {"type": "object"}, "[" * 5000 + "]" * 5000, lambda a: a)
    'Error: arguments are nested too deeply'
    """
    coerced = _coerce_args(args)
    if isinstance(coerced, str):
        return f"Error: {coerced}"
    problem = _argument_error(parameters, coerced, f' for tool "{name}"')
    if problem:
        return f"Error: {problem}"
    try:
        result = run(coerced)
    except BlockNotFoundError:
        return f'Error: block "{coerced.get("label")}" not found'
    except Exception as exc:  # a model-facing tool never raises: report and continue
        return f"Error: {exc or type(exc).__name__}"
    return result if isinstance(result, str) else str(result)


# --------------------------------------------------------------------------- Toolset


class Toolset(Mapping[str, Tool]):
    """An ordered mapping of tool name to :class:`Tool`, with safe execution and exports.

    Toolsets merge with ``|`` (the right side wins on a name clash).

    >>> ts = Toolset([Tool("ping", "Answer pong.", {"type": "object"}, lambda a: "pong")])
    >>> ts.execute("ping", {}), ts.execute("nope", {})[:6]
    ('pong', 'Error:')
    """

    def __init__(self, tools: Iterable[Tool] | Mapping[str, Tool] = ()) -> None:
        items = tools.values() if isinstance(tools, Mapping) else tools
        self._tools: dict[str, Tool] = {}
        for tool in items:
            if not isinstance(tool, Tool):
                raise TypeError(f"Toolset holds Tool values, got {type(tool).__name__}")
            self._tools[tool.name] = tool

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolset({list(self._tools)!r})"

    def __or__(self, other: Mapping[str, Tool]) -> Toolset:
        if not isinstance(other, Mapping):
            return NotImplemented
        return Toolset([*self._tools.values(), *other.values()])

    def __ror__(self, other: Mapping[str, Tool]) -> Toolset:
        if not isinstance(other, Mapping):
            return NotImplemented
        return Toolset([*other.values(), *self._tools.values()])

    def execute(self, name: str, args: Any = None) -> str:
        """Run a tool and return its result; every failure becomes ``"Error: <message>"``.

        ``args`` is a dict (a JSON object string, as OpenAI sends it, is accepted too). Required
        arguments, declared types and unknown arguments are checked before the tool runs.

        >>> schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        >>> ts = Toolset([Tool("double", "Double n.", schema, lambda a: str(2 * a["n"]))])
        >>> ts.execute("double", {"n": 21}), ts.execute("double", '{"n": 4}')
        ('42', '8')
        >>> ts.execute("double", {"n": "x"})
        'Error: argument "n" for tool "double" must be of type integer'
        >>> ts.execute("triple", {})
        'Error: unknown tool "triple". Available tools: double'
        """
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            known = ", ".join(self._tools) or "none"
            shown = name[:100] if isinstance(name, str) else reprlib.repr(name)
            return f'Error: unknown tool "{shown}". Available tools: {known}'
        return run_tool(tool.name, tool.parameters, args, tool.execute)

    def _each(self) -> Iterator[tuple[Tool, dict[str, Any]]]:
        # Deep copies: callers may mutate the exported schemas without touching the tools.
        for tool in self._tools.values():
            yield tool, copy.deepcopy(tool.parameters)

    def to_openai(self) -> list[dict[str, Any]]:
        """Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` entries.

        >>> ts = Toolset([Tool("ping", "Answer pong.", {"type": "object"}, lambda a: "pong")])
        >>> ts.to_openai()  # doctest: +NORMALIZE_WHITESPACE
        [{'type': 'function', 'function': {'name': 'ping', 'description': 'Answer pong.',
          'parameters': {'type': 'object'}}}]
        """
        return [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": p},
            }
            for t, p in self._each()
        ]

    def to_openai_responses(self) -> list[dict[str, Any]]:
        """Responses API ``tools``: flat function entries.

        ``strict`` is ``False`` because the Responses API otherwise treats function schemas as
        strict, which requires every property to be required — ours have optional ones.

        >>> ts = Toolset([Tool("ping", "Answer pong.", {"type": "object"}, lambda a: "pong")])
        >>> ts.to_openai_responses()  # doctest: +NORMALIZE_WHITESPACE
        [{'type': 'function', 'name': 'ping', 'description': 'Answer pong.',
          'parameters': {'type': 'object'}, 'strict': False}]
        """
        return [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": p,
                "strict": False,
            }
            for t, p in self._each()
        ]

    def to_anthropic(self) -> list[dict[str, Any]]:
        """Anthropic Messages ``tools``: ``{"name", "description", "input_schema"}``.

        >>> ts = Toolset([Tool("ping", "Answer pong.", {"type": "object"}, lambda a: "pong")])
        >>> ts.to_anthropic()
        [{'name': 'ping', 'description': 'Answer pong.', 'input_schema': {'type': 'object'}}]
        """
        return [
            {"name": t.name, "description": t.description, "input_schema": p}
            for t, p in self._each()
        ]

    def to_mcp(self) -> list[dict[str, Any]]:
        """MCP ``tools/list`` entries: ``{"name", "description", "inputSchema"}``.

        >>> ts = Toolset([Tool("ping", "Answer pong.", {"type": "object"}, lambda a: "pong")])
        >>> ts.to_mcp()
        [{'name': 'ping', 'description': 'Answer pong.', 'inputSchema': {'type': 'object'}}]
        """
        return [
            {"name": t.name, "description": t.description, "inputSchema": p}
            for t, p in self._each()
        ]


# --------------------------------------------------------------------------- context tools


class ToolHost(Protocol):
    """What the context tools need from a session (``Session`` implements it).

    >>> import threadline
    >>> host: ToolHost = threadline.Session.create(":memory:").with_context("memory")
    >>> tools = build_context_tools(host)
    >>> tools.execute("set_context", {"label": "memory", "content": "likes tea"})
    'Written to memory. Usage: 3 tokens'
    """

    def get_context_blocks(self) -> list[ContextBlock]:
        """Every block, in registration order.

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> [(b.label, b.writable) for b in host.get_context_blocks()]
        [('memory', True)]
        """
        ...

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replace a writable block's content (``set_context`` with ``action="replace"``).

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> host.replace_context_block("memory", "likes tea").content
        'likes tea'
        """
        ...

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Append to a writable block (``set_context`` with ``action="append"``).

        >>> import threadline
        >>> host = threadline.Session.create(":memory:").with_context("memory")
        >>> _ = host.append_context_block("memory", "likes tea")
        >>> host.append_context_block("memory", "lives in Oslo").content
        'likes tea\\nlives in Oslo'
        """
        ...

    def write_context_entry(
        self, label: str, content: str, *, title: str | None = None, description: str | None = None
    ) -> str:
        """Store one entry of a skill or search block; return its key.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        'pirate'
        """
        ...

    def load_context_entry(self, label: str, key: str) -> str | None:
        """A skill document (``load_context``), or ``None``; it then counts as loaded.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> host.load_context_entry("skills", key), host.loaded_skills
        ('Talk like a pirate.', {'skills:pirate'})
        """
        ...

    def search_context_block(self, label: str, query: str) -> str | None:
        """Search a searchable block (``search_context``); ``None`` when nothing matches.

        >>> import threadline
        >>> from threadline.context import StoreSearchProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "notes", provider=StoreSearchProvider(store))
        >>> _ = host.write_context_entry("notes", "The user drinks green tea.", title="tea")
        >>> print(host.search_context_block("notes", "tea"))
        [tea]
        The user drinks green tea.
        """
        ...

    def unload_skill(self, label: str, key: str) -> bool:
        """Unload a loaded skill (``unload_context``); ``False`` if it was not loaded.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> _ = host.load_context_entry("skills", key)
        >>> host.unload_skill("skills", key), host.unload_skill("skills", key)
        (True, False)
        """
        ...

    @property
    def loaded_skills(self) -> set[str]:
        """Skills currently loaded, as ``"label:key"``.

        >>> import threadline
        >>> from threadline.context import StoreSkillProvider
        >>> store = threadline.connect(":memory:")
        >>> host = threadline.Session.create(store).with_context(
        ...     "skills", provider=StoreSkillProvider(store))
        >>> host.loaded_skills
        set()
        >>> key = host.write_context_entry("skills", "Talk like a pirate.", title="Pirate")
        >>> _ = host.load_context_entry("skills", key)
        >>> host.loaded_skills
        {'skills:pirate'}
        """
        ...


def _object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _make_tool(
    name: str, description: str, parameters: dict[str, Any], run: Callable[[dict[str, Any]], str]
) -> Tool:
    """A Tool whose ``execute`` checks its arguments and never raises, even called directly."""

    def execute(args: dict[str, Any]) -> str:
        return run_tool(name, parameters, args, run)

    return Tool(name, description, parameters, execute)


def _kind_name(block: ContextBlock) -> str:
    if block.is_skill:
        return "skill collection, keyed entries"
    if block.is_searchable:
        return "searchable, keyed entries"
    return "writable"


def _usage(block: ContextBlock) -> str:
    if block.max_tokens is None:
        return f"Usage: {block.tokens} tokens"
    percent = usage_percent(block.tokens, block.max_tokens)
    return f"Usage: {percent}% ({block.tokens}/{block.max_tokens} tokens)"


def _find(host: ToolHost, label: str) -> ContextBlock | None:
    return next((b for b in host.get_context_blocks() if b.label == label), None)


def _set_context_description(writable: Sequence[ContextBlock]) -> str:
    lines = [
        "Save information in one of your context blocks. Writes are durable: they persist "
        "across turns and sessions and show in your system prompt from its next refresh.",
        "",
        "Writable blocks:",
        *(
            f'- "{b.label}" ({_kind_name(b)}): {b.description or "no description"}'
            for b in writable
        ),
        "",
        'action: "replace" (default) overwrites a block; "append" adds the content on a new '
        "line. Keep blocks within their token limits.",
    ]
    if any(b.is_skill or b.is_searchable for b in writable):
        lines += [
            "",
            "Keyed blocks store one entry per write. Pass metadata: { title, description } to "
            "name the entry (the same title updates the same entry; without a title the key "
            "is derived from the content) and to describe it in a skill listing.",
        ]
    return "\n".join(lines)


def _set_context_tool(host: ToolHost, writable: Sequence[ContextBlock]) -> Tool:
    properties: dict[str, Any] = {
        "label": {
            "type": "string",
            "enum": [b.label for b in writable],
            "description": "Label of the block to write.",
        },
        "content": {"type": "string", "description": "Text to write."},
        "action": {
            "type": "string",
            "enum": ["replace", "append"],
            "default": "replace",
            "description": "replace (default) or append; ignored for keyed blocks.",
        },
    }
    if any(b.is_skill or b.is_searchable for b in writable):
        properties["metadata"] = {
            "type": "object",
            "description": "For keyed (skill or searchable) blocks only.",
            "properties": {
                "title": {"type": "string", "description": "Entry title; decides its key."},
                "description": {"type": "string", "description": "One-line summary."},
            },
            "additionalProperties": False,
        }

    def run(args: dict[str, Any]) -> str:
        label, content = args["label"], args["content"]
        action = args.get("action") or "replace"
        if action not in ("replace", "append"):
            return f'Error: unknown action "{action}"; use "replace" or "append"'
        block = _find(host, label)
        if block is None:
            return f'Error: block "{label}" not found'
        if not block.writable:
            return f'Error: block "{label}" is readonly'
        if block.is_skill or block.is_searchable:
            meta = args.get("metadata") or {}
            key = host.write_context_entry(
                label, content, title=meta.get("title"), description=meta.get("description")
            )
            return f'Indexed "{key}" in {label}.'
        write = host.append_context_block if action == "append" else host.replace_context_block
        try:
            updated = write(label, content)
        except ReadOnlyBlockError:
            return f'Error: block "{label}" is readonly'
        return f"Written to {label}. {_usage(updated)}"

    schema = _object_schema(properties, ["label", "content"])
    return _make_tool("set_context", _set_context_description(writable), schema, run)


def _label_key_schema(labels: list[str], what: str) -> dict[str, Any]:
    return _object_schema(
        {
            "label": {"type": "string", "enum": labels, "description": f"Label of the {what}."},
            "key": {"type": "string", "description": "Key of the document, as listed."},
        },
        ["label", "key"],
    )


def _skill_tools(host: ToolHost, skills: list[str]) -> list[Tool]:
    def not_skill(label: str) -> str:
        return f'Error: "{label}" is not a skill block. Skill blocks: {", ".join(skills)}'

    def load(args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        if label not in skills:
            return not_skill(label)
        content = host.load_context_entry(label, key)
        return content if content is not None else f"Not found: {key}"

    def unload(args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        if label not in skills:
            return not_skill(label)
        if host.unload_skill(label, key):
            return f'Unloaded "{key}" from {label}. Context reclaimed.'
        return f'Skill "{key}" is not currently loaded in "{label}".'

    loaded = sorted(host.loaded_skills)
    status = (
        f" Currently loaded: {', '.join(loaded)}." if loaded else " No skills currently loaded."
    )
    listing = ", ".join(f'"{label}"' for label in skills)
    return [
        _make_tool(
            "load_context",
            "Load the full text of a document from a skill block (skill blocks list their "
            f"documents as `- key: description`). Skill blocks: {listing}. Unload it with "
            "unload_context once you no longer need it.",
            _label_key_schema(skills, "skill block"),
            load,
        ),
        _make_tool(
            "unload_context",
            "Unload a skill document loaded earlier with load_context, freeing context space; "
            f"it can be loaded again later.{status}",
            _label_key_schema(skills, "skill block"),
            unload,
        ),
    ]


def _search_tool(host: ToolHost, searchable: Sequence[ContextBlock]) -> Tool:
    labels = [b.label for b in searchable]

    def run(args: dict[str, Any]) -> str:
        label, query = args["label"], args["query"]
        if label not in labels:
            return f'Error: "{label}" is not searchable. Searchable blocks: {", ".join(labels)}'
        return host.search_context_block(label, query) or NO_RESULTS

    listing = "\n".join(f'- "{b.label}": {b.description or "no description"}' for b in searchable)
    schema = _object_schema(
        {
            "label": {"type": "string", "enum": labels, "description": "Block to search."},
            "query": {"type": "string", "description": "Words or a quoted phrase to find."},
        },
        ["label", "query"],
    )
    description = f"Search a searchable context block for matching entries.\n{listing}"
    return _make_tool("search_context", description, schema, run)


def build_context_tools(host: ToolHost) -> Toolset:
    """The memory tools the host's blocks call for, computed now.

    ``set_context`` if any block is writable, ``load_context``/``unload_context`` if any is a
    skill block, ``search_context`` if any is searchable.

    >>> import threadline
    >>> session = threadline.Session.create(":memory:").with_context("memory")
    >>> list(build_context_tools(session))
    ['set_context']
    """
    blocks = host.get_context_blocks()
    tools: list[Tool] = []
    writable = [b for b in blocks if b.writable]
    if writable:
        tools.append(_set_context_tool(host, writable))
    skills = [b.label for b in blocks if b.is_skill]
    if skills:
        tools.extend(_skill_tools(host, skills))
    searchable = [b for b in blocks if b.is_searchable]
    if searchable:
        tools.append(_search_tool(host, searchable))
    return Toolset(tools)


class _Hit(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def content(self) -> str: ...


def format_search_hits(hits: Iterable[_Hit]) -> str | None:
    """The best 10 hits as ``[role] content`` separated by ``---`` lines; ``None`` if none.

    >>> from threadline.types import SearchHit
    >>> format_search_hits([SearchHit("m1", "user", "hi", None, "s", 1.0)])
    '[user] hi'
    """
    shown = list(hits)[:SEARCH_RESULT_LIMIT]
    return "\n---\n".join(f"[{h.role}] {h.content}" for h in shown) if shown else None


def make_session_search_tool(
    search_fn: Callable[[str], Sequence[_Hit]], *, description: str | None = None
) -> Tool:
    """The ``session_search`` tool over past conversations.

    ``search_fn(query)`` returns hits with ``role`` and ``content`` (``SearchHit``); the best
    10 are shown as ``[role] content`` separated by ``---`` lines.

    >>> from threadline.types import SearchHit
    >>> tool = make_session_search_tool(lambda q: [SearchHit("m1", "user", "hi", None, "s", 1.0)])
    >>> tool.execute({"query": "hi"})
    '[user] hi'
    """

    def run(args: dict[str, Any]) -> str:
        return format_search_hits(search_fn(args["query"])) or NO_RESULTS

    schema = _object_schema(
        {"query": {"type": "string", "description": "Words or a quoted phrase to find."}},
        ["query"],
    )
    text = description or (
        "Search earlier conversations (every session of this app) for messages matching the "
        "query; returns the best matches with their role."
    )
    return _make_tool("session_search", text, schema, run)
