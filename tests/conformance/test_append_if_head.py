"""Conditional appends: ``Store.append_messages(..., if_head=...)`` writes only when the
session exists and its head is the expected one, checked in the append's own transaction.
Runs on a SQLite file, SQLite in memory and PostgreSQL."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from threadline.errors import (
    HeadMovedError,
    InvalidArgumentError,
    SessionNotFoundError,
    ThreadlineError,
)
from threadline.store import Store

APP = "app"


def msg(message_id: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": message_id}]}


def test_appends_when_the_head_is_the_expected_one(store: Store) -> None:
    store.create_session(APP, "s1")
    first = msg("m1")
    assert store.append_messages(APP, "s1", [first], if_head=None)[0] is first
    store.append_messages(APP, "s1", [msg("m2")], if_head="m1", state_delta={"k": 2})
    assert store.get_path_ids(APP, "s1") == ["m1", "m2"]
    assert store.get_state(APP, "s1", None) == {"k": 2}


def test_a_moved_head_writes_nothing(store: Store) -> None:
    store.append_messages(APP, "s1", [msg("m1"), msg("m2")])
    with pytest.raises(HeadMovedError, match="'m2', not 'm1'"):
        store.append_messages(APP, "s1", [msg("m3")], if_head="m1", state_delta={"k": 1})
    with pytest.raises(HeadMovedError):
        store.append_messages(APP, "s1", [msg("m3")], if_head=None)
    assert store.get_path_ids(APP, "s1") == ["m1", "m2"]
    assert store.get_state(APP, "s1", None) == {}
    assert store.get_session(APP, "s1").message_count == 2  # type: ignore[union-attr]


def test_a_missing_session_is_not_created(store: Store) -> None:
    with pytest.raises(SessionNotFoundError):
        store.append_messages(APP, "gone", [msg("m1")], if_head=None, user_id="u1")
    assert store.get_session(APP, "gone") is None
    store.create_session(APP, "gone")
    store.delete_session(APP, "gone")
    with pytest.raises(SessionNotFoundError):
        store.append_messages(APP, "gone", [msg("m1")], if_head=None)
    assert store.get_session(APP, "gone") is None


def test_an_id_already_stored_comes_back_instead_of_being_written(store: Store) -> None:
    store.append_messages(APP, "s1", [msg("m1")])
    again = {**msg("m1"), "parts": []}
    (returned,) = store.append_messages(APP, "s1", [again], if_head="m1", state_delta={"k": 1})
    assert returned is not again and returned["parts"] == msg("m1")["parts"]
    assert store.get_state(APP, "s1", None) == {}  # not applied: nothing was written


def test_if_head_must_be_an_id_or_none(store: Store) -> None:
    with pytest.raises(InvalidArgumentError):
        store.append_messages(APP, "s1", [msg("m1")], if_head=3)


def _race(store: Store, names: list[str], head: str) -> list[str]:
    """Append ``names`` from one thread each, all released at once, all expecting ``head``."""
    outcomes: list[str] = []
    start = threading.Barrier(len(names))

    def write(name: str) -> None:
        start.wait()
        try:
            store.append_messages(APP, "s1", [msg(name)], if_head=head)
            outcomes.append("ok")
        except ThreadlineError as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=write, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(outcomes)


def test_of_two_writers_expecting_one_head_exactly_one_appends(store: Store) -> None:
    store.append_messages(APP, "s1", [msg("m0")])
    for round_ in range(10):
        head = store.get_head(APP, "s1")["id"]  # type: ignore[index]
        assert _race(store, [f"r{round_}a", f"r{round_}b"], head) == ["HeadMovedError", "ok"]
    assert len(store.get_path_ids(APP, "s1")) == 11
