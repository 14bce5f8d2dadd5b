"""What every client method does, written once as a plan of HTTP calls (sans I/O).

Each method here is a generator: it yields :class:`~threadline.client._wire.Call` objects and
receives their decoded answers (or has the mapped threadline error thrown into it), then returns
the method's result. ``Client`` drives the plans with a blocking httpx client, ``AsyncClient``
with an async one — one model, two transports. Most plans are a single call; a few
(``get_or_create``, ``upsert``, ``tools``...) need two.

The examples use ``client``, a :class:`~threadline.client.Client` talking to a fresh
in-process server (the ``threadline.client`` module docstring shows how it is built).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

import httpx

from threadline.client import _wire as w
from threadline.errors import (
    InvalidArgumentError,
    InvalidMessageError,
    MessageNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    ThreadlineError,
)
from threadline.internal import ref_sha
from threadline.messages import normalize_message, normalize_messages
from threadline.types import (
    AUTO,
    AutoType,
    Compaction,
    CompactResult,
    ContextBlock,
    Message,
    SearchHit,
    SessionInfo,
    SessionPage,
)

R = TypeVar("R")
Plan = Generator[w.Call[Any], Any, R]
"""A method's plan: yields calls, receives their results, returns the method's result."""

_Messages = list[Message]
_Hits = list[SearchHit]
_Compactions = list[Compaction]
_Records = list[dict[str, Any]]
_Ids = list[str]


def _ask(call: w.Call[R]) -> Plan[R]:
    """One call of a plan, typed: ``result = yield from _ask(call)``."""
    result: R = yield call
    return result


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
        w.segment(session_id)  # a bad id fails here, before any request
        self._session_id = session_id
        self._user_id = user_id
        self._owner_checked = False

    def _check_owner(self, *, create: bool) -> Plan[None]:
        """With ``user_id``: the session must be that user's or nobody's (owners never change,
        so one check per handle); the server checks keys bound to a user by itself."""
        user_id = self._user_id
        if user_id is None or self._owner_checked:
            return
        info = yield from _info(self._session_id)
        if info is None and create:
            try:
                info = yield from ManagerCalls().create(
                    session_id=self._session_id, user_id=user_id
                )
            except SessionExistsError:
                info = yield from _info(self._session_id)
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
        return "/".join(["/v1/sessions", w.segment(self._session_id), *map(w.segment, parts)])

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
        stored = yield from _ask(call)
        return stored[0]

    @_writes
    def append_messages(
        self, messages: Sequence[Mapping[str, Any]], parent_id: str | AutoType | None = AUTO
    ) -> Plan[_Messages]:
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
        return (yield from _ask(call))

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
        return (yield from _ask(w.Call("PUT", path, w.message, None, dict(message))))

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
        for message_id in [ids] if isinstance(ids, str) else list(ids):
            path = self._path("messages", message_id)
            found = yield from _ask(w.Call("DELETE", path, _true, none_if_missing=True))
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
        return (yield from _ask(w.Call("DELETE", self._path("messages"), w.nothing)))

    @_reads
    def get_message(self, message_id: str) -> Plan[Message | None]:
        """One message by id, or ``None``.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_message("m1")["role"], s.get_message("nope")
        ('user', None)
        """
        path = self._path("messages", message_id)
        return (yield from _ask(w.Call("GET", path, w.message, none_if_missing=True)))

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
            yield from _ask(w.Call("GET", self._path("head"), w.field("head_id", _str_or_none)))
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
        return (yield from _ask(w.Call("GET", path, w.field("path_length", int))))

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
            yield from _ask(
                w.Call("PUT", self._path("head"), w.nothing, None, {"leaf_id": leaf_id})
            )
        )

    @_reads
    def get_branches(self, message_id: str) -> Plan[_Messages]:
        """Children of a message, oldest first — e.g. the original and regenerated answers.

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_messages([{"id": "q", "role": "user", "content": "hi"},
        ...                        {"id": "a1", "role": "assistant", "content": "hello"}])
        >>> _ = s.append_message({"id": "a2", "role": "assistant", "content": "hey"}, "q")
        >>> [m["id"] for m in s.get_branches("q")]
        ['a1', 'a2']
        """
        path = self._path("messages", message_id, "branches")
        return (yield from _ask(w.Call("GET", path, w.messages("messages"))))

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
    ) -> Plan[_Messages]:
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
            yield from _ask(w.Call("GET", self._path("messages"), w.messages("messages"), query))
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
        return (yield from _ask(w.Call("GET", self._path("attachments", digest), _attachment)))

    @_reads
    def search(self, query: str, *, limit: int = 20) -> Plan[_Hits]:
        """Full-text search over this session (stemmed words, phrases, substrings).

        >>> s = client.get_session("chat-1")
        >>> _ = s.append_message({"role": "user", "content": "Where should I stay in Lisbon?"})
        >>> [hit.content for hit in s.search("lisbon")]
        ['Where should I stay in Lisbon?']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        call = w.Call(
            "GET", self._path("search"), w.list_of(SearchHit, "hits"), {"q": query, "limit": limit}
        )
        return (yield from _ask(call))

    # -- overlays and compaction ---------------------------------------------------------------
    @_reads
    def get_compactions(self) -> Plan[_Compactions]:
        """Every stored overlay of this session, oldest first.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.get_compactions()
        []
        """
        decode = w.list_of(Compaction, "compactions")
        return (yield from _ask(w.Call("GET", self._path("compactions"), decode)))

    @_writes
    def compact(self, leaf_id: str | None = None) -> Plan[CompactResult | None]:
        """Summarise part of the history with the compaction function configured on the server
        (``create_app(..., configure=...)``); ``None`` when it declines.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.compact()  # this server has no compaction function
        Traceback (most recent call last):
        threadline.errors.CompactionError: no compaction function registered: call on_compaction(fn)
        """
        body = w.body_without({"leaf_id": leaf_id})
        call = w.Call("POST", self._path("compact"), _compact_result, None, body)
        return (yield from _ask(call))

    # -- memory blocks and the prompt ----------------------------------------------------------
    @_reads
    def get_context_block(self, label: str) -> Plan[ContextBlock | None]:
        """One memory block, or ``None``.

        >>> s = client.get_session(client.create(session_id="chat-1").id)
        >>> s.get_context_block("nope") is None
        True
        """
        path = self._path("blocks", label)
        return (yield from _ask(w.Call("GET", path, w.decoder(ContextBlock), none_if_missing=True)))

    @_reads
    def get_context_blocks(self) -> Plan[list[ContextBlock]]:
        """All memory blocks in registration order.

        >>> _ = client.create(session_id="chat-1")
        >>> client.get_session("chat-1").get_context_blocks()
        []
        """
        return (
            yield from _ask(w.Call("GET", self._path("blocks"), w.list_of(ContextBlock, "blocks")))
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
            yield from _ask(
                w.Call("PUT", path, w.decoder(ContextBlock), None, {"content": content})
            )
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
            yield from _ask(
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
        return (yield from _ask(w.Call("GET", self._path("prompt"), w.field("prompt", str))))

    @_writes
    def refresh_system_prompt(self) -> Plan[str]:
        """Re-read every block, re-render, persist (if cached) and return the new prompt.

        >>> _ = client.create(session_id="chat-1")
        >>> client.get_session("chat-1").refresh_system_prompt()
        ''
        """
        return (
            yield from _ask(w.Call("POST", self._path("prompt", "refresh"), w.field("prompt", str)))
        )

    @_reads
    def _tool_definitions(self) -> Plan[_Records]:
        """The session's memory tools as MCP ``tools/list`` entries (``tools()`` builds on)."""
        query = {"format": "mcp"}
        return (
            yield from _ask(w.Call("GET", self._path("tools"), w.field("tools", _tool_list), query))
        )

    @_writes
    def _execute_tool(self, name: str, args: Any = None) -> Plan[str]:
        """Run one memory tool on the server; failures come back as ``"Error: ..."``."""
        body = {} if args is None else args
        call = w.Call("POST", self._path("tools", name), _tool_result, None, body)
        try:
            return (yield from _ask(call))
        except ThreadlineError as exc:  # a model-facing tool never raises
            return f"Error: {exc}"

    # -- state ---------------------------------------------------------------------------------
    @_reads
    def _state_dict(self) -> Plan[dict[str, Any]]:
        """The merged state (``app:``, ``user:`` and session keys) as a dict."""
        return (yield from _ask(w.Call("GET", self._path("state"), w.field("state", dict))))

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
        yield from _ask(w.Call("PATCH", self._path("state"), w.nothing, None, dict(delta)))


class ManagerCalls:
    """The ``SessionManager`` methods, for the app the client's key belongs to."""

    # -- registry --------------------------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Plan[SessionInfo]:
        """Create a session (id generated unless given; an existing id: ``SessionExistsError``).

        >>> info = client.create("Lisbon trip", user_id="ana", state={"topic": "hotels"})
        >>> info.name, info.user_id, client.get_state(info.id)
        ('Lisbon trip', 'ana', {'topic': 'hotels'})
        >>> client.create(session_id="s1").id
        's1'
        """
        body = w.body_without(
            {
                "name": name,
                "session_id": session_id,
                "user_id": user_id,
                "parent_session_id": parent_session_id,
                "model": model,
                "source": source,
                "state": None if state is None else dict(state),
                "metadata": None if metadata is None else dict(metadata),
            }
        )
        return (yield from _ask(w.Call("POST", "/v1/sessions", w.decoder(SessionInfo), None, body)))

    def get(self, session_id: str, *, user_id: str | None = None) -> Plan[SessionInfo | None]:
        """The registry row of a session, or ``None`` (also another user's, or another app's).

        >>> _ = client.create("Trip", session_id="s1", user_id="ana")
        >>> client.get("s1").name, client.get("s1", user_id="bob"), client.get("nope")
        ('Trip', None, None)
        """
        info = yield from _info(session_id)
        if info is None or user_id is None or info.user_id in (None, user_id):
            return info
        return None

    def get_or_create(
        self, session_id: str, *, user_id: str | None = None, **fields: Any
    ) -> Plan[SessionInfo]:
        """Return the session if it exists (unchanged), else create it with these fields.

        >>> client.get_or_create("s1", name="Trip").name
        'Trip'
        >>> client.get_or_create("s1", name="Other").name  # exists: returned unchanged
        'Trip'
        """
        for _ in range(2):
            existing = yield from self.get(session_id, user_id=user_id)
            if existing is not None:
                return existing
            try:
                return (yield from self.create(session_id=session_id, user_id=user_id, **fields))
            except SessionExistsError:
                continue  # created by someone else in between: read it
        raise SessionNotFoundError(f"session {session_id!r} not found")  # another user's

    def list(
        self, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> Plan[SessionPage]:
        """Newest ``updated_at`` first; pass ``next_cursor`` back for the following page.

        >>> for sid in ("a", "b", "c"):
        ...     _ = client.create(session_id=sid, user_id="ana")
        >>> page = client.list(user_id="ana", limit=2)
        >>> len(page.sessions), len(client.list(user_id="ana", cursor=page.next_cursor).sessions)
        (2, 1)
        """
        query = {"user_id": user_id, "limit": limit, "cursor": cursor}
        return (yield from _ask(w.Call("GET", "/v1/sessions", w.session_page, query)))

    def rename(
        self, session_id: str, name: str, *, user_id: str | None = None
    ) -> Plan[SessionInfo]:
        """Rename a session (``SessionNotFoundError`` if unknown).

        >>> _ = client.create("Draft", session_id="s1")
        >>> client.rename("s1", "Lisbon trip").name
        'Lisbon trip'
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        path = _session_path(session_id)
        return (
            yield from _ask(w.Call("PATCH", path, w.decoder(SessionInfo), None, {"name": name}))
        )

    def delete(self, session_id: str, *, user_id: str | None = None) -> Plan[None]:
        """Delete a session and everything of it (messages, overlays, blocks, prompt, state).

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> client.delete("s1")
        >>> client.get("s1") is None
        True
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        yield from _ask(w.Call("DELETE", _session_path(session_id), w.nothing))

    def forget_user(self, user_id: str) -> Plan[int]:
        """Delete everything of a user in this app; returns the number of sessions deleted.

        >>> _ = client.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> client.forget_user("ana"), client.get("s1")
        (1, None)
        """
        if not isinstance(user_id, str) or not user_id:
            raise InvalidArgumentError("user_id must be a non-empty string")
        path = f"/v1/users/{w.segment(user_id)}"
        return (yield from _ask(w.Call("DELETE", path, w.field("sessions_deleted", int))))

    # -- messages (the manager's shortcuts to one session) ---------------------------------------
    def append(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Plan[Message]:
        """Append a message to a session (created if needed, owned by ``user_id`` when given).

        >>> _ = client.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> client.get("s1").user_id, client.get_message_count("s1")
        ('ana', 1)
        """
        session = SessionCalls(session_id, user_id)
        return (yield from session.append_message(message, parent_id, state_delta=state_delta))

    def upsert(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> Plan[Message]:
        """Update the message if its id exists in the session, else append it.

        >>> _ = client.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hel"})
        >>> _ = client.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hello!"})
        >>> [m["parts"][0]["text"] for m in client.get_history("s1")]
        ['Hello!']
        """
        session = SessionCalls(session_id, user_id)
        if isinstance(message, Mapping) and isinstance(message.get("id"), str):
            try:
                return (yield from session.update_message(message))
            except (MessageNotFoundError, SessionNotFoundError):
                pass
        return (yield from session.append_message(message, parent_id))

    def append_all(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> Plan[_Messages]:
        """Append several messages in one transaction (attached to the head by default).

        >>> msgs = client.append_all("s1", [{"role": "user", "content": "hi"},
        ...                                 {"role": "assistant", "content": "hello"}])
        >>> [m["role"] for m in msgs], client.get_message_count("s1")
        (['user', 'assistant'], 2)
        """
        return (yield from SessionCalls(session_id, user_id).append_messages(messages, parent_id))

    def get_history(
        self,
        session_id: str,
        leaf_id: str | None = None,
        *,
        user_id: str | None = None,
        **options: Any,
    ) -> Plan[_Messages]:
        """History of a session (see ``Session.get_history``).

        >>> _ = client.append_all("s1", [{"role": "user", "content": w} for w in "abc"])
        >>> [m["parts"][0]["text"] for m in client.get_history("s1", limit=2)]
        ['b', 'c']
        """
        return (yield from SessionCalls(session_id, user_id).get_history(leaf_id, **options))

    def get_message_count(self, session_id: str, *, user_id: str | None = None) -> Plan[int]:
        """Messages on the head path of a session (raw, overlays not applied).

        >>> _ = client.append_all("s1", [{"role": "user", "content": w} for w in "ab"])
        >>> client.get_message_count("s1")
        2
        """
        return (yield from SessionCalls(session_id, user_id).get_path_length())

    def clear_messages(self, session_id: str, *, user_id: str | None = None) -> Plan[None]:
        """Delete every message and overlay of a session.

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> client.clear_messages("s1")
        >>> client.get_history("s1"), client.get("s1") is not None
        ([], True)
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        return (yield from SessionCalls(session_id).clear_messages())

    def delete_messages(
        self, session_id: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> Plan[int]:
        """Delete some messages of a session (one request per id).

        >>> _ = client.append_all("s1", [{"id": "m1", "role": "user", "content": "hi"},
        ...                              {"id": "m2", "role": "assistant", "content": "yo"}])
        >>> client.delete_messages("s1", ["m2"]), client.get_message_count("s1")
        (1, 1)
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        return (yield from SessionCalls(session_id).delete_messages(ids))

    def get_branches(
        self, session_id: str, message_id: str, *, user_id: str | None = None
    ) -> Plan[_Messages]:
        """Children of a message in a session, oldest first.

        >>> _ = client.append_all("s1", [{"id": "q", "role": "user", "content": "hi"},
        ...                              {"id": "a1", "role": "assistant", "content": "hello"}])
        >>> _ = client.append("s1", {"id": "a2", "role": "assistant", "content": "hey"}, "q")
        >>> [m["id"] for m in client.get_branches("s1", "q")]
        ['a1', 'a2']
        """
        return (yield from SessionCalls(session_id, user_id).get_branches(message_id))

    def get_compactions(self, session_id: str, *, user_id: str | None = None) -> Plan[_Compactions]:
        """Overlays of a session, oldest first.

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> client.get_compactions("s1")
        []
        """
        return (yield from SessionCalls(session_id, user_id).get_compactions())

    # -- fork, usage, rewind -----------------------------------------------------------------------
    def fork(
        self,
        session_id: str,
        at_message_id: str,
        name: str | None = None,
        *,
        user_id: str | None = None,
    ) -> Plan[SessionInfo]:
        """New session whose history is the path to ``at_message_id`` (overlays materialised).

        >>> _ = client.append_all("s1", [{"id": "m1", "role": "user", "content": "hi"},
        ...                              {"id": "m2", "role": "assistant", "content": "hello"},
        ...                              {"id": "m3", "role": "user", "content": "bye"}])
        >>> child = client.fork("s1", "m2", name="Take two")
        >>> child.parent_session_id, child.name, client.get_message_count(child.id)
        ('s1', 'Take two', 2)
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        body = w.body_without({"at_message_id": at_message_id, "name": name})
        path = _session_path(session_id, "fork")
        return (yield from _ask(w.Call("POST", path, w.decoder(SessionInfo), None, body)))

    def add_usage(
        self,
        session_id: str,
        input_tokens: int,
        output_tokens: int,
        cost: float = 0.0,
        *,
        user_id: str | None = None,
    ) -> Plan[None]:
        """Atomically add token and cost counters to a session.

        >>> _ = client.create(session_id="s1")
        >>> client.add_usage("s1", input_tokens=1200, output_tokens=300, cost=0.004)
        >>> info = client.get("s1")
        >>> info.input_tokens, info.output_tokens, info.estimated_cost
        (1200, 300, 0.004)
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        body = {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost}
        yield from _ask(w.Call("POST", _session_path(session_id, "usage"), w.nothing, None, body))

    def rewind(
        self,
        session_id: str,
        before_message_id: str | None = None,
        *,
        before_invocation_id: str | None = None,
        user_id: str | None = None,
    ) -> Plan[None]:
        """Move the head before a message and undo its session-state changes (nothing deleted).

        >>> _ = client.append_all("s1", [{"id": "m1", "role": "user", "content": "hi"},
        ...                              {"id": "m2", "role": "assistant", "content": "hello"},
        ...                              {"id": "m3", "role": "user", "content": "book it"}])
        >>> client.rewind("s1", before_message_id="m3")
        >>> client.get_history("s1")[-1]["id"], client.get_message_count("s1")
        ('m2', 2)
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        body = w.body_without(
            {"before_message_id": before_message_id, "before_invocation_id": before_invocation_id}
        )
        yield from _ask(w.Call("POST", _session_path(session_id, "rewind"), w.nothing, None, body))

    # -- search and state --------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20, user_id: str | None = None) -> Plan[_Hits]:
        """Full-text search across this app's sessions (optionally one user's).

        >>> _ = client.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> _ = client.append("s2", {"role": "user", "content": "Hotel in Porto?"}, user_id="bob")
        >>> [hit.session_id for hit in client.search("hotel", user_id="ana")]
        ['s1']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        params = {"q": query, "limit": limit, "user_id": user_id}
        return (yield from _ask(w.Call("GET", "/v1/search", w.list_of(SearchHit, "hits"), params)))

    def get_state(self, session_id: str, *, user_id: str | None = None) -> Plan[dict[str, Any]]:
        """Merged state of a session (``app:``, ``user:`` and session keys).

        >>> _ = client.create(session_id="s1")
        >>> client.update_state("s1", {"app:currency": "EUR", "topic": "hotels"})
        >>> client.get_state("s1") == {"app:currency": "EUR", "topic": "hotels"}
        True
        """
        return (yield from SessionCalls(session_id, user_id)._state_dict())

    def update_state(
        self, session_id: str, delta: Mapping[str, Any], *, user_id: str | None = None
    ) -> Plan[None]:
        """Apply a state delta to a session (``None`` deletes).

        >>> _ = client.create(session_id="s1", user_id="ana")
        >>> client.update_state("s1", {"user:lang": "pt", "draft": "hi"})
        >>> client.update_state("s1", {"draft": None})
        >>> client.get_state("s1")
        {'user:lang': 'pt'}
        """
        return (yield from SessionCalls(session_id, user_id).update_state(delta))

    # -- export and import -------------------------------------------------------------------------
    def export_sessions(
        self, *, session_ids: Sequence[str] | None = None, user_id: str | None = None
    ) -> Plan[_Records]:
        """Export records, one per session (``threadline.export.export_sessions`` over HTTP:
        the ``threadline export`` JSON Lines format): those named, else every session of the
        app (only ``user_id``'s when given).

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> records = client.export_sessions(session_ids=["s1"])
        >>> [(record["format"], record["session"]["id"]) for record in records]
        [('threadline.export/1', 's1')]
        """
        ids = None if session_ids is None else [str(sid) for sid in session_ids]
        records = yield from _ask(w.Call("GET", "/v1/export", _json_lines, {"session_id": ids}))
        if user_id is None:  # the server filters by the key's user; this by the one named
            return records
        mine = [r for r in records if r.get("session", {}).get("user_id") == user_id]
        if ids is not None and len(mine) < len(records):
            raise SessionNotFoundError(f"a named session is not {user_id!r}'s")
        return mine

    def import_sessions(
        self, records: Sequence[Mapping[str, Any]], *, replace: bool = False
    ) -> Plan[_Ids]:
        """Import export records into the key's app; returns the ids of the sessions written.
        An existing session fails with ``SessionExistsError`` unless ``replace=True``.

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> records = client.export_sessions(session_ids=["s1"])
        >>> client.delete("s1")
        >>> client.import_sessions(records), client.get_message_count("s1")
        (['s1'], 1)
        """
        try:
            lines = "".join(json.dumps(dict(r), allow_nan=False) + "\n" for r in records)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"export records must be JSON objects: {exc}") from None
        call = w.Call(
            "POST",
            "/v1/import",
            w.field("session_ids", list),
            {"replace": replace or None},
            w.RawBody(lines.encode(), "application/x-ndjson"),
        )
        return (yield from _ask(call))


def _session_path(session_id: str, *parts: str) -> str:
    return SessionCalls(session_id)._path(*parts)


def _info(session_id: str) -> Plan[SessionInfo | None]:
    call = w.Call("GET", _session_path(session_id), w.decoder(SessionInfo), none_if_missing=True)
    return (yield from _ask(call))


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _tool_list(value: Any) -> _Records:
    return [dict(item) for item in value]


def _true(response: httpx.Response) -> bool:
    return True


def _attachment(response: httpx.Response) -> bytes | str:
    if response.headers.get("content-type", "").startswith("text/"):
        return response.text
    return response.content


def _compact_result(response: httpx.Response) -> CompactResult | None:
    data = response.json()
    result = data.get("result") if isinstance(data, dict) and "result" in data else data
    return None if result is None else w.as_type(CompactResult, result)


def _tool_result(response: httpx.Response) -> str:
    return str(response.json()["result"])


def _json_lines(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]
