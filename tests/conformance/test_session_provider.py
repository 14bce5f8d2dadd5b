"""A custom ``SessionProvider`` (the extension point for an existing message store) behind a
``Session``: the message tree works through it, and what needs a threadline Store (stored
state, auto-wired blocks) is refused the same way for reads and writes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from threadline import Session, ThreadlineError
from threadline._provider import SessionProvider
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
        created = datetime.now(UTC)
        compaction = Compaction(f"c{len(self.compactions)}", summary, from_message_id,
                                to_message_id, created)  # fmt: skip
        self.compactions.append(compaction)
        return compaction

    def get_compactions(self) -> list[Compaction]:
        return list(self.compactions)

    def search_messages(self, query: str, limit: int) -> list[SearchHit]:
        hits = [m for m in self.messages.values() if query in text_of(m)]
        return [SearchHit(m["id"], m["role"], text_of(m), None, "s", 1.0) for m in hits][:limit]


def test_the_provider_satisfies_the_protocol() -> None:
    assert isinstance(DictProvider(), SessionProvider)


def test_the_message_tree_works_through_a_provider() -> None:
    provider = DictProvider()
    session = Session.create(provider)
    session.append_message(user("hello", id="m1"))
    session.append_message(assistant("hi there", id="m2"))
    session.append_message(assistant("hey", id="m3"), parent_id="m1")  # a branch
    assert [m["id"] for m in session.get_history()] == ["m1", "m3"]
    assert [m["id"] for m in session.get_history("m2")] == ["m1", "m2"]
    assert [m["id"] for m in session.get_branches("m1")] == ["m2", "m3"]
    assert [m["id"] for m in session.get_history(limit=1)] == ["m3"]
    assert session.get_path_length() == 2
    assert [h.id for h in session.search("there")] == ["m2"]
    session.add_compaction("greetings", "m1", "m3")
    assert [text_of(m) for m in session.get_history()] == ["greetings"]
    assert session.delete_messages(["m2", "nope"]) == 1


def test_stored_state_needs_a_store_for_reads_and_writes_alike() -> None:
    session = Session.create(DictProvider())
    session.update_state({"temp:step": 1})  # temp: keys live in the object: they work
    assert session.get_state("temp:step") == 1
    assert dict(session.state) == {"temp:step": 1}
    with pytest.raises(ThreadlineError, match="Store"):
        session.update_state({"topic": "tea"})
    with pytest.raises(ThreadlineError, match="Store"):
        session.get_state("topic")  # returned None before, while the write raised


def test_blocks_without_a_provider_need_a_store() -> None:
    session = Session.create(DictProvider()).with_context("soul", provider="Be brief.")
    assert "Be brief." in session.freeze_system_prompt()
    with pytest.raises(ThreadlineError):
        Session.create(DictProvider()).with_context("memory").get_context_blocks()
