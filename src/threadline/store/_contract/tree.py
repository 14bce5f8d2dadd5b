"""The storage contract, part two: messages, the tree, search and attachments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from threadline.store._contract.values import UNSET, Change, RecentPath, TreeNode
from threadline.types import (
    AUTO,
    AutoType,
    Compaction,
    Message,
    SearchHit,
)


@runtime_checkable
class TreeContract(Protocol):
    """Messages of a session as a tree: appends, edits, deletes, the head, path reads, search."""

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
        if_head: Any = UNSET,
        generation: int | None = None,
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
        (``threadline.messages.skill_loads_of``) are indexed. The returned list holds the
        given message object for each message written, the stored one for each that existed.

        ``if_head`` makes the append conditional (optimistic concurrency): the session must
        exist (``SessionNotFoundError``) and its head must be that message id (``None``: no
        head yet), checked in the same transaction, else ``HeadMovedError`` and nothing is
        written.

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
        generation: int | None = None,
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

    def delete_messages(
        self,
        app: str,
        session_id: str,
        message_ids: Sequence[str],
        *,
        generation: int | None = None,
    ) -> int:
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

    def clear_messages(self, app: str, session_id: str, *, generation: int | None = None) -> None:
        """Delete every message, search row, overlay and skill load of the session; head = None.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.clear_messages("default", "s1")
        >>> store.get_head("default", "s1"), store.get_session("default", "s1").message_count
        (None, 0)
        """

    def get_changes(
        self, app: str, session_id: str, after_stamp: int = 0, *, generation: int | None = None
    ) -> list[Change]:
        """The session's logged changes with a stamp above ``after_stamp``, oldest first:
        message edits, deletes and session block writes, each under the session's
        ``updated_at`` (µs) after it, logged in the write's transaction (ids and labels only,
        never a body). Appends are not logged (``seq`` tells them). Kept about an hour.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> _ = store.update_message("default", "s1", {"id": "m1", "role": "user", "parts": []})
        >>> [(c.kind, c.payload) for c in store.get_changes("default", "s1")]
        [('message_updated', {'id': 'm1'})]
        """

    def get_session_deletions(self, app: str, after_stamp: int = 0) -> list[Change]:
        """The app's sessions deleted after ``after_stamp`` (µs since the epoch), oldest
        first: each a ``Change`` of kind ``gone`` whose payload holds the ``session_id``, its
        ``generation`` and ``user_id``. Kept about an hour.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> info = store.create_session("default", "s1", user_id="u1")
        >>> _ = store.delete_session("default", "s1")
        >>> [c.payload for c in store.get_session_deletions("default")] == [
        ...     {"session_id": "s1", "generation": info.generation, "user_id": "u1"}]
        True
        """

    def get_message(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> Message | None:
        """One stored message, or ``None``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_message("default", "s1", "m1")
        {'id': 'm1', 'role': 'user', 'parts': []}
        >>> store.get_message("default", "s2", "m1") is None  # ids belong to their session
        True
        """

    def get_head(
        self, app: str, session_id: str, *, generation: int | None = None
    ) -> Message | None:
        """The head message (the active leaf), or ``None`` for an empty session.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.get_head("default", "s1") is None
        True
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_head("default", "s1")["id"]
        'm1'
        """

    def set_head(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> None:
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
        generation: int | None = None,
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

    def get_tree(
        self,
        app: str,
        session_id: str,
        *,
        after_seq: int = 0,
        limit: int = 1000,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[TreeNode]:
        """Every message of the session (all branches), in ``seq`` order, with its parent:
        the first ``limit`` with ``seq > after_seq`` (page on with the last ``seq`` seen).
        ``[]`` for an unknown session.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> branch = {"id": "b", "role": "user", "parts": []}
        >>> _ = store.append_messages("default", "s1", [branch], "m1")
        >>> [(n.seq, n.message["id"], n.parent_id) for n in store.get_tree("default", "s1")]
        [(1, 'm1', None), (2, 'm2', 'm1'), (3, 'b', 'm1')]
        >>> [n.message["id"] for n in store.get_tree("default", "s1", after_seq=2)]
        ['b']
        """

    def get_path_encoded(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> list[tuple[str, str]]:
        """``(id, stored compact JSON)`` for each message of :meth:`get_path`, root first.

        Lets a reader decode only the messages it will show (overlays hide the rest).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_path_encoded("default", "s1")
        [('m1', '{"id":"m1","role":"user","parts":[]}')]
        """

    def get_history_encoded(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> tuple[list[tuple[str, str]], list[Compaction]]:
        """:meth:`get_path_encoded` and :meth:`get_compactions` in one read (what a history
        needs; one round trip on PostgreSQL).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> _ = store.add_compaction("default", "s1", "Hello.", "m1", "m1")
        >>> rows, overlays = store.get_history_encoded("default", "s1")
        >>> [row[0] for row in rows], [c.summary for c in overlays]
        (['m1'], ['Hello.'])
        """

    def get_path_tail(
        self,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
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

    def get_history_tail_encoded(
        self,
        app: str,
        session_id: str,
        count: int,
        leaf_id: str | None = None,
        *,
        attachments: str = "inline",
        generation: int | None = None,
    ) -> tuple[list[tuple[str, str, int]], list[Compaction]]:
        """:meth:`get_path_tail` and :meth:`get_compactions` in one read (the newest part of a
        history: one transaction instead of two).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2, 3)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> _ = store.add_compaction("default", "s1", "One.", "m1", "m1")
        >>> rows, overlays = store.get_history_tail_encoded("default", "s1", 2)
        >>> [row[0] for row in rows], [c.summary for c in overlays]
        (['m2', 'm3'], ['One.'])
        """

    def get_path_ids(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        generation: int | None = None,
    ) -> list[str]:
        """Ids of :meth:`get_path`, without loading message bodies.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.get_path_ids("default", "s1"), store.get_path_ids("default", "s1", leaf_id="m1")
        (['m1', 'm2'], ['m1'])
        """

    def get_recent_path(
        self,
        app: str,
        session_id: str,
        max_bytes: int,
        min_messages: int = 1,
        *,
        generation: int | None = None,
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

    def get_path_length(
        self,
        app: str,
        session_id: str,
        leaf_id: str | None = None,
        *,
        generation: int | None = None,
    ) -> int:
        """Raw number of messages on the path (0 for an empty session; unknown id raises).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msgs = [{"id": f"m{i}", "role": "user", "parts": []} for i in (1, 2)]
        >>> _ = store.append_messages("default", "s1", msgs)
        >>> store.get_path_length("default", "s1"), store.get_path_length("default", "s2")
        (2, 0)
        """

    def get_children(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> list[Message]:
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
        generation: int | None = None,
    ) -> list[SearchHit]:
        """Full-text search (docs/search.md) over one session or, with ``session_id=None``, every
        session of ``app``: only ``user_id``'s when given, only sessions without a user with
        ``without_user=True``. Never raises on any query text. ``generation=`` (with
        ``session_id``) searches only that creation of the session (store/_generation.py).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> msg = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "red apples"}]}
        >>> _ = store.append_messages("default", "s1", [msg], user_id="u1")
        >>> [(hit.session_id, hit.content) for hit in store.search_messages("default", "apples")]
        [('s1', 'red apples')]
        >>> store.search_messages("default", "apples", user_id="u2")  # only u2's sessions
        []
        """

    def read_attachment(self, app: str, ref: Any, *, session_id: str | None = None) -> bytes | str:
        """The content of an attachment of ``app`` (a reference dict found in a message read
        with ``attachments="ref"``, or ``"sha256:<hex>"``): ``bytes`` for file data, ``str``
        for text. ``AttachmentNotFoundError`` if ``app`` has no such attachment, or with
        ``session_id``, if no message of that session refers to it.

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
        >>> store.read_attachment("app", ref, session_id="other")
        Traceback (most recent call last):
        threadline.errors.AttachmentNotFoundError: session 'other' has no attachment sha256:...
        """
