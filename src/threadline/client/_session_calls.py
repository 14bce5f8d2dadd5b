"""The plans of one remote session's methods (``RemoteSession``, ``AsyncRemoteSession``):
the :class:`~threadline.Session` verbs over HTTP, with the same names, parameters and results.

The examples use ``client``, a :class:`~threadline.client.Client` talking to a fresh
in-process server (the ``threadline.client`` module docstring shows how it is built).

>>> client.get_session("chat-1").append_message({"role": "user", "content": "hi"})["role"]
'user'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from threadline.client import _wire as w
from threadline.client._plan import Plan, R, ask, create_info, read_info, session_path
from threadline.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    SessionExistsError,
    SessionNotFoundError,
    ThreadlineError,
)
from threadline.internal import API_RULES, check_every_public_method, check_id, ref_sha
from threadline.messages import normalize_message, normalize_messages
from threadline.types import (
    AUTO,
    AutoType,
    Compaction,
    CompactResult,
    ContextBlock,
    Message,
    SearchHit,
)

P = ParamSpec("P")
_S = TypeVar("_S", bound="SessionCalls")


def _checked(
    fn: Callable[Concatenate[_S, P], Plan[R]], create: bool
) -> Callable[Concatenate[_S, P], Plan[R]]:
    @functools.wraps(fn)
    def plan(self: _S, /, *args: P.args, **kwargs: P.kwargs) -> Plan[R]:
        yield from self._check_owner(create=create)
        return (yield from fn(self, *args, **kwargs))

    return plan


def _reads(fn: Callable[Concatenate[_S, P], Plan[R]]) -> Callable[Concatenate[_S, P], Plan[R]]:
    """A read of a handle made with ``user_id``: another user's session is missing."""
    return _checked(fn, create=False)


def _writes(fn: Callable[Concatenate[_S, P], Plan[R]]) -> Callable[Concatenate[_S, P], Plan[R]]:
    """A write of a handle made with ``user_id``: another user's session is missing, and a
    session that does not exist yet is created owned by that user (as the library does)."""
    return _checked(fn, create=True)


class SessionCalls:
    """The ``Session`` methods of one remote session (see ``RemoteSession``)."""

    def __init__(self, session_id: str, user_id: str | None = None) -> None:
        w.segment(session_id, "session_id")  # a bad id fails here, before any request
        if user_id is not None:
            check_id("user_id", user_id)
        self._session_id = session_id
        self._user_id = user_id
        self._owner_checked = False

    def _check_owner(self, *, create: bool) -> Plan[None]:
        """With ``user_id``: the session must be that user's or nobody's (owners never change,
        so one check per handle); the server checks keys bound to a user by itself."""
        user_id = self._user_id
        if user_id is None or self._owner_checked:
            return
        info = yield from read_info(self._session_id)
        if info is None and create:
            try:
                info = yield from create_info(session_id=self._session_id, user_id=user_id)
            except SessionExistsError:
                info = yield from read_info(self._session_id)
        if info is not None:
            if info.user_id not in (None, user_id):
                raise SessionNotFoundError(f"session {self._session_id!r} not found")
            self._owner_checked = True

    @property
    def session_id(self) -> str:
        """The id of the session this handle reaches.

        >>> client.get_session("chat-1").session_id
        'chat-1'
        """
        return self._session_id

    @property
    def user_id(self) -> str | None:
        """The user named when the handle was made (``get_session(sid, user_id=...)``).

        >>> client.get_session("chat-1", user_id="ana").user_id
        'ana'
        """
        return self._user_id

    def _path(self, *parts: str) -> str:
        return session_path(self._session_id, *parts)

    # -- messages and the tree ---------------------------------------------------------------
    @_writes
    def append_message(
        self,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
    ) -> Plan[Message]:
        """Store a message (child of the head by default) and return it normalised.

        >>> s = client.get_session("chat-1")
        >>> s.append_message({"id": "m1", "role": "user", "content": "hi"})["parts"]
        [{'type': 'text', 'text': 'hi'}]
        """
        body = {"messages": [normalize_message(message)], **w.parent_field(parent_id)}
        if state_delta is not None:
            body["state_delta"] = dict(state_delta)
        call = w.Call("POST", self._path("messages"), w.messages("messages"), None, body)
        stored = yield from ask(call)
        return stored[0]

    @_writes
    def append_messages(
        self, messages: Sequence[Mapping[str, Any]], parent_id: str | AutoType | None = AUTO
    ) -> Plan[list[Message]]:
        """Store several messages in one transaction; each parents the next.

        >>> s = client.get_session("chat-1")
        >>> q, a = s.append_messages([{"role": "user", "content": "hi"},
        ...                           {"role": "assistant", "content": "hello"}])
        >>> s.get_latest_leaf()["id"] == a["id"]
        True
        """
        normalised = normalize_messages(messages)
        if not normalised:
            return []
        body = {"messages": normalised, **w.parent_field(parent_id)}
        call = w.Call("POST", self._path("messages"), w.messages("messages"), None, body)
        return (yield from ask(call))

    @_writes
    def update_message(self, message: Mapping[str, Any]) -> Plan[Message]:
        """Replace role, parts and metadata of a stored message (``createdAt`` kept if omitted).

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"id": "m1", "role": "assistant", "content": "helo"})
        >>> s.update_message({"id": "m1", "role": "assistant", "content": "hello"})["parts"]
        [{'type': 'text', 'text': 'hello'}]
        """
        if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
            raise InvalidMessageError("update_message needs a message dict with a string 'id'")
        path = self._path("messages", message["id"])
        return (yield from ask(w.Call("PUT", path, w.message, None, dict(message))))

    @_reads
    def delete_messages(self, ids: Sequence[str]) -> Plan[int]:
        """Delete messages by id (children are not re-parented); returns how many were deleted.

        One request per id: unlike the in-process call, the deletions are not one transaction.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"id": "m1", "role": "user", "content": "hi"},
        ...                        {"id": "m2", "role": "assistant", "content": "hello"}])
        >>> s.delete_messages(["m2", "nope"]), s.get_message("m2")
        (1, None)
        """
        deleted = 0
        for message_id in ids:
            path = self._path("messages", message_id)
            found = yield from ask(w.Call("DELETE", path, w.true, none_if_missing=True))
            deleted += 1 if found else 0
        return deleted

    @_writes
    def clear_messages(self) -> Plan[None]:
        """Delete every message and overlay of the session (the session itself stays).

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> s.clear_messages()
        >>> s.get_history()
        []
        """
        return (yield from ask(w.Call("DELETE", self._path("messages"), w.nothing)))

    @_reads
    def get_message(self, message_id: str) -> Plan[Message | None]:
        """One message by id, or ``None``.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_message("m1")["role"], s.get_message("nope")
        ('user', None)
        """
        path = self._path("messages", message_id)
        return (yield from ask(w.Call("GET", path, w.message, none_if_missing=True)))

    @_reads
    def get_latest_leaf(self) -> Plan[Message | None]:
        """The head message (the active leaf), or ``None`` for an empty session.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.get_latest_leaf() is None
        True
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_latest_leaf()["id"]
        'm1'
        """
        head_id = yield from self._head_id()
        return None if head_id is None else (yield from self.get_message(head_id))

    def _head_id(self) -> Plan[str | None]:
        return (
            yield from ask(w.Call("GET", self._path("head"), w.field("head_id", w.str_or_none)))
        )

    @_reads
    def get_path_length(self, leaf_id: str | None = None) -> Plan[int]:
        """Number of raw messages on the path to ``leaf_id`` (default: head): one request
        (``GET .../head`` or ``GET .../messages/{leaf_id}/path_length``), answered from the
        stored depth.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"id": "m1", "role": "user", "content": "hi"},
        ...                        {"id": "m2", "role": "assistant", "content": "hello"}])
        >>> s.get_path_length(), s.get_path_length("m1")
        (2, 1)
        """
        if leaf_id is None:
            path = self._path("head")
        else:
            path = self._path("messages", leaf_id, "path_length")
        return (yield from ask(w.Call("GET", path, w.field("path_length", int))))

    @_writes
    def checkout(self, leaf_id: str) -> Plan[None]:
        """Move the head to any message of the session (branch navigation).

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"id": "q", "role": "user", "content": "hi"},
        ...                        {"id": "a1", "role": "assistant", "content": "hello"}])
        >>> _ = s.append_message({"id": "a2", "role": "assistant", "content": "hey"}, "q")
        >>> s.checkout("a1")
        >>> s.get_latest_leaf()["id"]
        'a1'
        """
        return (
            yield from ask(w.Call("PUT", self._path("head"), w.nothing, None, {"leaf_id": leaf_id}))
        )

    @_reads
    def get_branches(self, message_id: str) -> Plan[list[Message]]:
        """Children of a message, oldest first — e.g. the original and regenerated answers.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"id": "q", "role": "user", "content": "hi"},
        ...                        {"id": "a1", "role": "assistant", "content": "hello"}])
        >>> _ = s.append_message({"id": "a2", "role": "assistant", "content": "hey"}, "q")
        >>> [m["id"] for m in s.get_branches("q")]
        ['a1', 'a2']
        """
        path = self._path("messages", message_id, "branches")
        return (yield from ask(w.Call("GET", path, w.messages("messages"))))

    @_reads
    def get_history(
        self,
        leaf_id: str | None = None,
        *,
        limit: int | None = None,
        max_tokens: int | None = None,
        after: datetime | str | float | None = None,
        runs: int | None = None,
        branch: str | None = None,
        attachments: Literal["inline", "ref"] = "inline",
    ) -> Plan[list[Message]]:
        """Root→leaf path with overlays applied, then windowed (``after``, ``branch``,
        ``runs``, ``limit``, ``max_tokens``) by the server, as ``Session.get_history``.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"role": "user", "content": c} for c in "abc"])
        >>> [m["parts"][0]["text"] for m in s.get_history(limit=2)]
        ['b', 'c']
        """
        query = {
            "leaf_id": leaf_id,
            "limit": limit,
            "max_tokens": max_tokens,
            "after": after,
            "runs": runs,
            "branch": branch,
            "attachments": None if attachments == "inline" else attachments,
        }
        return (
            yield from ask(w.Call("GET", self._path("messages"), w.messages("messages"), query))
        )

    @_reads
    def read_attachment(self, ref: object) -> Plan[bytes | str]:
        """The content of an attachment: ``bytes`` for file data, ``str`` for text (``ref``
        from ``get_history(attachments="ref")``, or ``"sha256:<hex>"``).

        >>> s = client.get_session("chat-1")
        >>> big = "data:image/png;base64," + "AAAA" * 100_000
        >>> _ = s.append_message({"role": "user", "parts": [{"type": "file", "url": big}]})
        >>> ref = s.get_history(attachments="ref")[0]["parts"][0]["url"]
        >>> ref["kind"], len(s.read_attachment(ref))
        ('bytes', 300000)
        """
        digest = f"sha256:{ref_sha(ref)}"
        return (yield from ask(w.Call("GET", self._path("attachments", digest), w.attachment)))

    @_reads
    def search(self, query: str, *, limit: int = 20) -> Plan[list[SearchHit]]:
        """Full-text search over this session (stemmed words, phrases, substrings).

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"role": "user", "content": "Where should I stay in Lisbon?"})
        >>> [hit.content for hit in s.search("lisbon")]
        ['Where should I stay in Lisbon?']
        """
        call = w.Call(
            "GET", self._path("search"), w.list_of(SearchHit, "hits"), {"q": query, "limit": limit}
        )
        return (yield from ask(call))

    # -- overlays and compaction ---------------------------------------------------------------
    @_reads
    def get_compactions(self) -> Plan[list[Compaction]]:
        """Every stored overlay of this session, oldest first.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.get_compactions()
        []
        """
        decode = w.list_of(Compaction, "compactions")
        return (yield from ask(w.Call("GET", self._path("compactions"), decode)))

    @_writes
    def compact(self, leaf_id: str | None = None) -> Plan[CompactResult | None]:
        """Summarise part of the history with the compaction function configured on the server
        (``create_app(..., configure=...)``); ``None`` when it declines.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.compact()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        threadline.errors.CompactionError: no compaction function: give the app's profile ...
        """
        body = w.body_without({"leaf_id": leaf_id})
        call = w.Call("POST", self._path("compact"), w.compact_result, None, body)
        return (yield from ask(call))

    # -- memory blocks and the prompt ----------------------------------------------------------
    @_reads
    def get_context_block(self, label: str) -> Plan[ContextBlock | None]:
        """One memory block, or ``None``.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.get_context_block("nope") is None
        True
        """
        path = self._path("blocks", label)
        return (yield from ask(w.Call("GET", path, w.decoder(ContextBlock), none_if_missing=True)))

    @_reads
    def get_context_blocks(self) -> Plan[list[ContextBlock]]:
        """All memory blocks in registration order.

        >>> _ = client.create(session_id="chat-1")
        >>> client.get_session("chat-1").get_context_blocks()
        []
        """
        return (
            yield from ask(w.Call("GET", self._path("blocks"), w.list_of(ContextBlock, "blocks")))
        )

    @_writes
    def replace_context_block(self, label: str, content: str) -> Plan[ContextBlock]:
        """Replace a writable block's content (limits checked; the frozen prompt is unchanged).

        >>> client.get_session("chat-1").replace_context_block("memory", "Likes tea.")
        Traceback (most recent call last):
        threadline.errors.BlockNotFoundError: block "memory" not found
        """
        path = self._path("blocks", label)
        return (
            yield from ask(w.Call("PUT", path, w.decoder(ContextBlock), None, {"content": content}))
        )

    @_writes
    def append_context_block(self, label: str, content: str) -> Plan[ContextBlock]:
        """Append to a writable block (joined with a newline).

        >>> client.get_session("chat-1").append_context_block("memory", "Likes tea.")
        Traceback (most recent call last):
        threadline.errors.BlockNotFoundError: block "memory" not found
        """
        path = self._path("blocks", label)
        return (
            yield from ask(
                w.Call("POST", path, w.decoder(ContextBlock), None, {"content": content})
            )
        )

    @_reads
    def freeze_system_prompt(self) -> Plan[str]:
        """The session's frozen system prompt (rendered once, then reused).

        >>> _ = client.create(session_id="chat-1")
        >>> client.get_session("chat-1").freeze_system_prompt()
        ''
        """
        return (yield from ask(w.Call("GET", self._path("prompt"), w.field("prompt", str))))

    @_writes
    def refresh_system_prompt(self) -> Plan[str]:
        """Re-read every block, re-render, persist (if cached) and return the new prompt.

        >>> _ = client.create(session_id="chat-1")
        >>> client.get_session("chat-1").refresh_system_prompt()
        ''
        """
        return (
            yield from ask(w.Call("POST", self._path("prompt", "refresh"), w.field("prompt", str)))
        )

    @_reads
    def _tool_definitions(self) -> Plan[list[dict[str, Any]]]:
        """The session's memory tools as MCP ``tools/list`` entries (``tools()`` builds on)."""
        query = {"format": "mcp"}
        return (
            yield from ask(w.Call("GET", self._path("tools"), w.field("tools", w.tool_list), query))
        )

    @_writes
    def _execute_tool(self, name: str, args: Any = None) -> Plan[str]:
        """Run one memory tool on the server; failures come back as ``"Error: ..."``."""
        body = {} if args is None else args
        call = w.Call("POST", self._path("tools", name), w.tool_result, None, body)
        try:
            return (yield from ask(call))
        except ThreadlineError as exc:  # a model-facing tool never raises
            return f"Error: {exc}"

    # -- state ---------------------------------------------------------------------------------
    @_reads
    def _state_dict(self) -> Plan[dict[str, Any]]:
        """The merged state (``app:``, ``user:`` and session keys) as a dict."""
        return (yield from ask(w.Call("GET", self._path("state"), w.field("state", dict))))

    def get_state(self, key: str, default: Any = None) -> Plan[Any]:
        """One state value by its (prefixed) key.

        >>> s = client.get_session("chat-1")
        >>> s.update_state({"topic": "tea"})
        >>> s.get_state("topic"), s.get_state("missing", "none")
        ('tea', 'none')
        """
        state = yield from self._state_dict()
        return state.get(key, default)

    @_writes
    def update_state(self, delta: Mapping[str, Any]) -> Plan[None]:
        """Apply a delta atomically; a ``None`` value deletes the key.

        >>> s = client.get_session("chat-1")
        >>> s.update_state({"draft": "hi", "topic": "tea"})
        >>> s.update_state({"draft": None})
        >>> dict(s.state)
        {'topic': 'tea'}
        """
        if not isinstance(delta, Mapping):
            kind = type(delta).__name__
            raise InvalidArgumentError(f"a state delta must be a mapping, got {kind}")
        yield from ask(w.Call("PATCH", self._path("state"), w.nothing, None, dict(delta)))


# The library's argument rules, by parameter name (as on ``Session``): a bad argument raises
# the same typed error before any request.
check_every_public_method(SessionCalls, API_RULES)
