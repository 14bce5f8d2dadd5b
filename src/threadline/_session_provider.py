"""A custom message store behind a Session: :class:`SessionProvider` and its adapter.

A ``Session`` talks to one *backend* bound to its (app, session id, user): over a threadline
Store that is ``store.session(app, session_id)``; over a user's own message-only
``SessionProvider`` (the extension point for an existing message store) it is
:class:`ProviderBackend`, which offers the same methods and no store features (state,
store-backed blocks, a cached prompt in the store).

>>> import threadline
>>> is_store(threadline.connect(":memory:")), is_store(object())
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from threadline.errors import InvalidArgumentError, MessageNotFoundError, ThreadlineError
from threadline.messages import encode_message, skill_loads_of
from threadline.store.base import RecentPath, SkillLoad, Store
from threadline.types import AUTO, AutoType, Compaction, Message, SearchHit

__all__ = ["ProviderBackend", "SessionProvider", "is_store"]


@runtime_checkable
class SessionProvider(Protocol):
    """A custom message store (messages only).

    ``get_history`` returns the raw root→leaf path (no overlays); ``append_message`` stores an
    already-normalised message under ``parent_id`` (``None`` = root) and makes it the latest leaf.
    Any object with these methods is one (README, "Bring your own message store"):

    >>> import threadline
    >>> isinstance(threadline.connect(":memory:"), SessionProvider)
    False
    """

    def get_message(self, message_id: str) -> Message | None: ...

    def get_history(self, leaf_id: str | None = None) -> list[Message]: ...

    def get_latest_leaf(self) -> Message | None: ...

    def get_branches(self, message_id: str) -> list[Message]: ...

    def get_path_length(self, leaf_id: str | None = None) -> int: ...

    def append_message(self, message: Message, parent_id: str | None = None) -> object: ...

    def update_message(self, message: Message) -> object: ...

    def delete_messages(self, message_ids: Sequence[str]) -> object: ...

    def clear_messages(self) -> object: ...

    def add_compaction(self, summary: str, from_message_id: str, to_message_id: str) -> Any: ...

    def get_compactions(self) -> list[Compaction]: ...

    def search_messages(self, query: str, limit: int) -> list[SearchHit]: ...


def is_store(obj: object) -> bool:
    """True if ``obj`` is a threadline Store (duck-typed on its core methods).

    >>> is_store(object())
    False
    """
    return all(hasattr(obj, name) for name in ("append_messages", "get_path", "get_recent_path"))


class ProviderBackend:
    """Adapts a user's :class:`SessionProvider` to the methods of ``Store.session(...)`` that a
    Session uses."""

    def __init__(self, provider: SessionProvider) -> None:
        self.provider = provider
        self.store: Store | None = None

    def append_messages(
        self,
        messages: Sequence[Message],
        parent_id: str | AutoType | None = AUTO,
        state_delta: Mapping[str, Any] | None = None,
    ) -> list[Message]:
        if state_delta:
            raise ThreadlineError("state needs a threadline Store, not a custom SessionProvider")
        parent = self._resolve_parent(parent_id)
        stored: list[Message] = []
        for message in messages:
            existing = self.provider.get_message(message["id"])
            if existing is None:
                self.provider.append_message(message, parent)
                existing = self.provider.get_message(message["id"]) or message
            stored.append(existing)
            parent = existing["id"]
        return stored

    def _resolve_parent(self, parent_id: str | AutoType | None) -> str | None:
        if parent_id is AUTO:
            head = self.provider.get_latest_leaf()
            return head["id"] if head else None
        if parent_id is not None and self.provider.get_message(parent_id) is None:
            raise MessageNotFoundError(f"parent message {parent_id!r} is not in this session")
        return parent_id

    def update_message(self, message: Message) -> Message:
        self.provider.update_message(message)
        return self.provider.get_message(message["id"]) or message

    def delete_messages(self, ids: Sequence[str]) -> int:
        present = [i for i in ids if self.provider.get_message(i) is not None]
        self.provider.delete_messages(present)
        return len(present)

    def clear_messages(self) -> None:
        self.provider.clear_messages()

    def get_message(self, message_id: str) -> Message | None:
        return self.provider.get_message(message_id)

    def get_head(self) -> Message | None:
        return self.provider.get_latest_leaf()

    def set_head(self, message_id: str) -> None:
        checkout = getattr(self.provider, "checkout", None)
        if checkout is None:
            raise ThreadlineError("this SessionProvider has no checkout(leaf_id) method")
        if self.provider.get_message(message_id) is None:
            raise MessageNotFoundError(f"message {message_id!r} is not in this session")
        checkout(message_id)

    def get_path(self, leaf_id: str | None = None) -> list[Message]:
        if leaf_id is not None and self.provider.get_message(leaf_id) is None:
            raise MessageNotFoundError(f"message {leaf_id!r} is not in this session")
        return list(self.provider.get_history(leaf_id))

    def get_path_encoded(
        self, leaf_id: str | None = None, *, attachments: str = "inline"
    ) -> list[tuple[str, str]]:
        return [(m["id"], encode_message(m)) for m in self.get_path(leaf_id)]

    def get_history_encoded(
        self, leaf_id: str | None = None, *, attachments: str = "inline"
    ) -> tuple[list[tuple[str, str]], list[Compaction]]:
        return self.get_path_encoded(leaf_id), self.get_compactions()

    def get_path_ids(self, leaf_id: str | None = None) -> list[str]:
        return [m["id"] for m in self.get_path(leaf_id)]

    def get_path_tail(
        self, count: int, leaf_id: str | None = None, *, attachments: str = "inline"
    ) -> list[tuple[str, str, int]]:
        # A custom provider has no way to read part of a path: slice the whole of it.
        rows = self.get_path_encoded(leaf_id)
        first = max(len(rows) - count, 0)
        return [(mid, data, first + k + 1) for k, (mid, data) in enumerate(rows[first:])]

    def get_history_tail_encoded(
        self, count: int, leaf_id: str | None = None, *, attachments: str = "inline"
    ) -> tuple[list[tuple[str, str, int]], list[Compaction]]:
        return self.get_path_tail(count, leaf_id), self.get_compactions()

    def get_recent_path(self, max_bytes: int, min_messages: int) -> RecentPath:
        path = self.get_path()
        sizes = [len(encode_message(m).encode("utf-8")) for m in path]
        total, start = 0, len(path)
        while start > 0:
            size = sizes[start - 1]
            if total + size > max_bytes and len(path) - start >= max(min_messages, 1):
                break
            total += size
            start -= 1
        return RecentPath(path[start:], start > 0, sum(sizes))

    def get_path_length(self, leaf_id: str | None = None) -> int:
        if leaf_id is not None and self.provider.get_message(leaf_id) is None:
            raise MessageNotFoundError(f"message {leaf_id!r} is not in this session")
        return int(self.provider.get_path_length(leaf_id))

    def get_children(self, message_id: str) -> list[Message]:
        return list(self.provider.get_branches(message_id))

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return list(self.provider.search_messages(query, limit))

    def add_compaction(self, summary: str, from_id: str, to_id: str) -> Compaction:
        try:
            path_ids = [m["id"] for m in self.get_path(to_id)]
        except MessageNotFoundError:
            path_ids = []
        if from_id not in path_ids:
            raise InvalidArgumentError(
                f"overlay range {from_id!r}..{to_id!r}: both ids must be in the session and "
                "the first an ancestor-or-self of the second"
            )
        result: Compaction = self.provider.add_compaction(summary, from_id, to_id)
        return result

    def get_compactions(self) -> list[Compaction]:
        return list(self.provider.get_compactions())

    def get_skill_loads(self) -> list[SkillLoad]:
        loads: list[SkillLoad] = []
        for message in self.get_path():
            for label, key, call_id in skill_loads_of(message):
                loads.append(SkillLoad(label, key, message["id"], call_id))
        return loads
