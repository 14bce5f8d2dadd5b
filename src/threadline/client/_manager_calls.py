"""The plans of the client's manager-level methods (``Client``, ``AsyncClient``): the
:class:`~threadline.SessionManager` verbs over HTTP, for the app of the client's key, with
the same names, parameters and results (``user_id=`` included).

The examples use ``client``, a :class:`~threadline.client.Client` talking to a fresh
in-process server (the ``threadline.client`` module docstring shows how it is built).

>>> client.create(session_id="s1").id
's1'
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from threadline.client import _wire as w
from threadline.client._plan import Plan, ask, create_info, read_info, session_path
from threadline.client._session_calls import SessionCalls
from threadline.errors import (
    InvalidArgumentError,
    MessageNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
)
from threadline.internal import API_RULES, check_every_public_method
from threadline.types import (
    AUTO,
    AppendResult,
    AutoType,
    Compaction,
    Message,
    SearchHit,
    SessionInfo,
    SessionPage,
)

# Spelled once here: inside ManagerCalls, ``list`` is its method (as in SessionManager).
_Messages = list[Message]
_Hits = list[SearchHit]
_Compactions = list[Compaction]
_Records = list[dict[str, Any]]
_Ids = list[str]


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
        return (
            yield from create_info(
                name=name,
                session_id=session_id,
                user_id=user_id,
                parent_session_id=parent_session_id,
                model=model,
                source=source,
                state=None if state is None else dict(state),
                metadata=None if metadata is None else dict(metadata),
            )
        )

    def get(self, session_id: str, *, user_id: str | None = None) -> Plan[SessionInfo | None]:
        """The registry row of a session, or ``None`` (also another user's, or another app's).

        >>> _ = client.create("Trip", session_id="s1", user_id="ana")
        >>> client.get("s1").name, client.get("s1", user_id="bob"), client.get("nope")
        ('Trip', None, None)
        """
        info = yield from read_info(session_id)
        if info is None or user_id is None or info.user_id in (None, user_id):
            return info
        return None

    def get_or_create(
        self,
        session_id: str,
        *,
        user_id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
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
                made = self.create(
                    name,
                    session_id=session_id,
                    user_id=user_id,
                    parent_session_id=parent_session_id,
                    model=model,
                    source=source,
                    state=state,
                    metadata=metadata,
                )
                return (yield from made)
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
        return (yield from ask(w.Call("GET", "/v1/sessions", w.session_page, query)))

    def rename(
        self, session_id: str, name: str, *, user_id: str | None = None
    ) -> Plan[SessionInfo]:
        """Rename a session (``SessionNotFoundError`` if unknown).

        >>> _ = client.create("Draft", session_id="s1")
        >>> client.rename("s1", "Lisbon trip").name
        'Lisbon trip'
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        path = session_path(session_id)
        return (yield from ask(w.Call("PATCH", path, w.decoder(SessionInfo), None, {"name": name})))

    def delete(self, session_id: str, *, user_id: str | None = None) -> Plan[None]:
        """Delete a session and everything of it (messages, overlays, blocks, prompt, state).

        >>> _ = client.append("s1", {"role": "user", "content": "hi"})
        >>> client.delete("s1")
        >>> client.get("s1") is None
        True
        """
        yield from SessionCalls(session_id, user_id)._check_owner(create=False)
        yield from ask(w.Call("DELETE", session_path(session_id), w.nothing))

    def forget_user(self, user_id: str) -> Plan[int]:
        """Delete everything of a user in this app; returns the number of sessions deleted.

        >>> _ = client.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> client.forget_user("ana"), client.get("s1")
        (1, None)
        """
        path = f"/v1/users/{w.segment(user_id, 'user_id')}"
        return (yield from ask(w.Call("DELETE", path, w.field("sessions_deleted", int))))

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
    ) -> Plan[AppendResult]:
        """Append several messages in one transaction (attached to the head by default).

        An :class:`~threadline.types.AppendResult`, as ``SessionManager.append_all``: the
        client sets no ``max_messages``, so its ``overflow`` is empty.

        >>> msgs = client.append_all("s1", [{"role": "user", "content": "hi"},
        ...                                 {"role": "assistant", "content": "hello"}])
        >>> [m["role"] for m in msgs], client.get_message_count("s1")
        (['user', 'assistant'], 2)
        """
        session = SessionCalls(session_id, user_id)
        return AppendResult((yield from session.append_messages(messages, parent_id)))

    def get_history(
        self,
        session_id: str,
        leaf_id: str | None = None,
        *,
        limit: int | None = None,
        max_tokens: int | None = None,
        after: datetime | str | float | None = None,
        runs: int | None = None,
        branch: str | None = None,
        attachments: Literal["inline", "ref"] = "inline",
        user_id: str | None = None,
    ) -> Plan[_Messages]:
        """History of a session (see ``Session.get_history`` for the window: ``limit``,
        ``max_tokens``, ``after``, ``runs``, ``branch``; ``attachments``).

        >>> _ = client.append_all("s1", [{"role": "user", "content": w} for w in "abc"])
        >>> [m["parts"][0]["text"] for m in client.get_history("s1", limit=2)]
        ['b', 'c']
        """
        session = SessionCalls(session_id, user_id)
        return (
            yield from session.get_history(
                leaf_id,
                limit=limit,
                max_tokens=max_tokens,
                after=after,
                runs=runs,
                branch=branch,
                attachments=attachments,
            )
        )

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
        path = session_path(session_id, "fork")
        return (yield from ask(w.Call("POST", path, w.decoder(SessionInfo), None, body)))

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
        yield from ask(w.Call("POST", session_path(session_id, "usage"), w.nothing, None, body))

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
        yield from ask(w.Call("POST", session_path(session_id, "rewind"), w.nothing, None, body))

    # -- search and state --------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20, user_id: str | None = None) -> Plan[_Hits]:
        """Full-text search across this app's sessions (optionally one user's).

        >>> _ = client.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> _ = client.append("s2", {"role": "user", "content": "Hotel in Porto?"}, user_id="bob")
        >>> [hit.session_id for hit in client.search("hotel", user_id="ana")]
        ['s1']
        """
        params = {"q": query, "limit": limit, "user_id": user_id}
        return (yield from ask(w.Call("GET", "/v1/search", w.list_of(SearchHit, "hits"), params)))

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
        [('threadline.export/2', 's1')]
        """
        ids = None if session_ids is None else [str(sid) for sid in session_ids]
        records = yield from ask(w.Call("GET", "/v1/export", w.json_lines, {"session_id": ids}))
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
        return (yield from ask(call))


# The library's argument rules, by parameter name (as on ``SessionManager``).
check_every_public_method(ManagerCalls, API_RULES)
