"""The verb table: every per-session operation, its one home (``Session``) and the transports
that carry it. Data only (no I/O, no imports of the classes it names): one test
(``tests/unit/test_verb_parity.py``) reads it and checks every transport against the home,
and ``docs/verbs.md`` is the same table for people (the test fails when they disagree).

A verb's signature is not written here: it is ``Session.<name>``'s, taken by ``inspect``.
Each transport is one column of :class:`Verb` (``None``: that transport does not carry the
verb); adding a transport is one more column and one more check in the test.

How each column is derived from the home signature:

- ``manager``: ``SessionManager.<name>`` (and ``AsyncSessionManager``, ``Client``,
  ``AsyncClient`` when ``client``): ``session_id: str`` first, then the verb's parameters
  with their kinds, defaults and annotations, then keyword-only ``user_id: str | None = None``.
  A property of ``Session`` becomes a method returning a copy (``state`` → ``get_state``).
- ``remote``: ``RemoteSession.<name>`` / ``AsyncRemoteSession.<name>``: the same signature.
- twins (:data:`TWINS`): ``AsyncSession`` ... take exactly the sync parameters; the result is
  awaited, and the only allowed differences are :data:`TWIN_NAMES` / :data:`TWIN_METHODS`.
- ``http``: a :class:`Route`; each verb parameter travels at one place (:data:`WHERE`).
- ``cli``: a :class:`Command` of ``threadline``; each carried parameter has an option or a
  positional argument.
- ``mcp``: an :class:`Mcp` tool (or resource template) of ``threadline mcp``; each carried
  parameter is one of its arguments (or a ``{name}`` of the template).

>>> len(VERBS) > 30, VERBS_BY_NAME["append_message"].manager
(True, 'append')
>>> VERBS_BY_NAME["search"].http.params["query"]
'query:q'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = [
    "GET_SESSION",
    "MANAGER_ONLY",
    "NOT_VERBS",
    "TWINS",
    "TWIN_METHODS",
    "TWIN_NAMES",
    "VERBS",
    "VERBS_BY_NAME",
    "WHERE",
    "Command",
    "Mcp",
    "Route",
    "Verb",
]

WHERE = MappingProxyType(
    {
        "path": "a path segment: /v1/sessions/{session_id}/... (``path:<name>``)",
        "query": "a query parameter (``query:<name>``); a default of AUTO travels as absence",
        "body": "the whole JSON body",
        "field": "a field of the JSON body (``field:<name>``)",
        "client": "not sent: the client applies it to the answer (``client``)",
        "each": "one request per item (``each:path:<name>``): not one transaction",
    }
)
"""Where a verb parameter travels in an HTTP request (the prefix of a :class:`Route` param)."""


@dataclass(frozen=True)
class Route:
    """The HTTP route carrying a verb: ``method`` and ``path`` (as in the OpenAPI schema)
    and, for each verb parameter, where it travels (:data:`WHERE`). ``extra`` names wire
    parameters that are not verb parameters (the path's ``message_id`` of an update is the
    message's ``id``; a query ``format`` picks the schema flavour). ``otherwise`` is the route
    taken when a parameter whose default is ``None`` travels in the path and is left out
    (``get_path_length()`` of the head). ``caps`` are the server's own upper bounds (a page
    of search hits is at most 1000 over HTTP); every other bound is the library's.

    >>> Route("GET", "/v1/sessions/{session_id}/state").params
    mappingproxy({})
    """

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    extra: tuple[str, ...] = ()
    otherwise: Route | None = None
    caps: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Command:
    """The ``threadline`` command carrying a verb: ``name`` (``"state set"``: a subcommand
    of a group) and, for each carried verb
    parameter, its option (``--leaf``) or positional argument (``MESSAGE_ID``, as in the
    usage line); ``session`` names how the session is chosen (``SESSION_ID``, or ``--session``
    for a command that reads the whole app without it); ``--app/--user/--db`` are every
    command's.

    >>> Command("checkout", {"leaf_id": "MESSAGE_ID"}).name
    'checkout'
    """

    name: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    session: str = "SESSION_ID"


@dataclass(frozen=True)
class Mcp:
    """What carries a verb in ``threadline mcp``: a tool ``name`` or a resource template
    ``threadline://...`` and, for each carried verb parameter, the tool argument (or URI
    template variable) it travels as; ``fixed`` are tool arguments the verb implies
    (``set_context``'s ``action``).

    >>> Mcp("search_messages", {"query": "query"}).name
    'search_messages'
    """

    name: str
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    fixed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Verb:
    """One per-session operation: ``Session.<name>`` is its home and signature; each other
    field is a transport column (``None`` / ``False``: not carried there).

    ``manager``: the ``SessionManager`` (and ``AsyncSessionManager``) method's name;
    ``client``: ``Client``/``AsyncClient`` carry that manager method too; ``remote``:
    ``RemoteSession``/``AsyncRemoteSession`` carry ``<name>``; ``http`` / ``cli`` / ``mcp``:
    the route, the command and the MCP tool or resource. ``kind`` is ``"method"`` or
    ``"property"``. ``manager_defaults``: the parameters whose default differs at
    ``SessionManager``/``AsyncSessionManager``, as ``(default, annotation)`` text
    (``get_history``'s ``limit`` is the manager's own ``max_messages`` cap unless given:
    ``AUTO``).

    >>> Verb("get_message", remote=True).manager is None
    True
    """

    name: str
    manager: str | None = None
    client: bool = False
    remote: bool = False
    http: Route | None = None
    cli: Command | None = None
    mcp: Mcp | None = None
    kind: str = "method"
    manager_defaults: Mapping[str, tuple[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )


def _p(**params: str) -> Mapping[str, str]:
    return MappingProxyType(params)


_S = "/v1/sessions/{session_id}"
_APPEND = f"{_S}/messages"
_ONE = f"{_S}/messages/{{message_id}}"
_RES = "threadline://sessions/{session_id}"

VERBS: tuple[Verb, ...] = (
    # -- messages and the tree
    Verb(
        "append_message",
        manager="append",
        client=True,
        remote=True,
        http=Route(
            "POST",
            _APPEND,
            _p(message="body", parent_id="query:parent_id", state_delta="field:state_delta"),
            extra=("messages", "parent_id"),  # the batch form; its parent: query or body
        ),
        mcp=Mcp("append_message", _p(message="role+content")),
    ),
    Verb(
        "append_messages",
        manager="append_all",
        client=True,
        remote=True,
        http=Route(
            "POST",
            _APPEND,
            _p(messages="field:messages", parent_id="query:parent_id"),
            extra=("parent_id", "state_delta"),  # also in the body; a delta: one message only
        ),
    ),
    Verb(
        "update_message",
        remote=True,
        http=Route("PUT", _ONE, _p(message="body"), extra=("message_id",)),
    ),
    Verb(
        "delete_messages",
        manager="delete_messages",
        client=True,
        remote=True,
        http=Route("DELETE", _ONE, _p(ids="each:path:message_id")),
    ),
    Verb(
        "clear_messages",
        manager="clear_messages",
        client=True,
        remote=True,
        http=Route("DELETE", _APPEND),
    ),
    Verb("get_message", remote=True, http=Route("GET", _ONE, _p(message_id="path:message_id"))),
    Verb("get_latest_leaf", remote=True, http=Route("GET", f"{_S}/head")),
    Verb(
        "checkout",
        remote=True,
        http=Route("PUT", f"{_S}/head", _p(leaf_id="field:leaf_id")),
        cli=Command("checkout", _p(leaf_id="MESSAGE_ID")),
    ),
    Verb(
        "get_path_length",
        remote=True,
        http=Route(
            "GET",
            f"{_ONE}/path_length",
            _p(leaf_id="path:message_id"),
            otherwise=Route("GET", f"{_S}/head"),
        ),
    ),
    Verb(
        "get_branches",
        manager="get_branches",
        client=True,
        remote=True,
        http=Route("GET", f"{_ONE}/branches", _p(message_id="path:message_id")),
    ),
    Verb(
        "get_history",
        manager="get_history",
        manager_defaults=MappingProxyType({"limit": ("AUTO", "int | AutoType | None")}),
        client=True,
        remote=True,
        http=Route(
            "GET",
            _APPEND,
            _p(
                leaf_id="query:leaf_id",
                limit="query:limit",
                max_tokens="query:max_tokens",
                after="query:after",
                runs="query:runs",
                branch="query:branch",
                attachments="query:attachments",
            ),
        ),
        cli=Command("history", _p(leaf_id="--leaf")),
        mcp=Mcp("get_history", _p(limit="limit")),
    ),
    Verb("get_recent_history"),
    Verb(
        "read_attachment",
        remote=True,
        http=Route("GET", f"{_S}/attachments/{{ref}}", _p(ref="path:ref")),
    ),
    Verb(
        "search",
        remote=True,
        http=Route(
            "GET",
            f"{_S}/search",
            _p(query="query:q", limit="query:limit"),
            caps=MappingProxyType({"limit": 1000}),
        ),
        cli=Command("search", _p(query="QUERY", limit="--limit"), session="--session"),
        mcp=Mcp("search_messages", _p(query="query", limit="limit")),
    ),
    # -- compaction
    Verb("add_compaction", manager="add_compaction"),
    Verb(
        "get_compactions",
        manager="get_compactions",
        client=True,
        remote=True,
        http=Route("GET", f"{_S}/compactions"),
    ),
    Verb(
        "compact",
        remote=True,
        http=Route("POST", f"{_S}/compact", _p(leaf_id="field:leaf_id")),
        cli=Command("compact"),
    ),
    # -- blocks and the prompt
    Verb(
        "get_context_block",
        remote=True,
        http=Route("GET", f"{_S}/blocks/{{label}}", _p(label="path:label")),
        mcp=Mcp(f"{_RES}/blocks/{{label}}", _p(label="label")),
    ),
    Verb(
        "get_context_blocks",
        remote=True,
        http=Route("GET", f"{_S}/blocks"),
        cli=Command("blocks show"),
    ),
    Verb(
        "replace_context_block",
        remote=True,
        http=Route(
            "PUT", f"{_S}/blocks/{{label}}", _p(label="path:label", content="field:content")
        ),
        cli=Command("blocks replace", _p(label="LABEL", content="TEXT")),
        mcp=Mcp("set_context", _p(label="label", content="content"), _p(action="replace")),
    ),
    Verb(
        "append_context_block",
        remote=True,
        http=Route(
            "POST", f"{_S}/blocks/{{label}}", _p(label="path:label", content="field:content")
        ),
        cli=Command("blocks append", _p(label="LABEL", content="TEXT")),
        mcp=Mcp("set_context", _p(label="label", content="content"), _p(action="append")),
    ),
    Verb("add_context"),
    Verb("remove_context"),
    Verb(
        "freeze_system_prompt",
        remote=True,
        http=Route("GET", f"{_S}/prompt"),
        mcp=Mcp(f"{_RES}/prompt"),
    ),
    Verb("refresh_system_prompt", remote=True, http=Route("POST", f"{_S}/prompt/refresh")),
    Verb("write_context_entry"),
    Verb("load_context_entry", mcp=Mcp("load_context", _p(label="label", key="key"))),
    Verb("search_context_block", mcp=Mcp("search_context", _p(label="label", query="query"))),
    Verb("unload_skill", mcp=Mcp("unload_context", _p(label="label", key="key"))),
    Verb("loaded_skills", kind="property"),
    Verb("tools", remote=True, http=Route("GET", f"{_S}/tools", extra=("format",))),
    # -- state
    Verb(
        "get_state",
        remote=True,
        http=Route("GET", f"{_S}/state", _p(key="client", default="client")),
    ),
    Verb(
        "update_state",
        manager="update_state",
        client=True,
        remote=True,
        http=Route("PATCH", f"{_S}/state", _p(delta="body")),
        cli=Command("state set", _p(delta="KEY=VALUE")),
    ),
    Verb(
        "state",
        kind="property",
        manager="get_state",
        client=True,
        remote=True,
        http=Route("GET", f"{_S}/state"),
        cli=Command("state show"),
    ),
    Verb("state_view"),
)
"""Every per-session verb, in the order of ``docs/verbs.md``."""

VERBS_BY_NAME: Mapping[str, Verb] = MappingProxyType({v.name: v for v in VERBS})

NOT_VERBS = frozenset(
    {
        # builders and configuration: they shape the object, not the stored session
        "create", "for_app", "for_session", "for_user", "with_context", "with_cached_prompt",
        "on_compaction", "on_compaction_error", "compact_after", "compact_when", "close",
        "with_searchable_history", "from_profile", "profile",
        # who and where: plain accessors
        "session_id", "user_id", "app_name", "store", "sync",
    }
)  # fmt: skip
"""Public members of ``Session`` (and its twins) that are not verbs."""

MANAGER_ONLY: Mapping[str, bool] = MappingProxyType(
    {
        # registry and app-wide calls (no ``Session`` home): name -> Client carries it
        "create": True, "get": True, "get_or_create": True, "list": True, "rename": True,
        "delete": True, "forget_user": True, "purge": False, "fork": True,
        "compact_and_split": False, "add_usage": True, "rewind": True, "upsert": True,
        "get_message_count": True, "search": True, "tools": True, "get_session": True,
        "save_profile": False,
    }
)  # fmt: skip
"""``SessionManager`` methods that are not a per-session verb's forwarder (the manager's
own API, clarification 26): each one the ``Client`` carries must have the manager's
signature there too. Its builders (``with_*``, ``on_*``, ``compact_*``, ``close``) are in
:data:`NOT_VERBS`."""

TWINS: tuple[tuple[str, str], ...] = (
    ("Session", "AsyncSession"),
    ("SessionManager", "AsyncSessionManager"),
    ("RemoteSession", "AsyncRemoteSession"),
    ("Client", "AsyncClient"),
    ("Runner", "AsyncRunner"),
    ("Toolset", "AsyncToolset"),
    ("StateView", "AsyncStateView"),
)
"""Sync class → async twin. A twin method takes the sync parameters exactly (names, kinds,
defaults, annotations) and is awaited; builders (:data:`NOT_VERBS`, ``get_session`` of the
clients) stay plain; a ``Session`` property read from storage (``state``, ``loaded_skills``)
is a coroutine method of the twin, returning a copy (a ``Mapping`` property: a ``dict``)."""

TWIN_NAMES: Mapping[str, str] = MappingProxyType(dict(TWINS))
"""The one allowed annotation difference: a sync class named in it is its async twin."""

TWIN_METHODS: Mapping[str, str] = MappingProxyType({"run": "arun", "context": "acontext"})
"""The allowed name differences between twins (the runner's: ``AsyncRunner`` inherits the
sync ``run`` and ``context`` and adds the awaited ones)."""

GET_SESSION: Mapping[str, str] = MappingProxyType(
    {
        "Store.get_session": "SessionInfo: the registry row (no messages)",
        "SessionManager.get_session": "Session: the verbs of one session, in process",
        "AsyncSessionManager.get_session": "AsyncSession (awaited)",
        "Client.get_session": "RemoteSession: the same verbs over HTTP (no request)",
        "AsyncClient.get_session": "AsyncRemoteSession (plain: no request)",
    }
)
"""What ``get_session`` returns at each layer (the name stays; clarification 26)."""
