"""The tree layer of :class:`~threadline.Session`: messages, the branching tree, the
history read through overlays and windows, attachments and search.

>>> from threadline import Session
>>> s = Session.create(":memory:")
>>> _ = s.append_message({"role": "user", "content": "hi"})
>>> [m["role"] for m in s.get_history()], s.get_path_length()
(['user'], 1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from threadline._session_blocks import SessionBlocks
from threadline._state import split_delta, validate_delta
from threadline._windows import Window, window_of
from threadline.compaction.overlays import (
    apply_overlays,
    apply_overlays_encoded,
    overlays_cross_start,
)
from threadline.errors import InvalidArgumentError, InvalidMessageError, MessageNotFoundError
from threadline.messages import decode_message, normalize_message, normalize_messages
from threadline.types import AUTO, AutoType, Message, RecentHistory, SearchHit

__all__ = ["SessionTree"]


class SessionTree(SessionBlocks):
    """Messages and the tree of a session (a layer of ``threadline.Session``).

    >>> from threadline import Session
    >>> Session.create(":memory:").get_latest_leaf() is None
    True
    """

    def _after_append(self) -> None:
        """Runs after every append; the compaction layer (``SessionCompaction``) overrides it
        with automatic compaction."""

    # -- messages and the tree ---------------------------------------------------------------------
    def append_message(
        self,
        message: Mapping[str, Any],
        parent_id: str | AutoType | None = AUTO,
        *,
        state_delta: Mapping[str, Any] | None = None,
    ) -> Message:
        """Store a message (child of the head by default) and return it normalised.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> s.append_message({"id": "m1", "role": "user", "content": "hi"})["parts"]
        [{'type': 'text', 'text': 'hi'}]
        """
        normalised = normalize_message(message)
        stored_delta: dict[str, Any] | None = None
        temp: dict[str, Any] = {}
        if state_delta is not None:
            stored_delta, temp = split_delta(validate_delta(state_delta))
            if stored_delta:
                meta = dict(normalised.get("metadata") or {})
                meta["stateDelta"] = stored_delta
                normalised["metadata"] = meta
        stored = self._backend.append_messages([normalised], parent_id, stored_delta or None)
        self._temp_apply(temp)
        self._note_skill_loads(stored)
        self._after_append()
        return stored[0]

    def append_messages(
        self, messages: Sequence[Mapping[str, Any]], parent_id: str | AutoType | None = AUTO
    ) -> list[Message]:
        """Store several messages in one transaction; each parents the next.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> q, a = s.append_messages([{"role": "user", "content": "hi"},
        ...                           {"role": "assistant", "content": "hello"}])
        >>> s.get_latest_leaf()["id"] == a["id"], s.get_path_length()
        (True, 2)
        """
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidMessageError("append_messages needs a list of messages")
        normalised = normalize_messages(messages)
        if not normalised:
            return []
        stored = self._backend.append_messages(normalised, parent_id)
        self._note_skill_loads(stored)
        self._after_append()
        return stored

    def update_message(self, message: Mapping[str, Any]) -> Message:
        """Replace role, parts and metadata of a stored message (``createdAt`` kept if omitted).

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"id": "m1", "role": "assistant", "content": "helo"})
        >>> s.update_message({"id": "m1", "role": "assistant", "content": "hello"})["parts"]
        [{'type': 'text', 'text': 'hello'}]
        """
        if not isinstance(message, Mapping) or not isinstance(message.get("id"), str):
            raise InvalidMessageError("update_message needs a message dict with a string 'id'")
        current = self._backend.get_message(message["id"])
        if current is None:
            raise MessageNotFoundError(f"message {message['id']!r} is not in this session")
        normalised = normalize_message(message, now=current.get("createdAt"))
        return self._backend.update_message(normalised)

    def delete_messages(self, ids: Sequence[str]) -> int:
        """Delete messages by id (children are not re-parented); returns how many were deleted.

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> s.delete_messages(["m2"]), s.get_message("m2")
        (1, None)
        """
        if isinstance(ids, str):
            ids = [ids]
        return self._backend.delete_messages(list(ids))

    def clear_messages(self) -> None:
        """Delete every message, overlay and loaded-skill record; refresh the cached prompt.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"role": "user", "content": "hi"})
        >>> s.clear_messages()
        >>> s.get_history()
        []
        """
        self._backend.clear_messages()
        self._loaded = set()
        if self._settings.cached_prompt:
            self.refresh_system_prompt()

    def get_message(self, message_id: str) -> Message | None:
        """One message by id, or ``None``.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_message("m1")["role"], s.get_message("nope")
        ('user', None)
        """
        return self._backend.get_message(message_id)

    def get_latest_leaf(self) -> Message | None:
        """The head message (the active leaf), or ``None`` for an empty session.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> s.get_latest_leaf() is None
        True
        >>> _ = s.append_message({"id": "m1", "role": "user", "content": "hi"})
        >>> s.get_latest_leaf()["id"]
        'm1'
        """
        return self._backend.get_head()

    def checkout(self, leaf_id: str) -> None:
        """Move the head to any message of the session (branch navigation).

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = s.append_message(assistant("hey", id="a2"), parent_id="q")  # now the head
        >>> s.checkout("a1")
        >>> s.get_latest_leaf()["id"]
        'a1'
        """
        self._backend.set_head(leaf_id)

    def get_path_length(self, leaf_id: str | None = None) -> int:
        """Number of raw messages on the path to ``leaf_id`` (default: head).

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="m1"), assistant("hello", id="m2")])
        >>> s.get_path_length(), s.get_path_length("m1")
        (2, 1)
        """
        return self._backend.get_path_length(leaf_id)

    def get_branches(self, message_id: str) -> list[Message]:
        """Children of a message, oldest first — e.g. the original and regenerated answers.

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("hi", id="q"), assistant("hello", id="a1")])
        >>> _ = s.append_message(assistant("hey", id="a2"), parent_id="q")  # regenerated
        >>> [m["id"] for m in s.get_branches("q")]
        ['a1', 'a2']
        """
        return self._backend.get_children(message_id)

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
    ) -> list[Message]:
        """Root→leaf path with overlays applied, then windowed, in this order:

        - ``branch``: only messages whose ``metadata.branch`` is unset or equal to, or a
          dot-prefix of, ``branch`` (``"root.agent_a"`` sees ``"root"``; ADK-TS branches);
        - ``after``: messages created at or after it (a datetime, an ISO 8601 string or epoch
          seconds);
        - ``runs``: the last N runs — a run starts at a user message and holds everything up
          to the next one (a user message carrying only tool results starts none, so calls and
          results stay whole); a history of N runs or fewer comes back whole, and compaction
          summaries right before the window stay in front of it;
        - ``limit``: the last N messages;
        - ``max_tokens``: oldest messages dropped until the estimate fits (the leaf is kept).

        Without ``after``, ``limit`` and ``runs`` read about as many rows as they return.
        Messages come back exactly as written; ``attachments="ref"`` leaves each string stored
        out of row as its reference instead (read it with :meth:`read_attachment`).

        >>> from threadline import Session
        >>> from threadline.messages import assistant, user
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([user("a"), assistant("b"), user("c"), assistant("d")])
        >>> len(s.get_history(limit=1)), [m["role"] for m in s.get_history(runs=1)]
        (1, ['user', 'assistant'])
        """
        window = window_of(
            limit=limit, max_tokens=max_tokens, after=after, runs=runs, branch=branch
        )
        if window.tail_only:
            return window.apply(self._history_tail(leaf_id, window, attachments))
        rows, compactions = self._backend.get_history_encoded(leaf_id, attachments=attachments)
        if not rows:
            return []
        return window.apply(apply_overlays_encoded(rows, compactions, decode_message))

    def _history_tail(
        self, leaf_id: str | None, window: Window, attachments: str = "inline"
    ) -> list[Message]:
        """The newest part of the history (overlays applied) that decides ``window``, reading
        about as many rows as it keeps: the read doubles only while an overlay reaches back
        past its start or the window is not decided by it yet."""
        count = window.first_read()
        rows, compactions = self._backend.get_history_tail_encoded(
            count, leaf_id, attachments=attachments
        )
        while True:
            complete = not rows or rows[0][2] == 1
            encoded = [(message_id, data) for message_id, data, _ in rows]
            if complete or not overlays_cross_start(encoded, compactions):
                history = apply_overlays_encoded(encoded, compactions, decode_message)
                if complete or window.decided_by(history):
                    return history
            count *= 2
            rows = self._backend.get_path_tail(count, leaf_id, attachments=attachments)

    def get_recent_history(self, max_bytes: int, min_recent_messages: int = 1) -> RecentHistory:
        """Newest messages of the head path whose stored JSON fits ``max_bytes``.

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> _ = s.append_messages([{"role": "user", "content": t} for t in ("x" * 500, "hi")])
        >>> recent = s.get_recent_history(max_bytes=200)
        >>> [m["parts"][0]["text"] for m in recent.messages], recent.truncated
        (['hi'], True)
        """
        if max_bytes < 0 or min_recent_messages < 0:
            raise InvalidArgumentError("max_bytes and min_recent_messages must be >= 0")
        recent = self._backend.get_recent_path(max_bytes, min_recent_messages)
        messages = recent.messages
        if messages:
            messages = apply_overlays(messages, self._backend.get_compactions())
        return RecentHistory(messages, recent.truncated, recent.total_content_bytes)

    def read_attachment(self, ref: object) -> bytes | str:
        """The content of an attachment of this session's app: ``bytes`` for file data,
        ``str`` for text (``ref`` from ``get_history(attachments="ref")``, or
        ``"sha256:<hex>"``). Needs a threadline Store.

        >>> from threadline import Session
        >>> import threadline
        >>> s = Session.create(":memory:").for_session("s")
        >>> big = "data:image/png;base64," + "AAAA" * 100_000
        >>> _ = s.append_message({"role": "user", "parts": [{"type": "file", "url": big}]})
        >>> ref = s.get_history(attachments="ref")[0]["parts"][0]["url"]
        >>> ref["kind"], len(s.read_attachment(ref))
        ('bytes', 300000)
        """
        store = self._require_store("read_attachment")
        return store.read_attachment(self._app_name, ref)

    def search(self, query: str, *, limit: int = 20) -> list[SearchHit]:
        """Full-text search over this session (stemmed words, phrases, substrings).

        >>> from threadline import Session
        >>> s = Session.create(":memory:")
        >>> _ = s.append_message({"role": "user", "content": "Where should I stay in Lisbon?"})
        >>> [hit.content for hit in s.search("lisbon")]
        ['Where should I stay in Lisbon?']
        """
        if not isinstance(query, str) or limit < 1:
            return []
        return self._backend.search(query, limit)
