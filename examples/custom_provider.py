"""Bring your own message store: a Session over a custom ``SessionProvider``.

Any object with the provider's methods can hold a Session's messages (here: a dict). The tree,
branches, windows, search and summary overlays all work through it; what needs a threadline
Store (stored state, store-backed memory blocks, a cached prompt) is refused with a clear error.

Run:  python examples/custom_provider.py
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from threadline import Session
from threadline.messages import assistant, text_of, user
from threadline.types import Compaction, Message, SearchHit


class DictProvider:
    """A user's own message store: messages in a dict, parent links, the newest leaf."""

    def __init__(self) -> None:
        self.messages: dict[str, Message] = {}
        self.parents: dict[str, str | None] = {}
        self.order: list[str] = []
        self.compactions: list[Compaction] = []

    def get_message(self, message_id: str) -> Message | None:
        return self.messages.get(message_id)

    def get_history(self, leaf_id: str | None = None) -> list[Message]:
        node = leaf_id if leaf_id is not None else (self.order[-1] if self.order else None)
        path: list[Message] = []
        while node is not None:
            path.append(self.messages[node])
            node = self.parents[node]
        return path[::-1]

    def get_latest_leaf(self) -> Message | None:
        return self.messages[self.order[-1]] if self.order else None

    def get_branches(self, message_id: str) -> list[Message]:
        return [self.messages[m] for m in self.order if self.parents[m] == message_id]

    def get_path_length(self, leaf_id: str | None = None) -> int:
        return len(self.get_history(leaf_id))

    def append_message(self, message: Message, parent_id: str | None = None) -> object:
        self.messages[message["id"]] = message
        self.parents[message["id"]] = parent_id
        self.order.append(message["id"])
        return message

    def update_message(self, message: Message) -> object:
        self.messages[message["id"]] = message
        return message

    def delete_messages(self, message_ids: Sequence[str]) -> object:
        for message_id in message_ids:
            self.messages.pop(message_id, None)
            self.order.remove(message_id)
        return None

    def clear_messages(self) -> object:
        self.__init__()  # type: ignore[misc]
        return None

    def add_compaction(self, summary: str, from_message_id: str, to_message_id: str) -> Any:
        compaction = Compaction(
            f"c{len(self.compactions)}",
            summary,
            from_message_id,
            to_message_id,
            datetime.now(UTC),
        )
        self.compactions.append(compaction)
        return compaction

    def get_compactions(self) -> list[Compaction]:
        return list(self.compactions)

    def search_messages(self, query: str, limit: int) -> list[SearchHit]:
        hits = [m for m in self.messages.values() if query in text_of(m)]
        return [SearchHit(m["id"], m["role"], text_of(m), None, "s", 1.0) for m in hits][:limit]


def main() -> None:
    session = Session.create(DictProvider())
    session.append_message(user("Ship on Friday?", id="m1"))
    session.append_message(assistant("Yes, after the review.", id="m2"))
    session.append_message(assistant("Better on Monday.", id="m3"), parent_id="m1")  # a branch
    print("head path:", [text_of(m) for m in session.get_history()])
    print("branches of m1:", [m["id"] for m in session.get_branches("m1")])
    print("search 'review':", [hit.id for hit in session.search("review")])


if __name__ == "__main__":
    main()
