"""``store.session(app, session_id)``: every per-session store method with the ids bound."""

from __future__ import annotations

from typing import Any

import pytest

from threadline.errors import InvalidArgumentError, SessionNotFoundError
from threadline.messages import normalize_message


def _msgs(*texts: str) -> list[Any]:
    return [normalize_message({"role": "user", "content": t}) for t in texts]


def test_the_handle_reads_and_writes_the_same_rows_as_the_store(store: Any) -> None:
    handle = store.session("app", "s1", user_id="u1")
    first, second = handle.append_messages(_msgs("hello tree", "second"))
    assert store.get_path("app", "s1") == handle.get_path()
    assert handle.get_head()["id"] == second["id"]
    handle.set_head(first["id"])
    assert store.get_head("app", "s1")["id"] == first["id"]
    assert [m["id"] for m in handle.get_children(first["id"])] == [second["id"]]
    assert handle.get_path_length(second["id"]) == 2
    assert [h.id for h in handle.search("tree")] == [first["id"]]
    assert store.get_session("app", "s1").user_id == "u1"
    assert handle.info() == store.get_session("app", "s1")


def test_a_handle_only_touches_its_own_session(store: Any) -> None:
    store.session("app", "a").append_messages(_msgs("in a"))
    b = store.session("app", "b")
    assert b.get_path() == []
    assert b.search("in") == []
    assert store.session("other", "a").get_path() == []


def test_state_through_the_handle_uses_its_user(store: Any) -> None:
    handle = store.session("app", "s1", user_id="u1")
    handle.update_state({"user:lang": "fr", "k": 1})
    assert store.get_state("app", "s1", "u1") == {"user:lang": "fr", "k": 1}
    assert store.session("app", "s2", user_id="u1").get_state() == {"user:lang": "fr"}


def test_the_handle_keeps_the_owner_rules(store: Any) -> None:
    store.session("app", "s1", user_id="u1").append_messages(_msgs("mine"))
    with pytest.raises(SessionNotFoundError):
        store.session("app", "s1", user_id="u2").append_messages(_msgs("not yours"))


@pytest.mark.parametrize("bad", ["", "x" * 10_000, "a\ud800"])
def test_a_bad_session_id_fails_when_the_handle_is_made(store: Any, bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        store.session("app", bad)
