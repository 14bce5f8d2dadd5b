"""``SessionManager``: many sessions per app and user — registry, fork, usage, search, state.

>>> import threadline
>>> manager = threadline.SessionManager(":memory:", app_name="demo")
>>> info = manager.create("First chat", user_id="u1")
>>> _ = manager.append(info.id, {"role": "user", "content": "hello"})
>>> [s.name for s in manager.list(user_id="u1").sessions]
['First chat']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from threadline._checks import API_RULES, check_every_public_method, checked
from threadline._manager_registry import ManagerRegistry
from threadline._manager_steps import (
    SPLIT_PREFIX,
    append_capped,
    check_usage,
    copies_of,
    first_of_invocation,
)
from threadline.errors import InvalidArgumentError, MessageNotFoundError
from threadline.tools import SEARCH_RESULT_LIMIT, Toolset, make_session_search_tool
from threadline.types import (
    AUTO,
    AppendResult,
    AutoType,
    Compaction,
    Message,
    SearchHit,
    SessionInfo,
)

__all__ = ["SessionManager"]

# Aliases: inside SessionManager the name ``list`` is the method, not the builtin.
_Messages = list[Message]
_Hits = list[SearchHit]
_Compactions = list[Compaction]


class SessionManager(ManagerRegistry):
    """Registry and factory for the sessions of one app.

    Builder settings (blocks, cached prompt, compaction) apply to every session it hands out;
    auto-wired blocks are namespaced by session (or user/app per ``scope``).

    >>> m = SessionManager(":memory:")
    >>> m.get_or_create("s1").id
    's1'
    """

    # -- sessions ----------------------------------------------------------------------------------
    def append(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Message:
        """Append a message to a session (creating its registry row if needed, owned by
        ``user_id`` when given).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> m.get("s1").user_id, m.get_message_count("s1")
        ('ana', 1)
        """
        return self.get_session(session_id, user_id=user_id).append_message(
            message, parent_id, state_delta=state_delta
        )

    def upsert(
        self,
        session_id: str,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> Message:
        """Update the message if its id exists in the session, else append it.

        >>> m = SessionManager(":memory:")
        >>> _ = m.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hel"})  # streaming
        >>> _ = m.upsert("s1", {"id": "a1", "role": "assistant", "content": "Hello!"})
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['Hello!']
        """
        session = self.get_session(session_id, user_id=user_id)
        mid = message.get("id") if isinstance(message, Mapping) else None
        if isinstance(mid, str):
            try:  # update_message reads the stored message itself: no separate existence check
                return session.update_message(message)
            except MessageNotFoundError:
                pass
        return session.append_message(message, parent_id)

    def append_all(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
    ) -> AppendResult:
        """Append several messages in one transaction (attached to the head by default).

        Returns an :class:`~threadline.types.AppendResult`: the stored messages, as a list,
        whose ``overflow`` holds the messages this append pushed out of the last
        ``max_messages`` of the active path, oldest first — including appended ones that do
        not fit, and those automatic compaction summarised (``compact_when``) — as
        ``get_history`` shows it (empty without ``max_messages``; nothing is deleted).

        >>> m = SessionManager(":memory:", max_messages=2)
        >>> msgs = m.append_all("s1", [{"role": "user", "content": "hi"},
        ...                            {"role": "assistant", "content": "hello"}])
        >>> [msg["role"] for msg in msgs], msgs.overflow, m.get_message_count("s1")
        (['user', 'assistant'], [], 2)
        >>> more = m.append_all("s1", [{"role": "user", "content": "bye"}])
        >>> [msg["parts"][0]["text"] for msg in more.overflow], m.get_message_count("s1")
        (['hi'], 3)
        """
        session = self.get_session(session_id, user_id=user_id)
        keep = self.max_messages
        if keep is None:
            return AppendResult(session.append_messages(messages, parent_id))
        return append_capped(session, keep, messages, parent_id)

    def get_history(
        self,
        session_id: str,
        leaf_id: str | None = None,
        *,
        limit: int | AutoType | None = AUTO,
        max_tokens: int | None = None,
        after: datetime | str | float | None = None,
        runs: int | None = None,
        branch: str | None = None,
        attachments: Literal["inline", "ref"] = "inline",
        user_id: str | None = None,
    ) -> _Messages:
        """History of a session (see ``Session.get_history`` for ``runs``, ``limit``,
        ``max_tokens``, ``after``, ``branch``, ``attachments``).

        ``limit`` defaults (``AUTO``) to the manager's ``max_messages``: the last
        ``max_messages`` messages come back unless ``limit`` is given (``limit=None`` for the
        whole path); without ``max_messages`` the default is the whole path.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("a", "b", "c")])
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1", limit=2)]
        ['b', 'c']
        >>> capped = SessionManager(m.store, max_messages=1)
        >>> len(capped.get_history("s1")), len(capped.get_history("s1", limit=None))
        (1, 3)
        """
        if limit is AUTO:
            limit = self.max_messages
        return self.get_session(session_id, user_id=user_id).get_history(
            leaf_id,
            limit=limit,
            max_tokens=max_tokens,
            after=after,
            runs=runs,
            branch=branch,
            attachments=attachments,
        )

    def get_message_count(self, session_id: str, *, user_id: str | None = None) -> int:
        """Messages on the head path of a session (raw, overlays not applied).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [{"role": "user", "content": w} for w in ("a", "b")])
        >>> m.get_message_count("s1")
        2
        """
        return self.get_session(session_id, user_id=user_id).get_path_length()

    def clear_messages(self, session_id: str, *, user_id: str | None = None) -> None:
        """Delete every message and overlay of a session.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.clear_messages("s1")
        >>> m.get_history("s1"), m.get("s1") is not None  # the session itself stays
        ([], True)
        """
        self.get_session(session_id, user_id=user_id).clear_messages()

    def delete_messages(
        self, session_id: str, ids: Sequence[str], *, user_id: str | None = None
    ) -> int:
        """Delete some messages of a session.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> m.delete_messages("s1", ["m2"]), m.get_message_count("s1")
        (1, 1)
        """
        return self.get_session(session_id, user_id=user_id).delete_messages(ids)

    def get_branches(
        self, session_id: str, message_id: str, *, user_id: str | None = None
    ) -> _Messages:
        """Children of a message in a session, oldest first.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = m.append("s1", assistant("hey", id="a2"), parent_id="q")  # regenerated
        >>> [msg["id"] for msg in m.get_branches("s1", "q")]
        ['a1', 'a2']
        """
        return self.get_session(session_id, user_id=user_id).get_branches(message_id)

    def add_compaction(
        self,
        session_id: str,
        summary: str,
        from_message_id: str,
        to_message_id: str,
        *,
        user_id: str | None = None,
    ) -> Compaction:
        """Store a summary overlay in a session.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> _ = m.add_compaction("s1", "They greeted each other.", "m1", "m2")
        >>> [msg["parts"][0]["text"] for msg in m.get_history("s1")]
        ['They greeted each other.', 'bye']
        """
        session = self.get_session(session_id, user_id=user_id)
        return session.add_compaction(summary, from_message_id, to_message_id)

    def get_compactions(self, session_id: str, *, user_id: str | None = None) -> _Compactions:
        """Overlays of a session, oldest first.

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = m.add_compaction("s1", "Greetings.", "m1", "m2")
        >>> [c.summary for c in m.get_compactions("s1")]
        ['Greetings.']
        """
        return self.get_session(session_id, user_id=user_id).get_compactions()

    # -- fork, split, usage ------------------------------------------------------------------------
    def fork(
        self,
        session_id: str,
        at_message_id: str,
        name: str | None = None,
        *,
        user_id: str | None = None,
    ) -> SessionInfo:
        """New session whose history is the path to ``at_message_id`` (overlays materialised).

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2"), user("bye")])
        >>> child = m.fork("s1", "m2", name="Take two")
        >>> child.parent_session_id, child.name, m.get_message_count(child.id)
        ('s1', 'Take two', 2)
        """
        source = self._require(session_id, user_id)
        history = self._session_for(session_id, None, source).get_history(at_message_id)
        copies = copies_of(history)

        def create_and_copy() -> SessionInfo:
            child = self._child_of(source, name)
            if copies:
                self.store.append_messages(
                    self.app_name, child.id, copies, None, user_id=source.user_id
                )
            return child

        # One transaction: a refused copy leaves no empty child behind.
        transaction = getattr(self.store, "transaction", None)
        child = transaction(create_and_copy) if transaction is not None else create_and_copy()
        return self.get(child.id) or child

    def compact_and_split(
        self,
        session_id: str,
        summary: str,
        name: str | None = None,
        *,
        user_id: str | None = None,
    ) -> SessionInfo:
        """End a session (``end_reason="compaction"``) and start a child seeded with ``summary``.

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel in Lisbon"})
        >>> child = m.compact_and_split("s1", "Ana wants a hotel in Lisbon.")
        >>> m.get("s1").end_reason, child.parent_session_id
        ('compaction', 's1')
        >>> print(m.get_history(child.id)[0]["parts"][0]["text"])
        [Context from previous session]
        Ana wants a hotel in Lisbon.
        """
        source = self._require(session_id, user_id)
        self.store.update_session(self.app_name, session_id, end_reason="compaction")
        child = self._child_of(source, name)
        text = f"{SPLIT_PREFIX}\n{summary}"
        self.append(child.id, {"role": "user", "content": text}, user_id=source.user_id)
        return self.get(child.id) or child

    def add_usage(
        self,
        session_id: str,
        input_tokens: int,
        output_tokens: int,
        cost: float = 0.0,
        *,
        user_id: str | None = None,
    ) -> None:
        """Atomically add token and cost counters to a session.

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.add_usage("s1", input_tokens=1200, output_tokens=300, cost=0.004)
        >>> m.add_usage("s1", 100, 50)
        >>> info = m.get("s1")
        >>> info.input_tokens, info.output_tokens, info.estimated_cost
        (1300, 350, 0.004)
        """
        total = check_usage(input_tokens, output_tokens, cost)
        if user_id is not None:
            self._require(session_id, user_id)
        self.store.add_usage(self.app_name, session_id, input_tokens, output_tokens, total)

    # -- search and tools --------------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 20, user_id: str | None = None) -> _Hits:
        """Full-text search across this app's sessions (optionally one user's).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> _ = m.append("s2", {"role": "user", "content": "Hotel in Porto?"}, user_id="bob")
        >>> [hit.session_id for hit in m.search("hotel", user_id="ana")]
        ['s1']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        return self.store.search_messages(self.app_name, query, user_id=user_id, limit=limit)

    def tools(self, *, user_id: str | None = None) -> Toolset:
        """Tools for the model: ``session_search`` across this app's sessions, only
        ``user_id``'s when given (give it whenever the model acts for one user).

        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "Find me a hotel"}, user_id="ana")
        >>> tools = m.tools(user_id="ana")
        >>> list(tools)
        ['session_search']
        >>> tools.execute("session_search", {"query": "hotel"})
        '[user] Find me a hotel'
        """

        def search(query: str) -> _Hits:
            return self.search(query, limit=SEARCH_RESULT_LIMIT, user_id=user_id)

        return Toolset([make_session_search_tool(search)])

    # -- state -------------------------------------------------------------------------------------
    def get_state(self, session_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """Merged state of a session (``app:``, ``user:``, session and live ``temp:`` keys).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.update_state("s1", {"app:currency": "EUR", "topic": "hotels"})
        >>> m.get_state("s1") == {"app:currency": "EUR", "topic": "hotels"}
        True
        """
        return dict(self.get_session(session_id, user_id=user_id).state)

    def update_state(
        self, session_id: str, delta: Mapping[str, Any], *, user_id: str | None = None
    ) -> None:
        """Apply a state delta to a session (``None`` deletes).

        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1", user_id="ana")
        >>> m.update_state("s1", {"user:lang": "pt", "draft": "hi"})
        >>> m.update_state("s1", {"draft": None})  # None deletes
        >>> m.get_state("s1")
        {'user:lang': 'pt'}
        """
        self.get_session(session_id, user_id=user_id).update_state(delta)

    def rewind(
        self,
        session_id: str,
        before_message_id: str | None = None,
        *,
        before_invocation_id: str | None = None,
        user_id: str | None = None,
    ) -> None:
        """Move the head before a message and undo its session-state changes (nothing deleted).

        Give exactly one of ``before_message_id`` or ``before_invocation_id``; the latter
        (ADK-TS ``rewindBeforeInvocationId``) rewinds to before the first message of the active
        path whose ``metadata.invocationId`` is that id (``MessageNotFoundError`` if none is).

        >>> from threadline.messages import assistant, user
        >>> m = SessionManager(":memory:")
        >>> _ = m.append_all("s1", [user("hi", id="m1"), assistant("hello", id="m2")])
        >>> _ = m.append("s1", user("book it", id="m3"), state_delta={"booked": True})
        >>> m.rewind("s1", before_message_id="m3")
        >>> m.get_state("s1"), m.get_history("s1")[-1]["id"], m.get_message_count("s1")
        ({}, 'm2', 2)
        >>> run = {"invocationId": "inv-2"}
        >>> _ = m.append_all("s1", [{**user("again", id="m4"), "metadata": run},
        ...                         {**assistant("done", id="m5"), "metadata": run}])
        >>> m.rewind("s1", before_invocation_id="inv-2")
        >>> m.get_history("s1")[-1]["id"]
        'm2'
        """
        if (before_message_id is None) == (before_invocation_id is None):
            raise InvalidArgumentError(
                "rewind needs exactly one of before_message_id or before_invocation_id"
            )
        if user_id is not None:
            self._require(session_id, user_id)
        if before_invocation_id is not None:
            path = self.store.get_path(self.app_name, session_id, attachments="ref")
            before_message_id = first_of_invocation(path, session_id, before_invocation_id)
        assert before_message_id is not None
        # The store raises MessageNotFoundError for an id not in the session (Store contract).
        self.store.rewind(self.app_name, session_id, before_message_id)


check_every_public_method(SessionManager, API_RULES)
# get_history's limit=None is the whole path (its default, AUTO, the manager's max_messages):
# its checker is Session.get_history's, which takes None.
SessionManager.get_history = checked(  # type: ignore[method-assign]
    SessionManager.get_history.__wrapped__,  # type: ignore[attr-defined]
    {k: v for k, v in API_RULES.items() if k != "limit"},
)
