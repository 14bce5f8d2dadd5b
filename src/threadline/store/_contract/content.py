"""The storage contract, part three: overlays, skill loads, blocks, the prompt, entries, state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from threadline.store._contract.values import Entry, OwnerKind, SkillLoad
from threadline.types import (
    Compaction,
)


@runtime_checkable
class ContentContract(Protocol):
    """What hangs off a session besides its messages, and what an app or user shares."""

    # -- overlays ----------------------------------------------------------------------------
    def add_compaction(
        self,
        app: str,
        session_id: str,
        summary: str,
        from_message_id: str,
        to_message_id: str,
        *,
        generation: int | None = None,
    ) -> Compaction:
        """Store an overlay. Both ids must be in the session and ``from`` an ancestor-or-self of
        ``to``, else ``InvalidArgumentError``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.add_compaction("default", "s1", "Greetings.", "m1", "m2").summary
        'Greetings.'
        >>> store.add_compaction("default", "s1", "Greetings.", "m2", "m1")
        Traceback (most recent call last):
        threadline.errors.InvalidArgumentError: 'm2' is not an ancestor of 'm1'
        """

    def get_compactions(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> list[Compaction]:
        """Every overlay of the session, oldest first (superseded ones included).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> _ = store.add_compaction("default", "s1", "First.", "m1", "m1")
        >>> _ = store.add_compaction("default", "s1", "Second.", "m1", "m1")
        >>> [c.summary for c in store.get_compactions("default", "s1")]
        ['First.', 'Second.']
        """

    # -- loaded skills -------------------------------------------------------------------------
    def get_skill_loads(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> list[SkillLoad]:
        """Indexed skill loads of the session, oldest message first.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msg = threadline.messages.tool_call("load_context", {"label": "s", "key": "k"}, "doc")
        >>> _ = store.append_messages("default", "s1", [msg])
        >>> [(load.label, load.key) for load in store.get_skill_loads("default", "s1")]
        [('s', 'k')]
        """

    # -- memory blocks and the cached prompt -----------------------------------------------------
    def get_block(
        self,
        app: str,
        owner: OwnerKind,
        owner_id: str,
        label: str,
        *,
        generation: int | None = None,
    ) -> str | None:
        """Stored content of a store-backed block (``owner_id`` = session id, user id or "").

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.set_block("default", "user", "u1", "profile", "Likes tea.")
        >>> store.get_block("default", "user", "u1", "profile")
        'Likes tea.'
        >>> store.get_block("default", "user", "u2", "profile") is None
        True
        """

    def set_block(
        self,
        app: str,
        owner: OwnerKind,
        owner_id: str,
        label: str,
        content: str,
        *,
        user_id: str | None = None,
        generation: int | None = None,
    ) -> None:
        """Upsert a block; a ``session``-owned write also touches that session's registry row.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.set_block("default", "session", "s1", "notes", "Draft v1")
        >>> store.set_block("default", "session", "s1", "notes", "Draft v2")
        >>> store.get_block("default", "session", "s1", "notes"), store.count_sessions("default")
        ('Draft v2', 1)
        """

    def get_prompt(self, app: str, session_id: str, *, generation: int | None = None) -> str | None:
        """The persisted frozen system prompt, if any.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.get_prompt("default", "s1") is None
        True
        >>> store.set_prompt("default", "s1", "You are helpful.")
        >>> store.get_prompt("default", "s1")
        'You are helpful.'
        """

    def set_prompt(
        self, app: str, session_id: str, prompt: str | None, *, generation: int | None = None
    ) -> None:
        """Persist (or with ``None`` forget) the frozen system prompt. Like every write to a
        session it creates the registry row if missing and moves ``updated_at``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.set_prompt("default", "s1", "You are helpful.")
        >>> store.set_prompt("default", "s1", "You are terse.")  # replaces it
        >>> store.get_prompt("default", "s1"), store.count_sessions("default")
        ('You are terse.', 1)
        """

    # -- keyed entries (StoreSearchProvider / StoreSkillProvider), shared per (app, label) -------
    def put_entry(
        self, app: str, label: str, key: str, content: str, description: str | None = None
    ) -> None:
        """Insert or replace an entry (search index kept in step).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "docs", "faq", "Ask anything.")
        >>> store.put_entry("default", "docs", "faq", "Ask us anything.", "Common questions")
        >>> store.list_entries("default", "docs")[0].content, store.count_entries("default", "docs")
        ('Ask us anything.', 1)
        """

    def get_entry(self, app: str, label: str, key: str) -> Entry | None:
        """One entry, or ``None``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "docs", "faq", "Ask us anything.")
        >>> store.get_entry("default", "docs", "faq")
        Entry(key='faq', content='Ask us anything.', description=None)
        >>> store.get_entry("other", "docs", "faq") is None  # entries are per app
        True
        """

    def list_entries(self, app: str, label: str) -> list[Entry]:
        """All entries of the label, ordered by key.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> for key in ("b", "a"):
        ...     store.put_entry("default", "docs", key, f"Document {key}.")
        >>> [entry.key for entry in store.list_entries("default", "docs")]
        ['a', 'b']
        """

    def count_entries(self, app: str, label: str) -> int:
        """Number of entries of the label.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "docs", "faq", "Ask us anything.")
        >>> store.count_entries("default", "docs"), store.count_entries("default", "skills")
        (1, 0)
        """

    def delete_entry(self, app: str, label: str, key: str) -> bool:
        """Delete an entry (search index kept in step); ``False`` if it did not exist.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "docs", "faq", "Ask us anything.")
        >>> store.delete_entry("default", "docs", "faq")
        True
        >>> store.delete_entry("default", "docs", "faq")
        False
        """

    def search_entries(self, app: str, label: str, query: str, limit: int = 10) -> list[Entry]:
        """Same search rules as messages (§8), best first; never raises on query text.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.put_entry("default", "docs", "tea", "How to brew green tea.")
        >>> store.put_entry("default", "docs", "bikes", "Fixing a flat tyre.")
        >>> [entry.key for entry in store.search_entries("default", "docs", "green tea")]
        ['tea']
        >>> store.search_entries("default", "docs", '"(')
        []
        """

    # -- scoped state (pure rules in threadline._state; keys carry their prefix) -----------------
    def get_state(
        self, app: str, session_id: str, user_id: str | None, *, generation: int | None = None
    ) -> dict[str, Any]:
        """Merged stored state: ``app:*`` keys, ``user:*`` keys of ``user_id`` (none if
        ``user_id`` is None), and the session's own keys. Values are JSON values.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.update_state("default", "s1", "u1", {"app:x": 1, "user:lang": "nb", "step": 2})
        >>> sorted(store.get_state("default", "s1", "u1"))
        ['app:x', 'step', 'user:lang']
        >>> store.get_state("default", "s2", None)  # another session, no user: only app: keys
        {'app:x': 1}
        """

    def update_state(
        self,
        app: str,
        session_id: str,
        user_id: str | None,
        delta: Mapping[str, Any],
        *,
        generation: int | None = None,
    ) -> None:
        """Apply a delta atomically (``None`` deletes). Keys starting with ``temp:`` are never
        stored (ignored). ``user:`` keys without ``user_id`` raise ``InvalidArgumentError``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.update_state("default", "s1", None, {"step": 1, "temp:scratch": "x"})
        >>> store.update_state("default", "s1", None, {"step": None, "done": True})  # None deletes
        >>> store.get_state("default", "s1", None)
        {'done': True}
        """

    def rewind(
        self, app: str, session_id: str, before_message_id: str, *, generation: int | None = None
    ) -> None:
        """Move the head to the parent of ``before_message_id`` (None if it is a root) and
        restore session-scoped state keys to their values before that message by undoing the
        recorded deltas of that message's subtree (earliest record per key wins). ``app:`` and
        ``user:`` keys are not rolled back; nothing is deleted. ``MessageNotFoundError`` if
        unknown.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs[:1], state_delta={"step": 1})
        >>> _ = store.append_messages("default", "s1", msgs[1:], state_delta={"step": 2})
        >>> store.rewind("default", "s1", "m2")
        >>> store.get_head("default", "s1")["id"], store.get_state("default", "s1", None)
        ('m1', {'step': 1})
        """
