"""The storage contract every backend meets (SQLite, PostgreSQL).

A :class:`Store` holds everything threadline persists, keyed by ``(app, session_id)``:
messages (one row each, a tree via ``parent_id``), the persisted head, summary overlays,
memory blocks, the cached system prompt, keyed entries for search/skill providers, scoped
state and the session registry. Nothing above the store writes SQL; nothing in the store
knows about builders or providers.

Rules every implementation follows (the conformance suite checks them):

* Each public write is one transaction; concurrent writers (threads or processes) never lose
  or fork a message.
* Every write to a session (messages, head, overlays, session-scoped blocks, state, usage)
  creates its registry row if missing (owned by ``user_id`` when given) and moves ``updated_at``
  (microsecond resolution, strictly increasing per session). Reads never write.
* A session's owner is the ``user_id`` it was created with and never changes: a write that
  names another user raises ``SessionNotFoundError``; a write naming a user to a session
  without one leaves it without one.
* Messages are stored already normalised (``threadline.messages.normalize_message``) and after
  ``enforce_row_size``; the store stores and returns them unchanged, as compact JSON.
* Per session, every message gets a monotonically increasing ``seq``; all "oldest/newest"
  decisions use it.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> msg = {"id": "m1", "role": "user", "parts": []}
>>> store.append_messages("default", "s1", [msg], AUTO)[0]["id"]
'm1'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from threadline.types import (
    AUTO,
    AutoType,
    Compaction,
    Message,
    RecentHistory,
    Scope,
    SearchHit,
    SessionInfo,
    SessionPage,
)

if TYPE_CHECKING:
    from threadline.store._handle import SessionStore

__all__ = ["AUTO", "UNSET", "Entry", "OwnerKind", "RecentPath", "SkillLoad", "Store"]

OwnerKind = Scope
"""Who a block or state key belongs to: one session, one user of the app, or the whole app
(the same three values as a block's ``scope``)."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marker for "leave this field unchanged" in :meth:`Store.update_session`."""


RecentPath = RecentHistory
"""What ``get_recent_path`` returns: the newest contiguous suffix of the head path (root→leaf
order) and the path's byte total; the same type as ``Session.get_recent_history`` returns
(before overlays are applied)."""


@dataclass(frozen=True)
class SkillLoad:
    """A skill document loaded by a ``load_context`` tool result stored in a message.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> msg = threadline.messages.tool_call("load_context", {"label": "s", "key": "k"}, "doc", "c1")
    >>> msg["id"] = "m1"
    >>> _ = store.append_messages("default", "s1", [msg])
    >>> store.get_skill_loads("default", "s1")
    [SkillLoad(label='s', key='k', message_id='m1', tool_call_id='c1')]
    """

    label: str
    key: str
    message_id: str
    tool_call_id: str | None


@dataclass(frozen=True)
class Entry:
    """A keyed document of a search or skill provider (shared by every session of an app).

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.put_entry("default", "docs", "faq", "Ask us anything.", "Common questions")
    >>> store.get_entry("default", "docs", "faq")
    Entry(key='faq', content='Ask us anything.', description='Common questions')
    """

    key: str
    content: str
    description: str | None


@runtime_checkable
class Store(Protocol):
    """Storage contract. ``app`` and ``session_id`` scope every session-level call.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> isinstance(store, Store)
    True
    """

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Release connections. Idempotent.

        >>> import threadline
        >>> with threadline.connect(":memory:") as store:
        ...     store.count_sessions("default")
        0
        >>> store.close()  # already closed by ``with``; closing again is fine
        """

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...

    def session(self, app: str, session_id: str, *, user_id: str | None = None) -> SessionStore:
        """One session's view of the store: every method taking ``(app, session_id)`` with
        those bound (``user_id`` is the writer for appends and the reader for state).

        >>> import threadline
        >>> threadline.connect(":memory:").session("default", "s1").get_path()
        []
        """

    # -- session registry --------------------------------------------------------------------
    def create_session(
        self,
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Insert a registry row; raises ``SessionExistsError`` if ``(app, session_id)`` exists.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.create_session("default", "s1", user_id="u1", name="Trip").user_id
        'u1'
        >>> store.create_session("default", "s1")
        Traceback (most recent call last):
        threadline.errors.SessionExistsError: session 's1' already exists in app 'default'
        """

    def get_session(self, app: str, session_id: str) -> SessionInfo | None:
        """The registry row, or ``None``. ``message_count`` counts all stored messages.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_session("default", "s1").message_count
        1
        >>> store.get_session("other", "s1") is None  # sessions are per app
        True
        """

    def list_sessions(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest ``updated_at`` first, ties by ``id`` descending; keyset pagination.

        ``cursor`` is the opaque ``next_cursor`` of the previous page; ``next_cursor`` is
        ``None`` exactly when no session follows. Uses an index, never sorts the table.
        A malformed cursor raises ``InvalidArgumentError``; ``limit`` < 1 too.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> for sid in ("s1", "s2", "s3"):
        ...     store.touch_session("default", sid)
        >>> page = store.list_sessions("default", limit=2)
        >>> [s.id for s in page.sessions]
        ['s3', 's2']
        >>> [s.id for s in store.list_sessions("default", cursor=page.next_cursor).sessions]
        ['s1']
        """

    def update_session(
        self,
        app: str,
        session_id: str,
        *,
        name: Any = UNSET,
        end_reason: Any = UNSET,
        model: Any = UNSET,
        source: Any = UNSET,
        metadata: Any = UNSET,
    ) -> SessionInfo:
        """Set the given fields (``UNSET`` leaves one alone) and touch ``updated_at``.

        Raises ``SessionNotFoundError`` if the row does not exist.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.create_session("default", "s1", name="Draft")
        >>> info = store.update_session("default", "s1", end_reason="done")
        >>> info.name, info.end_reason  # name was left UNSET: unchanged
        ('Draft', 'done')
        """

    def touch_session(self, app: str, session_id: str, *, user_id: str | None = None) -> None:
        """Create the registry row if missing and move ``updated_at``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1")  # creates the row
        >>> before = store.get_session("default", "s1").updated_at
        >>> store.touch_session("default", "s1")
        >>> store.get_session("default", "s1").updated_at > before
        True
        """

    def delete_session(self, app: str, session_id: str) -> bool:
        """Delete the row and everything of the session: messages, search rows, overlays,
        session-scoped blocks, prompt, session state, skill loads. ``False`` if nothing existed.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.delete_session("default", "s1"), store.get_message("default", "s1", "m1")
        (True, None)
        >>> store.delete_session("default", "s1")
        False
        """

    def purge_sessions(self, app: str, *, before: datetime, user_id: str | None = None) -> int:
        """Delete (as ``delete_session``) every session of ``app`` with ``updated_at < before``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> from datetime import timedelta
        >>> store.touch_session("default", "s1")
        >>> store.purge_sessions("default", before=store.now() - timedelta(days=30))  # s1 is newer
        0
        >>> store.purge_sessions("default", before=store.now() + timedelta(seconds=1))
        1
        """

    def add_usage(
        self, app: str, session_id: str, input_tokens: int, output_tokens: int, cost: float
    ) -> None:
        """Atomically increment the usage counters (creating the row if missing).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.add_usage("default", "s1", 100, 20, 0.5)  # creates the row
        >>> store.add_usage("default", "s1", 50, 10, 0.25)
        >>> info = store.get_session("default", "s1")
        >>> info.input_tokens, info.output_tokens, info.estimated_cost
        (150, 30, 0.75)
        """

    def count_sessions(
        self, app: str, *, user_id: str | None = None, without_user: bool = False
    ) -> int:
        """Number of registry rows of ``app``; only ``user_id``'s sessions when given, only
        sessions without a user with ``without_user=True``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1", user_id="u1")
        >>> store.touch_session("default", "s2")
        >>> store.count_sessions("default"), store.count_sessions("default", user_id="u1")
        (2, 1)
        >>> store.count_sessions("default", without_user=True), store.count_sessions("other")
        (1, 0)
        """

    def forget_user(self, app: str, user_id: str) -> int:
        """Delete, in one transaction, every session of ``user_id`` in ``app`` (with all that
        hangs off it), the user's user-scoped blocks and ``user:`` state. Returns the number of
        sessions deleted.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.update_state("default", "s1", "u1", {"user:lang": "nb"})  # s1 is now u1's
        >>> store.forget_user("default", "u1")
        1
        >>> store.get_session("default", "s1"), store.get_state("default", "s2", "u1")
        (None, {})
        """

    # -- messages and the tree ---------------------------------------------------------------
    def append_messages(
        self,
        app: str,
        session_id: str,
        messages: Sequence[Message],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
        state_delta: Mapping[str, Any] | None = None,
        size_policy: str | None = None,
        max_message_bytes: int | None = None,
    ) -> list[Message]:
        """Append already-normalised messages in one transaction; each parents the next.

        ``size_policy`` / ``max_message_bytes`` override the store's for this call
        (``connect``; docs/attachments.md): long strings go out of row as attachments, are
        truncated, or raise ``MessageTooLargeError``; reads return messages as written.

        ``parent_id``: ``AUTO`` = child of the head; ``None`` = new root; a string = that
        message (``MessageNotFoundError`` if it is not in the session). A message whose id
        already exists in the session is not written: the stored one is returned in its place,
        the head is not moved for it, and it still parents the next message of the batch.
        The head moves to the last newly written message. ``state_delta`` (only with a single
        message, not ``temp:``-filtered here — the caller removes those) is applied in the same
        transaction with ``user_id`` resolving ``user:`` keys, and the previous values are
        recorded with the message so that :meth:`rewind` can undo it; it is not applied when
        the message already existed. Skill loads found in the messages
        (``threadline.messages.skill_loads_of``) are indexed.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)  # m1 parents m2; the head moves to m2
        >>> _ = store.append_messages("default", "s1", msgs[:1])  # m1 exists: not written again
        >>> store.get_path_ids("default", "s1"), store.get_head("default", "s1")["id"]
        (['m1', 'm2'], 'm2')
        """

    def update_message(
        self,
        app: str,
        session_id: str,
        message: Message,
        *,
        size_policy: str | None = None,
        max_message_bytes: int | None = None,
    ) -> Message:
        """Replace ``role``/``parts``/``metadata``/``createdAt`` of an existing message (the
        caller has merged ``createdAt``); search index and skill-load index follow.
        ``MessageNotFoundError`` for an unknown id. Returns the stored message.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> edited = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
        >>> store.update_message("default", "s1", edited)["parts"]
        [{'type': 'text', 'text': 'hi'}]
        """

    def delete_messages(self, app: str, session_id: str, message_ids: Sequence[str]) -> int:
        """Delete those messages (unknown ids are ignored); children of a deleted message become
        roots. If the head was deleted, the head becomes the remaining leaf with the highest
        ``seq`` (``None`` if none remain). Returns the number deleted.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2, 3)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.delete_messages("default", "s1", ["m2", "nope"])  # unknown ids are ignored
        1
        >>> store.get_path_ids("default", "s1")  # m3 lost its parent: it is a root now
        ['m3']
        """

    def clear_messages(self, app: str, session_id: str) -> None:
        """Delete every message, search row, overlay and skill load of the session; head = None.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.clear_messages("default", "s1")
        >>> store.get_head("default", "s1"), store.get_session("default", "s1").message_count
        (None, 0)
        """

    def get_message(self, app: str, session_id: str, message_id: str) -> Message | None:
        """One stored message, or ``None``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_message("default", "s1", "m1")
        {'id': 'm1', 'role': 'user', 'parts': []}
        >>> store.get_message("default", "s2", "m1") is None  # ids belong to their session
        True
        """

    def get_head(self, app: str, session_id: str) -> Message | None:
        """The head message (the active leaf), or ``None`` for an empty session.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.get_head("default", "s1") is None
        True
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_head("default", "s1")["id"]
        'm1'
        """

    def set_head(self, app: str, session_id: str, message_id: str) -> None:
        """Move the head to any message of the session (``MessageNotFoundError`` if unknown).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.set_head("default", "s1", "m1")
        >>> store.get_path_ids("default", "s1")
        ['m1']
        """

    def get_path(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
    ) -> list[Message]:
        """Raw root→leaf path ending at ``leaf_id`` (default: head); ``[]`` for an empty session;
        ``MessageNotFoundError`` for an unknown ``leaf_id``. Walks parent links only.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> [m["id"] for m in store.get_path("default", "s1")], store.get_path("default", "s2")
        (['m1', 'm2'], [])
        """

    def get_path_encoded(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
    ) -> list[tuple[str, str]]:
        """``(id, stored compact JSON)`` for each message of :meth:`get_path`, root first.

        Lets a reader decode only the messages it will show (overlays hide the rest).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_path_encoded("default", "s1")
        [('m1', '{"id":"m1","role":"user","parts":[]}')]
        """

    def now(self) -> datetime:
        """The store's current time (aware UTC): what it records in ``updated_at`` and what
        relative cutoffs (``purge(older_than=timedelta)``) count from.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1")
        >>> store.get_session("default", "s1").updated_at <= store.now()
        True
        >>> store.now().tzinfo
        datetime.timezone.utc
        """

    def get_path_tail(
        self,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
    ) -> list[tuple[str, str, int]]:
        """The newest ``count`` messages of the path to ``leaf_id`` (default: the head) as
        ``(id, stored JSON, depth)``, root side first, reading at most ``count`` rows; the
        root is included when its depth is 1. ``MessageNotFoundError`` for an unknown leaf.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2, 3)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> [(row[0], row[2]) for row in store.get_path_tail("default", "s1", 2)]  # (id, depth)
        [('m2', 2), ('m3', 3)]
        """

    def get_path_ids(self, app: str, session_id: str, leaf_id: str | None = None) -> list[str]:
        """Ids of :meth:`get_path`, without loading message bodies.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.get_path_ids("default", "s1"), store.get_path_ids("default", "s1", leaf_id="m1")
        (['m1', 'm2'], ['m1'])
        """

    def get_recent_path(
        self, app: str, session_id: str, max_bytes: int, min_messages: int = 1
    ) -> RecentPath:
        """Newest contiguous suffix of the head path whose stored JSON sizes sum to at most
        ``max_bytes`` — but always at least ``min_messages`` (and at least the head) when the
        path has them. Never loads message bodies outside the window. ``truncated`` is True
        when older messages exist on the path; ``total_content_bytes`` is the byte total of the
        whole head path (kept per message, not summed at read time).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2, 3)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> recent = store.get_recent_path("default", "s1", max_bytes=80)  # 36 bytes a message
        >>> [m["id"] for m in recent.messages], recent.truncated, recent.total_content_bytes
        (['m2', 'm3'], True, 108)
        """

    def get_path_length(self, app: str, session_id: str, leaf_id: str | None = None) -> int:
        """Raw number of messages on the path (0 for an empty session; unknown id raises).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.get_path_length("default", "s1"), store.get_path_length("default", "s2")
        (2, 0)
        """

    def get_children(self, app: str, session_id: str, message_id: str) -> list[Message]:
        """Children of that message, oldest first by ``seq``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2, 3)]
        >>> _ = store.append_messages("default", "s1", msgs[:2])
        >>> _ = store.append_messages("default", "s1", msgs[2:], parent_id="m1")  # a second branch
        >>> [m["id"] for m in store.get_children("default", "s1", "m1")]
        ['m2', 'm3']
        """

    def search_messages(
        self,
        app: str,
        query: str,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        without_user: bool = False,
        limit: int = 20,
    ) -> list[SearchHit]:
        """Full-text search (docs/search.md) over one session or, with ``session_id=None``, every
        session of ``app``: only ``user_id``'s when given, only sessions without a user with
        ``without_user=True``. Never raises on any query text.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msg = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "red apples"}]}
        >>> _ = store.append_messages("default", "s1", [msg], user_id="u1")
        >>> [(hit.session_id, hit.content) for hit in store.search_messages("default", "apples")]
        [('s1', 'red apples')]
        >>> store.search_messages("default", "apples", user_id="u2")  # only u2's sessions
        []
        """

    def read_attachment(self, app: str, ref: Any) -> bytes | str:
        """The content of an attachment of ``app`` (a reference dict found in a message read
        with ``attachments="ref"``, or ``"sha256:<hex>"``): ``bytes`` for file data, ``str``
        for text. ``InvalidArgumentError`` if ``app`` has no such attachment.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> image = "data:image/png;base64," + "QUJD" * 100_000
        >>> part = {"type": "file", "mediaType": "image/png", "url": image}
        >>> _ = store.append_messages("app", "s", [{"id": "m", "role": "user", "parts": [part]}])
        >>> ref = store.get_path("app", "s", attachments="ref")[0]["parts"][0]["url"]
        >>> store.read_attachment("app", ref) == b"ABC" * 100_000
        True
        >>> store.get_path("app", "s")[0]["parts"][0]["url"] == image
        True
        """

    # -- overlays ----------------------------------------------------------------------------
    def add_compaction(
        self, app: str, session_id: str, summary: str, from_message_id: str, to_message_id: str
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

    def get_compactions(self, app: str, session_id: str) -> list[Compaction]:
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
    def get_skill_loads(self, app: str, session_id: str) -> list[SkillLoad]:
        """Indexed skill loads of the session, oldest message first.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msg = threadline.messages.tool_call("load_context", {"label": "s", "key": "k"}, "doc")
        >>> _ = store.append_messages("default", "s1", [msg])
        >>> [(load.label, load.key) for load in store.get_skill_loads("default", "s1")]
        [('s', 'k')]
        """

    # -- memory blocks and the cached prompt -----------------------------------------------------
    def get_block(self, app: str, owner: OwnerKind, owner_id: str, label: str) -> str | None:
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
    ) -> None:
        """Upsert a block; a ``session``-owned write also touches that session's registry row.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.set_block("default", "session", "s1", "notes", "Draft v1")
        >>> store.set_block("default", "session", "s1", "notes", "Draft v2")
        >>> store.get_block("default", "session", "s1", "notes"), store.count_sessions("default")
        ('Draft v2', 1)
        """

    def get_prompt(self, app: str, session_id: str) -> str | None:
        """The persisted frozen system prompt, if any.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.get_prompt("default", "s1") is None
        True
        >>> store.set_prompt("default", "s1", "You are helpful.")
        >>> store.get_prompt("default", "s1")
        'You are helpful.'
        """

    def set_prompt(self, app: str, session_id: str, prompt: str | None) -> None:
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
    def get_state(self, app: str, session_id: str, user_id: str | None) -> dict[str, Any]:
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
        self, app: str, session_id: str, user_id: str | None, delta: Mapping[str, Any]
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

    def rewind(self, app: str, session_id: str, before_message_id: str) -> None:
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
