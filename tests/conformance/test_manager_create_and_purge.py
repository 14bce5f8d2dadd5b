"""SessionManager: create validates before writing, bad settings fail early, purge spares others."""

from __future__ import annotations

from typing import Any

import pytest

import threadline
from threadline import SessionManager
from threadline.messages import user


def test_purge_keeps_temp_state_of_sessions_it_did_not_delete(
    clocked_store: Any, clock: Any
) -> None:
    manager = SessionManager(clocked_store, app_name="review-purge")
    manager.create(session_id="old")
    manager.append("old", user("bye", id="o1"))
    manager.update_state("old", {"temp:draft": "gone", "topic": "old"})
    cutoff = clock.advance(seconds=1)
    clock.advance(seconds=1)
    manager.create(session_id="live")
    manager.update_state("live", {"temp:draft": "x", "topic": "tea"})

    assert manager.purge(older_than=cutoff) == 1

    # temp: keys live in the session object until it is discarded: purging another session
    # must not discard it.
    assert manager.get_state("live") == {"temp:draft": "x", "topic": "tea"}
    # The purged session's object is discarded: nothing of it survives, temp: included.
    assert manager.get_state("old") == {}
    assert manager.get_history("old") == []


@pytest.mark.parametrize("threshold", [0, -5, 1.5, True])
def test_manager_compact_after_rejects_a_bad_threshold_at_once(store: Any, threshold: Any) -> None:
    manager = SessionManager(store, app_name="review-threshold")
    with pytest.raises(ValueError, match="compact_after"):
        manager.compact_after(threshold)
    # Before the fix the bad value was kept and every later append failed instead.
    manager.append("s1", user("hi", id="m1"))


def test_state_error_on_create_leaves_no_session_and_is_not_swallowed(store: Any) -> None:
    manager = SessionManager(store, app_name="review-create")
    with pytest.raises(ValueError, match="user:name"):
        manager.create(session_id="a", state={"user:name": "Ada"})  # no user_id
    assert manager.get("a") is None
    with pytest.raises(ValueError, match="user:name"):
        manager.get_or_create("b", state={"user:name": "Ada"})
    assert manager.get("b") is None
    assert manager.get_or_create("c", user_id="u1", state={"user:name": "Ada"}).id == "c"
    assert manager.get_state("c") == {"user:name": "Ada"}


def test_create_rejects_non_mapping_metadata(store: threadline.Store) -> None:
    # Regression: a list used to escape as a bare TypeError from dict(...) in the store.
    manager = threadline.SessionManager(store, app_name="meta")
    with pytest.raises(threadline.InvalidArgumentError):
        manager.create("x", metadata=["not", "a", "mapping"])  # type: ignore[arg-type]
    assert manager.list().sessions == []
