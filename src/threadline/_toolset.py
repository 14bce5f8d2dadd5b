"""Tool, Toolset and run_tool: the one never-raising way a model's tool call runs.

Re-exported by :mod:`threadline.tools`, the public home of ``Tool`` and ``Toolset``.

>>> tool = checked_tool("echo", "Repeat the text.", object_schema(
...     {"text": {"type": "string"}}, ["text"]), lambda args: args["text"])
>>> tool.execute({"text": "hi"}), tool.execute({})
('hi', 'Error: missing required argument "text" for tool "echo"')
"""

from __future__ import annotations

import copy
import json
import reprlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from threadline._validate import json_problem
from threadline.errors import BlockNotFoundError

NO_RESULTS = "No results found."
"""What a search tool answers when nothing matches."""


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


# --------------------------------------------------------------------------- building tools


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def checked_tool(
    name: str, description: str, parameters: dict[str, Any], run: Callable[[dict[str, Any]], str]
) -> Tool:
    """A Tool whose ``execute`` checks its arguments and never raises, even called directly."""

    def execute(args: dict[str, Any]) -> str:
        return run_tool(name, parameters, args, run)

    return Tool(name, description, parameters, execute)
