"""``Store.list_sessions_with_state``: the bulk listing (registry row, session state, head).

It must agree with ``list_sessions`` (same sessions, order, pages and cursors) and with the
per-session reads it replaces (``get_session``, session-scoped ``get_state``, ``get_head``),
on every backend.
"""

from __future__ import annotations

from typing import Any

import pytest

from threadline.errors import InvalidArgumentError
from threadline.store import Store
from threadline.types import SessionListing, SessionListingPage, SessionStatePage


def _walk(store: Store, limit: int, **filters: Any) -> tuple[list[SessionListing], list[int]]:
    seen: list[SessionListing] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page = store.list_sessions_with_state("app", limit=limit, cursor=cursor, **filters)
        assert isinstance(page, SessionListingPage)
        seen.extend(page.sessions)
        sizes.append(len(page.sessions))
        cursor = page.next_cursor
        if cursor is None:
            return seen, sizes
        assert len(sizes) < 100


def _populate(store: Store) -> None:
    for i in range(23):
        user = f"u{i % 3}"
        sid = f"s{i:02d}"
        if i % 4 == 0:
            store.touch_session("app", sid, user_id=user)  # no messages, no state
            continue
        message = {
            "id": f"m{i}",
            "role": "user",
            "parts": [{"type": "text", "text": f"hello {i}"}],
            "createdAt": f"2026-01-01T00:00:{i:02d}.000Z",
        }
        delta = {"n": i, "nested": {"list": [i, None, "x"]}, "user:lang": "nb", "app:v": 1}
        store.append_messages("app", sid, [message], user_id=user, state_delta=delta)
        if i % 5 == 0:
            store.update_state("app", sid, user, {"n": None, 'quote"key': "a'b"})
    store.touch_session("other", "s00")  # another app: never listed


def test_pages_match_list_sessions_and_the_per_session_reads(store: Store) -> None:
    _populate(store)
    for limit in (1, 7, 50):
        listed, sizes = _walk(store, limit)
        plain: list[Any] = []
        cursor = None
        while True:
            page = store.list_sessions("app", limit=limit, cursor=cursor)
            plain.extend(page.sessions)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert [entry.info for entry in listed] == plain
        assert sum(sizes) == 23 and all(size == limit for size in sizes[:-1])
    for entry in listed:
        assert entry.info == store.get_session("app", entry.id)
        assert entry.id == entry.info.id and entry.user_id == entry.info.user_id
        user = entry.user_id
        merged = store.get_state("app", entry.id, user)
        assert entry.state == {k: v for k, v in merged.items() if ":" not in k}
        head = store.get_head("app", entry.id)
        assert entry.head_id == (None if head is None else head["id"])
        assert entry.last_message_at == (None if head is None else head["createdAt"])


def test_state_values_and_odd_keys_decode_exactly(store: Store) -> None:
    _populate(store)
    by_id = {entry.id: entry for entry in _walk(store, 50)[0]}
    assert by_id["s01"].state == {"n": 1, "nested": {"list": [1, None, "x"]}}
    assert by_id["s05"].state == {"nested": {"list": [5, None, "x"]}, 'quote"key': "a'b"}
    assert by_id["s04"].state == {} and by_id["s04"].head_id is None


def test_user_filter_and_bad_arguments(store: Store) -> None:
    _populate(store)
    listed, _ = _walk(store, 4, user_id="u1")
    assert [e.id for e in listed] == [
        s.id for s in store.list_sessions("app", user_id="u1", limit=100).sessions
    ]
    assert {e.user_id for e in listed} == {"u1"} and len(listed) == 8
    assert store.list_sessions_with_state("app", user_id="nobody").sessions == []
    with pytest.raises(InvalidArgumentError):
        store.list_sessions_with_state("app", limit=0)
    with pytest.raises(InvalidArgumentError):
        store.list_sessions_with_state("app", cursor="not a cursor")


def test_listing_info_is_decoded_on_demand_and_compares_by_value(store: Store) -> None:
    store.create_session("app", "s1", user_id="u1", name="Trip", metadata={"k": [1]})
    (first,) = store.list_sessions_with_state("app").sessions
    (second,) = store.list_sessions_with_state("app").sessions
    assert first == second and first.info is first.info
    assert first.info.metadata == {"k": [1]} and first.to_dict()["info"]["name"] == "Trip"
    assert "s1" in repr(first)


# ------------------------------------------------------------------ list_session_states


def _walk_states(store: Store, limit: int, **filters: Any) -> tuple[list[Any], list[str | None]]:
    seen: list[Any] = []
    cursors: list[str | None] = []
    cursor = None
    while True:
        page = store.list_session_states("app", limit=limit, cursor=cursor, **filters)
        assert isinstance(page, SessionStatePage)
        seen.extend(page.sessions)
        cursors.append(page.next_cursor)
        cursor = page.next_cursor
        if cursor is None:
            return seen, cursors
        assert len(cursors) < 100


def test_session_states_agree_with_the_full_listing_page_by_page(store: Store) -> None:
    _populate(store)
    internal = "__threadline__:bench"
    store.append_messages(  # an internal key (an adapter's bookkeeping): apart from state
        "app", "s03", [{"id": "x3", "role": "user", "parts": []}], user_id="u0",
        state_delta={internal: [1, "a"], "n": 33},
    )  # fmt: skip
    for limit in (1, 7, 50):
        for filters in ({}, {"user_id": "u1"}):
            states, cursors = _walk_states(store, limit, **filters)
            listed, _ = _walk(store, limit, **filters)
            assert states == [(e.id, e.user_id, e.head_id, e.state, e.internal) for e in listed]
            plain = store.list_sessions("app", limit=limit, **filters)
            first = store.list_session_states("app", limit=limit, **filters)
            assert first.next_cursor == plain.next_cursor == cursors[0]
            if cursors[0] is not None:  # list_sessions' own cursors
                after = store.list_sessions("app", limit=limit, cursor=cursors[0], **filters)
                assert [s.id for s in after.sessions] == [r[0] for r in states[limit : 2 * limit]]
    by_id = {row[0]: row for row in _walk_states(store, 50)[0]}
    assert by_id["s03"] == ("s03", "u0", "x3", {"n": 33, "nested": {"list": [3, None, "x"]}},
                            {internal: [1, "a"]})  # fmt: skip
    assert by_id["s04"] == ("s04", "u1", None, {}, {})
    assert by_id["s05"][3] == {"nested": {"list": [5, None, "x"]}, 'quote"key': "a'b"}
    assert len(by_id) == 23


def test_session_states_user_filter_and_bad_arguments(store: Store) -> None:
    _populate(store)
    states, _ = _walk_states(store, 3, user_id="u2")
    assert [row[0] for row in states] == [
        s.id for s in store.list_sessions("app", user_id="u2", limit=100).sessions
    ]
    assert {row[1] for row in states} == {"u2"}
    assert store.list_session_states("app", user_id="nobody").sessions == []
    assert store.list_session_states("nowhere").sessions == []
    with pytest.raises(InvalidArgumentError):
        store.list_session_states("app", limit=0)
    with pytest.raises(InvalidArgumentError):
        store.list_session_states("app", cursor="not a cursor")
