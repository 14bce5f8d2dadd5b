"""Issue 24: one verb table (``threadline._verbs``), every transport checked against it.

The home of a verb is ``Session.<name>``: its signature is taken by ``inspect``. Each transport
column of the table is checked here: ``SessionManager`` / ``AsyncSessionManager`` (session id
first, ``user_id=None`` last), ``AsyncSession`` (the twin rule), ``RemoteSession`` /
``AsyncRemoteSession``, ``Client`` / ``AsyncClient`` (the manager's signature), the HTTP routes
(the app's OpenAPI schema: method, path, where each parameter travels, its default) and the
``threadline`` commands (options and positionals). A client method, made from its plan, looks
the same on its class as on an instance. This is the one definition of "same signature" (the
client's tests hold none of their own). Then errors: the same typed error on every
transport, on a real SQLite file and the real app. ``docs/verbs.md`` is the table rendered.

A known defect is one ``xfail(strict=True)`` check below: it fails once fixed, and its mark goes.
"""

from __future__ import annotations

import asyncio
import collections.abc
import datetime
import inspect
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import threadline
import threadline.client._manager_calls
import threadline.client._session_calls
import threadline.manager
import threadline.session
from threadline import Session, SessionManager
from threadline._verbs import (
    MANAGER_ONLY,
    NOT_VERBS,
    TWIN_NAMES,
    VERBS,
    VERBS_BY_NAME,
    Route,
    Verb,
)
from threadline.aio import AsyncSession, AsyncSessionManager
from threadline.client import AsyncClient, Client
from threadline.errors import (
    BlockNotFoundError,
    BlockTooLargeError,
    InvalidArgumentError,
    InvalidMessageError,
    MessageNotFoundError,
    SessionNotFoundError,
)
from threadline.types import AUTO

DOC = Path(__file__).parents[2] / "docs" / "verbs.md"

# -- known defects (owner: the fix; the lead removes the mark once it lands) --------------------
KNOWN: dict[tuple[str, str], str] = {}


def _known(owner: str, name: str) -> Any:
    reason = KNOWN.get((owner, name))
    mark = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(owner, name, marks=mark, id=f"{owner}.{name}")


# -- signatures, normalised ----------------------------------------------------------------------
_NS: dict[str, Any] = {}
for _module in (
    typing,
    collections.abc,
    datetime,
    threadline.types,
    threadline.session,
    threadline.manager,
    threadline.aio,
    threadline.client._session_calls,
    threadline.client._manager_calls,
    threadline.client,
):
    _NS.update(vars(_module))


def _ann(annotation: Any) -> str:
    """An annotation as comparable text: strings evaluated (postponed annotations, module
    aliases such as ``_Messages``), module paths dropped."""
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        try:
            annotation = eval(annotation, _NS)  # our own annotations
        except Exception:
            return str(annotation)
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return re.sub(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])", "", text)


def _twin(text: str) -> str:
    names = "|".join(sorted(TWIN_NAMES, key=len, reverse=True))
    return re.sub(rf"\b({names})\b", lambda m: TWIN_NAMES[m.group(1)], text)


Shape = tuple[list[tuple[str, Any, Any, str]], str]


def _shape(fn: Callable[..., Any]) -> Shape:
    """(parameters as (name, kind, default, annotation), result), ``self`` left out."""
    sig = inspect.signature(fn)
    params = [
        (p.name, p.kind, p.default, _ann(p.annotation))
        for p in sig.parameters.values()
        if p.name != "self"
    ]
    return params, _ann(sig.return_annotation)


def _home(verb: Verb) -> Shape:
    member = inspect.getattr_static(Session, verb.name)
    if isinstance(member, property):
        assert member.fget is not None
        return [], _ann(inspect.signature(member.fget).return_annotation)
    return _shape(getattr(Session, verb.name))


def _forwarder(verb: Verb, owner: str = "SessionManager") -> Shape:
    """The manager's signature derived from the home: ``session_id`` first, ``user_id`` last
    (and, at the managers, the verb's declared ``manager_defaults``)."""
    params, result = _home(verb)
    if owner in ("SessionManager", "AsyncSessionManager"):
        declared = verb.manager_defaults
        params = [
            (n, k, eval(declared[n][0], _NS), _ann(declared[n][1]))
            if n in declared
            else (n, k, d, a)
            for n, k, d, a in params
        ]
    session_id = ("session_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect._empty, "str")
    user_id = ("user_id", inspect.Parameter.KEYWORD_ONLY, None, "str | None")
    if verb.kind == "property":
        result = "dict[str, Any]"  # a copy of the mapping the property reads
    return [session_id, *params, user_id], result


_PLAIN_CLIENT = Client("http://127.0.0.1:9")
_ASYNC_CLIENT = AsyncClient("http://127.0.0.1:9")
OBJECTS: dict[str, Any] = {
    "Session": Session,
    "AsyncSession": AsyncSession,
    "SessionManager": SessionManager,
    "AsyncSessionManager": AsyncSessionManager,
    "RemoteSession": _PLAIN_CLIENT.get_session("s"),  # descriptors: methods of an instance
    "AsyncRemoteSession": _ASYNC_CLIENT.get_session("s"),
    "Client": _PLAIN_CLIENT,
    "AsyncClient": _ASYNC_CLIENT,
}


def _public(owner: str) -> set[str]:
    cls = OBJECTS[owner] if isinstance(OBJECTS[owner], type) else type(OBJECTS[owner])
    return {n for n in dir(cls) if not n.startswith("_")}


def _is_async(owner: str) -> bool:
    return owner.startswith("Async")


def _check(owner: str, name: str, wanted: Shape) -> list[str]:
    """What differs between ``owner.name`` and ``wanted`` (an async owner: after the twin
    substitution, and awaited)."""
    obj = OBJECTS[owner]
    cls = obj if isinstance(obj, type) else type(obj)
    static = inspect.getattr_static(cls, name, None)
    if static is None:
        return [f"{owner} has no {name}"]
    params, result = wanted
    if _is_async(owner):
        params = [(n, k, d, _twin(a)) for n, k, d, a in params]
        result = _twin(result)
    home = inspect.getattr_static(Session, name, None)
    if isinstance(home, property) and _is_async(owner) and not params:
        # Read from storage: a coroutine method of the twin, returning a copy.
        result = re.sub(r"^Mapping\[", "dict[", result)
    if isinstance(static, property):
        if _is_async(owner) or (params[:1] and params[0][0] == "session_id"):
            return [f"{owner}.{name} is a property, a method is due"]
        assert static.fget is not None
        got: Shape = ([], _ann(inspect.signature(static.fget).return_annotation))
    else:
        method = getattr(obj, name)
        got = _shape(method)
        if _is_async(owner) and not inspect.iscoroutinefunction(method):
            return [f"{owner}.{name} is not awaitable"]
    problems = []
    if got[0] != params:
        problems.append(f"parameters {got[0]} != {params}")
    if got[1] != result:
        problems.append(f"result {got[1]!r} != {result!r}")
    return problems


# -- the table covers the home -------------------------------------------------------------------
def test_every_public_member_of_session_is_a_verb_or_declared_not_one() -> None:
    members = _public("Session")
    assert members - set(VERBS_BY_NAME) - NOT_VERBS == set(), "new verbs: add them to the table"
    assert set(VERBS_BY_NAME) - members == set(), "the table names a verb Session lacks"
    assert len(VERBS_BY_NAME) == len(VERBS)


@pytest.mark.parametrize("owner", ["SessionManager", "AsyncSessionManager"])
def test_every_manager_method_is_a_forwarder_or_the_managers_own(owner: str) -> None:
    forwarders = {v.manager for v in VERBS if v.manager}
    assert _public(owner) - forwarders - set(MANAGER_ONLY) - NOT_VERBS == set()
    assert forwarders - _public(owner) == set()


@pytest.mark.parametrize("owner", ["RemoteSession", "AsyncRemoteSession"])
def test_remote_sessions_carry_exactly_the_declared_verbs(owner: str) -> None:
    assert _public(owner) - NOT_VERBS == {v.name for v in VERBS if v.remote}


@pytest.mark.parametrize("owner", ["Client", "AsyncClient"])
def test_clients_carry_exactly_the_declared_manager_methods(owner: str) -> None:
    declared = {v.manager for v in VERBS if v.client} | {n for n, c in MANAGER_ONLY.items() if c}
    extras = {"close", "base_url", "export_sessions", "import_sessions"}  # the client's own
    assert _public(owner) - extras == declared


# -- each transport against the home -------------------------------------------------------------
@pytest.mark.parametrize(
    ("owner", "name"),
    [_known("AsyncSession", v.name) for v in VERBS]
    + [
        _known(o, v.name)
        for o in ("RemoteSession", "AsyncRemoteSession")
        for v in VERBS
        if v.remote
    ],
)
def test_session_twins_and_remote_sessions_have_the_home_signature(owner: str, name: str) -> None:
    assert _check(owner, name, _home(VERBS_BY_NAME[name])) == []


MANAGED = [v for v in VERBS if v.manager]


@pytest.mark.parametrize(
    ("owner", "name"),
    [_known(o, str(v.manager)) for o in ("SessionManager", "AsyncSessionManager") for v in MANAGED]
    + [_known(o, str(v.manager)) for o in ("Client", "AsyncClient") for v in MANAGED if v.client],
)
def test_managers_and_clients_forward_with_session_id_first_and_user_id_last(
    owner: str, name: str
) -> None:
    verb = next(v for v in MANAGED if v.manager == name)
    wanted = _forwarder(verb, owner)
    if owner in ("SessionManager", "AsyncSessionManager"):
        # The manager may return a richer subclass (AppendResult is a list[Message]).
        got = _shape(getattr(SessionManager, name))[1]
        sub = eval(got, _NS) if got.isidentifier() else None
        if isinstance(sub, type) and issubclass(sub, list) and wanted[1].startswith("list["):
            wanted = (wanted[0], got)
    else:
        wanted = (wanted[0], _shape(getattr(SessionManager, name))[1])  # the manager's result
    assert _check(owner, name, wanted) == []


@pytest.mark.parametrize(
    ("owner", "name"),
    [_known(o, n) for o in ("Client", "AsyncClient") for n, c in MANAGER_ONLY.items() if c],
)
def test_the_clients_manager_methods_have_the_managers_signature(owner: str, name: str) -> None:
    wanted = _shape(getattr(SessionManager, name))
    if name == "get_session":  # the client's own handle, made without a request (GET_SESSION)
        method = getattr(OBJECTS[owner], name)
        assert _shape(method) == (wanted[0], owner.replace("Client", "RemoteSession"))
        assert not inspect.iscoroutinefunction(method)
        return
    assert _check(owner, name, wanted) == []


CLIENTS = ["RemoteSession", "AsyncRemoteSession", "Client", "AsyncClient"]


@pytest.mark.parametrize("owner", CLIENTS)
def test_a_client_method_looks_the_same_on_its_class_and_on_an_instance(owner: str) -> None:
    """A client method is made from its plan (``client._drive``): on the class it shows
    ``self`` then the instance's parameters, the plan's result (not ``Plan[...]``) and the
    class's qualified name, as a method written out would."""
    obj = OBJECTS[owner]
    cls = type(obj)
    methods = [n for n in _public(owner) if callable(inspect.getattr_static(cls, n))]
    assert len(methods) >= 15
    for name in methods:
        on_class, on_instance = getattr(cls, name), getattr(obj, name)
        assert next(iter(inspect.signature(on_class).parameters)) == "self", name
        assert _shape(on_class) == _shape(on_instance), name
        assert on_class.__qualname__ == f"{cls.__name__}.{name}"
        assert not _shape(on_instance)[1].startswith("Plan["), name


def test_the_check_sees_a_difference() -> None:
    """Not vacuous: a missing forwarder parameter and a wrong default are reported."""

    class Loose:
        def append(self, session_id: str, message: Any, **options: Any) -> Any: ...

    OBJECTS["Loose"] = Loose
    try:
        assert len(_check("Loose", "append", _forwarder(VERBS_BY_NAME["append_message"]))) == 2
    finally:
        del OBJECTS["Loose"]


# -- HTTP ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    from threadline.server import create_app

    with threadline.connect(":memory:") as store:
        schema: dict[str, Any] = create_app(store).openapi()
    return schema


def _body_fields(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The properties a request body may carry (``$ref``, ``anyOf`` and ``allOf`` followed)."""
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    required = set(schema.get("required", ()))
    fields = {
        name: {**prop, "required": name in required}
        for name, prop in schema.get("properties", {}).items()
    }
    for key in ("anyOf", "allOf", "oneOf"):
        for part in schema.get(key, ()):
            fields.update(_body_fields(part, spec))
    return fields


def _operation(spec: dict[str, Any], route: Route) -> dict[str, Any]:
    operation = spec["paths"].get(route.path, {}).get(route.method.lower())
    assert operation is not None, f"no route {route.method} {route.path}"
    return dict(operation)


def _wire(spec: dict[str, Any], route: Route) -> dict[str, dict[str, Any]]:
    """Every wire parameter of a route as ``"<where>:<name>"``, headers left out."""
    operation = _operation(spec, route)
    wire = {
        f"{p['in']}:{p['name']}": {**p.get("schema", {}), "required": p.get("required", False)}
        for p in operation.get("parameters", ())
        if p["in"] in ("path", "query")
    }
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body is not None:
        wire["body"] = {"required": operation["requestBody"].get("required", False)}
        for name, prop in _body_fields(body["schema"], spec).items():
            wire[f"field:{name}"] = prop
    return wire


def _default_problem(place: str, wire: dict[str, Any], default: Any) -> str | None:
    if default is AUTO:  # the head: travels as absence
        return None if not wire["required"] else f"{place} is required, AUTO is its absence"
    if default is inspect.Parameter.empty:
        return None if wire["required"] or place.startswith("path") else f"{place} optional"
    if wire["required"]:
        return f"{place} is required, the verb's default is {default!r}"
    if wire.get("default") != default and not (default is None and "default" not in wire):
        return f"{place} default {wire.get('default')!r} != {default!r}"
    return None


HTTP_VERBS = [v for v in VERBS if v.http]


@pytest.mark.parametrize("verb", HTTP_VERBS, ids=[v.name for v in HTTP_VERBS])
def test_each_http_route_carries_the_verbs_parameters_with_its_defaults(
    openapi: dict[str, Any], verb: Verb
) -> None:
    assert verb.http is not None
    wire = _wire(openapi, verb.http)
    params = (
        inspect.signature(getattr(Session, verb.name)).parameters if verb.kind == "method" else {}
    )
    problems = [f"{n} not carried" for n in params if n != "self" and n not in verb.http.params]
    for name, place in verb.http.params.items():
        if place == "client":
            continue
        place = place.removeprefix("each:")
        if place not in wire:
            problems.append(f"{name}: no {place} on the route")
            continue
        default = params[name].default
        if default is None and place.startswith("path:") and verb.http.otherwise is not None:
            _operation(openapi, verb.http.otherwise)  # left out: that route is taken
            continue
        if place != "body":
            problem = _default_problem(place, wire[place], default)
            if problem:
                problems.append(f"{name}: {problem}")
            problems += _bound_problems(name, wire[place], verb.http.caps.get(name))
    assert problems == []


def _bounds(schema: dict[str, Any], key: str) -> set[Any]:
    found = {schema[key]} if key in schema else set()
    for part in schema.get("anyOf", ()):
        found |= _bounds(part, key)
    return found


def _bound_problems(name: str, schema: dict[str, Any], cap: int | None) -> list[str]:
    """The wire's bounds of an integer parameter are the library's (``_checks``): the same
    minimum, and no maximum but a declared cap of the server."""
    import functools

    from threadline._checks import API_RULES
    from threadline._validate import check_int

    rule = API_RULES.get(name)
    if not (isinstance(rule, functools.partial) and rule.func is check_int):
        return []
    wanted = {rule.keywords["minimum"]}
    problems = []
    if _bounds(schema, "minimum") not in (wanted, set()):
        problems.append(f"{name}: wire minimum {_bounds(schema, 'minimum')} != library {wanted}")
    if _bounds(schema, "maximum") != ({cap} if cap is not None else set()):
        problems.append(f"{name}: wire maximum {_bounds(schema, 'maximum')}, declared {cap}")
    return problems


def test_every_wire_parameter_of_a_verbs_route_is_a_verb_parameter(
    openapi: dict[str, Any],
) -> None:
    claimed: dict[tuple[str, str], set[str]] = {}
    for verb in HTTP_VERBS:
        assert verb.http is not None
        key = (verb.http.method, verb.http.path)
        places = {p.removeprefix("each:") for p in verb.http.params.values()}
        claimed.setdefault(key, {"path:session_id", "body"}).update(
            places | {f"{w}:{x}" for x in verb.http.extra for w in ("path", "query", "field")}
        )
    unclaimed = {
        f"{method} {path}": sorted(set(_wire(openapi, Route(method, path))) - places)
        for (method, path), places in claimed.items()
    }
    assert {k: v for k, v in unclaimed.items() if v} == {}


# The routes of one session that are no verb's: the manager's own calls and the wire's own.
SESSION_ROUTES_NOT_VERBS = {
    ("GET", "/v1/sessions/{session_id}"),  # get
    ("PATCH", "/v1/sessions/{session_id}"),  # rename
    ("DELETE", "/v1/sessions/{session_id}"),  # delete
    ("POST", "/v1/sessions/{session_id}/fork"),
    ("POST", "/v1/sessions/{session_id}/rewind"),
    ("POST", "/v1/sessions/{session_id}/usage"),  # add_usage
    ("GET", "/v1/sessions/{session_id}/tree"),  # the viewer's paged tree
    ("GET", "/v1/sessions/{session_id}/path"),  # the studio's paged path (big sessions)
    ("POST", "/v1/sessions/{session_id}/tools/{name}"),  # Toolset.execute of tools()
    ("GET", "/v1/sessions/{session_id}/events"),  # server-sent events
    ("GET", "/v1/sessions/{session_id}/context"),  # Runner.context
    ("POST", "/v1/sessions/{session_id}/turns"),  # Runner.run with the profile's model
}


def test_every_route_of_a_session_is_a_verbs_or_declared(openapi: dict[str, Any]) -> None:
    routes = {
        (method.upper(), path)
        for path, operations in openapi["paths"].items()
        if path.startswith("/v1/sessions/{session_id}")
        for method in operations
    }
    verbs = {(v.http.method, v.http.path) for v in HTTP_VERBS if v.http}
    assert routes - verbs - SESSION_ROUTES_NOT_VERBS == set()
    assert SESSION_ROUTES_NOT_VERBS - routes == set()


# The manager's own calls with query parameters: no verb's, but their defaults and bounds are
# still the manager's (a page of sessions or hits is at most 1000 over HTTP).
MANAGER_ROUTES = {
    "list": Route(
        "GET",
        "/v1/sessions",
        {"user_id": "query:user_id", "limit": "query:limit", "cursor": "query:cursor"},
        caps={"limit": 1000},
    ),
    "search": Route(
        "GET",
        "/v1/search",
        {"query": "query:q", "limit": "query:limit", "user_id": "query:user_id"},
        caps={"limit": 1000},
    ),
}


@pytest.mark.parametrize("name", sorted(MANAGER_ROUTES))
def test_the_managers_own_routes_carry_its_defaults(openapi: dict[str, Any], name: str) -> None:
    route = MANAGER_ROUTES[name]
    wire = _wire(openapi, route)
    params = inspect.signature(getattr(SessionManager, name)).parameters
    assert set(route.params) == set(params) - {"self"}
    problems = [
        f"{p}: no {place} on the route" for p, place in route.params.items() if place not in wire
    ]
    for p, place in route.params.items():
        if place in wire:
            problem = _default_problem(place, wire[place], params[p].default)
            problems += [f"{p}: {problem}"] if problem else []
            problems += _bound_problems(p, wire[place], route.caps.get(p))
    assert problems == []


# -- CLI -----------------------------------------------------------------------------------------
CLI_VERBS = [v for v in VERBS if v.cli]


@pytest.mark.parametrize("verb", CLI_VERBS, ids=[v.name for v in CLI_VERBS])
def test_each_command_carries_the_declared_parameters(verb: Verb) -> None:
    import typer.main

    from threadline.cli import app

    assert verb.cli is not None
    command: Any = typer.main.get_command(app)
    for word in verb.cli.name.split():  # "blocks replace": a subcommand of a group
        command = command.commands[word]
    options = {opt: p for p in command.params for opt in p.opts}
    usage = (command.options_metavar or "").split()
    assert verb.cli.session in (options if verb.cli.session.startswith("--") else usage)
    home = getattr(Session, verb.name)
    params = {} if verb.kind == "property" else inspect.signature(home).parameters
    for name, where in verb.cli.params.items():
        default = params[name].default
        if where.startswith("--"):
            assert where in options, f"{verb.cli.name} has no {where}"
            if default is not inspect.Parameter.empty:
                assert options[where].default == default
        else:
            assert where in usage and default is inspect.Parameter.empty


# The commands that are no per-session verb's: the manager's own calls and the tool's own.
COMMANDS_NOT_VERBS = {
    "sessions", "show", "export", "import", "copy", "fork", "delete", "serve", "demo",
    "rename", "rewind", "purge", "forget-user", "profile", "mcp",
}  # fmt: skip


def test_every_command_is_a_verbs_or_declared() -> None:
    import typer.main

    from threadline.cli import app

    group = typer.main.get_command(app)
    commands = set(group.commands) - {"keys"}  # type: ignore[attr-defined]
    verbs = {v.cli.name.split()[0] for v in CLI_VERBS if v.cli}
    assert commands - verbs == COMMANDS_NOT_VERBS


# -- MCP: threadline mcp's own tool schemas and resource templates -----------------------------
MCP_VERBS = [v for v in VERBS if v.mcp is not None]


def _mcp_catalogue() -> tuple[dict[str, dict[str, Any]], set[str]]:
    """``threadline mcp``'s tools (name -> input schema) for a profile with every block kind,
    and its resource templates."""
    pytest.importorskip("mcp")
    from threadline.profile import Profile
    from threadline.server._mcp_tools import RESOURCES, list_tools
    from threadline.server._tenancy import Tenant

    store = threadline.connect(":memory:")
    Profile.from_dict(
        {
            "blocks": [
                {"label": "notes", "kind": "writable"},
                {"label": "faq", "kind": "search", "store": True},
                {"label": "skills", "kind": "skill", "store": True},
            ]
        }
    ).save(store, "a")
    manager = SessionManager.from_profile(store, "a")
    tools = {t["name"]: t["inputSchema"] for t in list_tools(Tenant("a", None, manager), None)}
    return tools, {template for _, template, _, _ in RESOURCES}


@pytest.mark.parametrize("verb", MCP_VERBS, ids=lambda v: v.name)
def test_each_mcp_tool_or_resource_carries_the_verbs_parameters(verb: Verb) -> None:
    assert verb.mcp is not None
    tools, templates = _mcp_catalogue()
    home = inspect.signature(getattr(Session, verb.name)).parameters
    assert set(verb.mcp.params) <= set(home), verb.name
    if verb.mcp.name.startswith("threadline://"):
        assert verb.mcp.name in templates
        for argument in verb.mcp.params.values():
            assert "{" + argument + "}" in verb.mcp.name
        return
    schema = tools[verb.mcp.name]
    assert "session_id" in schema["required"]  # unbound: the session is an argument
    for argument in [*verb.mcp.params.values(), *verb.mcp.fixed]:
        for name in argument.split("+"):
            assert name in schema["properties"], (verb.name, name)
    for argument, value in verb.mcp.fixed.items():
        assert value in schema["properties"][argument]["enum"]


# -- the table for people ------------------------------------------------------------------------
def _render() -> str:
    def yes(flag: object) -> str:
        return "yes" if flag else ""

    lines = [
        "| verb (`Session.`) | `SessionManager.` | Client | RemoteSession | HTTP | CLI | MCP |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in VERBS:
        name = f"`{v.name}`" + (" (property)" if v.kind == "property" else "")
        manager = f"`{v.manager}`" if v.manager else ""
        http = f"`{v.http.method} {v.http.path.removeprefix('/v1')}`" if v.http else ""
        if v.http and v.http.params:
            where = ", ".join(f"{k}→{w}" for k, w in v.http.params.items())
            http += f" ({where})"
        cli = ""
        if v.cli:
            cli = f"`threadline {v.cli.name}`"
            if v.cli.params:
                cli += " (" + ", ".join(f"{k}→`{w}`" for k, w in v.cli.params.items()) + ")"
        mcp = ""
        if v.mcp:
            mcp = f"`{v.mcp.name.removeprefix('threadline://sessions/{session_id}')}`"
            carried = [f"{k}→`{w}`" for k, w in v.mcp.params.items()]
            carried += [f"{k}=`{w}`" for k, w in v.mcp.fixed.items()]
            if carried:
                mcp += " (" + ", ".join(carried) + ")"
        row = f"| {name} | {manager} | {yes(v.client)} | {yes(v.remote)} | {http} | {cli} |"
        lines.append(f"{row} {mcp} |")
    return "\n".join(lines) + "\n"


BEGIN, END = (
    "<!-- verbs:begin (generated: tests/unit/test_verb_parity.py) -->",
    "<!-- verbs:end -->",
)


def test_docs_verbs_md_is_the_table() -> None:
    """``docs/verbs.md`` holds the rendered table between its markers (regenerate: run this
    test with ``THREADLINE_WRITE_VERBS=1``)."""
    import os

    text = DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    fresh = f"{head}{BEGIN}\n{_render()}{END}{tail}"
    if os.environ.get("THREADLINE_WRITE_VERBS"):
        DOC.write_text(fresh, encoding="utf-8")
    assert text == fresh


# -- errors: the same typed error on every transport (a real SQLite file, a real uvicorn) ------
CLIENT_TESTS = Path(__file__).parents[1] / "client"  # served_app: the app the client tests serve


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _served_app() -> Any:
    """tests/client/served_app.py: its ``configure`` is the server's and the manager's here."""
    import importlib.util
    import sys

    name = "verb_parity_served_app"
    spec = importlib.util.spec_from_file_location(name, CLIENT_TESTS / "served_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A SQLite file with ``ana-s`` (owned by ana), served by uvicorn as the client tests
    serve it, and the in-process manager on the same file."""
    import os
    import subprocess
    import sys
    import time

    import httpx

    from threadline.server import create_key

    folder = tmp_path_factory.mktemp("verbs")
    url = str(folder / "verbs.db")
    with threadline.connect(url) as store:
        key = create_key(store, "travel")
        served = _served_app()
        manager = served.configure(SessionManager(store, "travel"))  # as the server's
        manager.create(session_id="ana-s", user_id="ana")
        manager.append("ana-s", {"role": "user", "content": "hi"}, user_id="ana")
        port = _free_port()
        env = {**os.environ, "THREADLINE_CLIENT_TEST_DB": url}
        env["PYTHONPATH"] = os.pathsep.join([str(CLIENT_TESTS), env.get("PYTHONPATH", "")])
        command = [sys.executable, "-m", "uvicorn", "--factory", "served_app:make"]
        command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        log = folder / "uvicorn.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                try:
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            headers = {"authorization": f"Bearer {key}"}
            with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                yield {
                    "store": store,
                    "manager": manager,
                    "http": http,
                    "key": key,
                    "url": base,
                    "configure": served.configure,
                    "summarize": served.summarize,
                }
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# A representative verb set: (verb, its arguments, the typed error every transport raises).
def _error_case(
    verb: str,
    args: tuple[Any, ...],
    kw: dict[str, Any],
    error: type[Exception] = InvalidArgumentError,
    defect: str = "",
    *,
    case: str,
) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=defect)] if defect else []
    return pytest.param(verb, args, kw, error, marks=marks, id=f"{verb}-{case}")


_HI = {"role": "user", "content": "hi"}
ERRORS = [
    _error_case("get_history", (), {"limit": 0}, case="limit-0"),
    _error_case("get_history", (), {"attachments": "bad"}, case="attachments"),
    _error_case("get_history", (), {"after": "not a date"}, case="after"),
    _error_case("get_history", ("nope",), {}, MessageNotFoundError, case="missing-leaf"),
    _error_case("update_state", ("not a mapping",), {}, case="not-a-mapping"),
    _error_case("append_message", ({"role": 5},), {}, InvalidMessageError, case="bad-role"),
    _error_case("append_message", (_HI, "nope"), {}, MessageNotFoundError, case="no-parent"),
    _error_case(
        "update_message", ({**_HI, "id": "nope"},), {}, MessageNotFoundError, case="missing"
    ),
    _error_case("checkout", ("nope",), {}, MessageNotFoundError, case="missing"),
    _error_case("get_path_length", ("nope",), {}, MessageNotFoundError, case="missing"),
    _error_case("get_message", (5,), {}, case="not-a-string"),
    _error_case("read_attachment", ("sha256:00",), {}, case="not-a-ref"),
    _error_case("replace_context_block", ("nope", "x"), {}, BlockNotFoundError, case="missing"),
    _error_case(
        "replace_context_block", ("memory", "word " * 2000), {}, BlockTooLargeError, case="big"
    ),
    _error_case("search", ("hi",), {"limit": 0}, case="limit-0"),
    _error_case("search", (5,), {}, case="not-a-string"),
    _error_case("get_state", (5,), {}, case="bad-key"),
    _error_case("get_state", ("",), {}, case="empty-key"),
    _error_case("get_message", ("",), {}, case="empty-id"),
    _error_case("delete_messages", ("not-a-list",), {}, case="a-str"),
    _error_case("get_context_block", ("",), {}, case="empty-label"),
    _error_case("append_context_block", ("", "x"), {}, case="empty-label"),
]


def _manager_calls(world: dict[str, Any], verb: str, args: Any, kw: Any, user: str | None) -> Any:
    """Each transport's call of ``verb`` on ``ana-s`` as ``user`` (sync and async, in process
    and over HTTP), as (transport, thunk) pairs."""
    manager, key, url = world["manager"], world["key"], world["url"]
    name = VERBS_BY_NAME[verb].manager
    client = Client(url, key)
    amanager = AsyncSessionManager(world["store"], "travel")
    amanager.with_context("memory", max_tokens=200).on_compaction(world["summarize"])

    async def aclient_call(remote: bool) -> Any:
        async with AsyncClient(url, key) as c:
            if remote:
                return await getattr(c.get_session("ana-s", user_id=user), verb)(*args, **kw)
            return await getattr(c, str(name))("ana-s", *args, user_id=user, **kw)

    async def asession_call() -> Any:
        session = await amanager.get_session("ana-s", user_id=user)
        return await getattr(session, verb)(*args, **kw)

    calls: dict[str, Callable[[], Any]] = {
        "Session": lambda: getattr(manager.get_session("ana-s", user_id=user), verb)(*args, **kw),
        "AsyncSession": lambda: asyncio.run(asession_call()),
        "RemoteSession": lambda: getattr(client.get_session("ana-s", user_id=user), verb)(
            *args, **kw
        ),
        "AsyncRemoteSession": lambda: asyncio.run(aclient_call(True)),
    }
    if name:
        calls["SessionManager"] = lambda: getattr(manager, name)("ana-s", *args, user_id=user, **kw)
        calls["AsyncSessionManager"] = lambda: asyncio.run(
            getattr(amanager, name)("ana-s", *args, user_id=user, **kw)
        )
        if VERBS_BY_NAME[verb].client:
            calls["Client"] = lambda: getattr(client, name)("ana-s", *args, user_id=user, **kw)
            calls["AsyncClient"] = lambda: asyncio.run(aclient_call(False))
    return calls


def _raised(thunk: Callable[[], Any]) -> str:
    try:
        thunk()
    except Exception as exc:
        return type(exc).__name__
    return "no error"


@pytest.mark.parametrize(("verb", "args", "kw", "error"), ERRORS)
def test_a_bad_call_is_the_same_typed_error_on_every_transport(
    world: dict[str, Any], verb: str, args: Any, kw: Any, error: type[Exception]
) -> None:
    calls = _manager_calls(world, verb, args, kw, "ana")
    raised = {transport: _raised(thunk) for transport, thunk in calls.items()}
    assert raised == dict.fromkeys(calls, error.__name__)


ACCEPTED = [
    ("get_history", (), {"max_tokens": 0}),  # the leaf only (HTTP refused it before issue 24)
    ("get_history", (), {"runs": 0}),
    ("search", ("hi",), {"limit": 1000}),
]


@pytest.mark.parametrize(
    ("verb", "args", "kw"), ACCEPTED, ids=[f"{v}-{kw}" for v, _, kw in ACCEPTED]
)
def test_a_call_one_transport_accepts_every_transport_accepts(
    world: dict[str, Any], verb: str, args: Any, kw: Any
) -> None:
    calls = _manager_calls(world, verb, args, kw, "ana")
    raised = {transport: _raised(thunk) for transport, thunk in calls.items()}
    assert raised == dict.fromkeys(calls, "no error")


MISSING = ["get_history", "get_compactions", "update_state", "clear_messages", "append_messages"]
MISSING_ARGS: dict[str, tuple[Any, ...]] = {
    "update_state": ({"k": 1},),
    "append_messages": ([{"role": "user", "content": "x"}],),
}


@pytest.mark.parametrize("verb", MISSING)
def test_another_users_session_is_missing_on_every_transport(
    world: dict[str, Any], verb: str
) -> None:
    calls = _manager_calls(world, verb, MISSING_ARGS.get(verb, ()), {}, "bob")
    if "Session" in calls:  # get_session itself refuses: the handle is never made
        del calls["Session"], calls["AsyncSession"]
        with pytest.raises(SessionNotFoundError):
            world["manager"].get_session("ana-s", user_id="bob")
    raised = {transport: _raised(thunk) for transport, thunk in calls.items()}
    assert raised == dict.fromkeys(calls, "SessionNotFoundError")


# The manager's own calls a client carries: the same argument rules (threadline._checks).
MANAGER_ERRORS = [
    ("search", ("hi",), {"limit": 0}),
    ("search", (5,), {}),
    ("list", (), {"limit": 0}),
    ("forget_user", ("",), {}),
    ("get", ("",), {}),
    ("rename", ("ana-s", 5), {}),
    ("get_session", ("",), {}),
]


@pytest.mark.parametrize(
    ("name", "args", "kw"), MANAGER_ERRORS, ids=[f"{n}-{a}-{k}" for n, a, k in MANAGER_ERRORS]
)
def test_a_bad_call_of_the_managers_own_is_the_same_error_on_every_transport(
    world: dict[str, Any], name: str, args: Any, kw: Any
) -> None:
    manager, key, url = world["manager"], world["key"], world["url"]
    amanager = AsyncSessionManager(world["store"], "travel")

    async def aclient_call() -> Any:
        async with AsyncClient(url, key) as c:
            result = getattr(c, name)(*args, **kw)
            return await result if inspect.isawaitable(result) else result

    calls: dict[str, Callable[[], Any]] = {
        "SessionManager": lambda: getattr(manager, name)(*args, **kw),
        "AsyncSessionManager": lambda: asyncio.run(getattr(amanager, name)(*args, **kw)),
        "Client": lambda: getattr(Client(url, key), name)(*args, **kw),
        "AsyncClient": lambda: asyncio.run(aclient_call()),
    }
    raised = {transport: _raised(thunk) for transport, thunk in calls.items()}
    assert raised == dict.fromkeys(calls, "InvalidArgumentError")


def test_http_statuses_of_the_typed_errors(world: dict[str, Any]) -> None:
    http = world["http"]
    assert http.get("/v1/sessions/nope/messages").status_code == 404
    assert http.get("/v1/sessions/ana-s/messages", params={"limit": 0}).status_code in (400, 422)
    assert http.patch("/v1/sessions/ana-s/state", json=[1]).status_code in (400, 422)
    assert http.get("/v1/sessions/ana-s/search", params={"q": "hi", "limit": 0}).status_code == 422


ERROR_CLASSES = sorted(
    (
        cls
        for name in threadline.errors.__all__
        if isinstance(cls := getattr(threadline.errors, name), type)
        and issubclass(cls, threadline.errors.ThreadlineError)
    ),
    key=lambda cls: cls.__name__,
)


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=[c.__name__ for c in ERROR_CLASSES])
def test_every_typed_error_crosses_http_as_itself(cls: type[Exception]) -> None:
    """The server answers a library error with its status and name; the client raises the
    same class from that answer (404 missing, 409 exists, 503 storage, else 400)."""
    import httpx

    from threadline.client._wire import error_from
    from threadline.server._errors import body, message_of, status_of

    try:
        exc = cls("boom")
    except TypeError:
        pytest.skip(f"{cls.__name__} takes other arguments")
    status = status_of(exc)  # type: ignore[arg-type]
    response = httpx.Response(status, json=body(cls.__name__, message_of(exc)))
    again = error_from(response)
    assert type(again) is cls and getattr(again, "status_code", None) == status
