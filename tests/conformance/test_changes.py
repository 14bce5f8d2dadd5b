"""The change log (clarification 29): edits, deletes and session block writes are logged in
the write's own transaction under the session's new ``updated_at``, read with
``Store.get_changes``; appends are not logged; old rows are pruned and a session's rows go
with it (delete, purge, forget_user)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from threadline.errors import MessageNotFoundError
from threadline.store import Store
from threadline.store._sql import changes as _sql_changes

APP = "c"


def _msg(mid: str, text: str = "hi") -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


def _stamp(store: Store, session_id: str) -> int:
    info = store.get_session(APP, session_id)
    assert info is not None
    return int(info.updated_at.timestamp() * 1_000_000)


def test_each_write_logs_its_change_under_the_sessions_new_stamp(store: Store) -> None:
    store.append_messages(APP, "s1", [_msg("m1"), _msg("m2"), _msg("m3")])
    assert store.get_changes(APP, "s1") == []  # appends: seq tells them
    store.update_message(APP, "s1", _msg("m1", "edited"))
    assert store.get_changes(APP, "s1")[-1].stamp == _stamp(store, "s1")
    store.set_block(APP, "session", "s1", "notes", "n")
    store.set_block(APP, "user", "u1", "notes", "not a session's")
    store.delete_messages(APP, "s1", ["m2", "missing"])
    store.clear_messages(APP, "s1")
    changes = store.get_changes(APP, "s1")
    assert [(c.kind, c.payload) for c in changes] == [
        ("message_updated", {"id": "m1"}),
        ("block", {"label": "notes"}),
        ("messages_deleted", {"ids": ["m2"]}),
        ("messages_deleted", {"all": True}),
    ]
    stamps = [c.stamp for c in changes]
    assert stamps == sorted(set(stamps)) and stamps[-1] == _stamp(store, "s1")
    assert [c.kind for c in store.get_changes(APP, "s1", stamps[1])] == ["messages_deleted"] * 2
    assert store.get_changes(APP, "s2") == []


def test_a_failed_write_logs_nothing(store: Store) -> None:
    store.append_messages(APP, "s1", [_msg("m1")])
    with pytest.raises(MessageNotFoundError):
        store.update_message(APP, "s1", _msg("nope"))
    with pytest.raises(RuntimeError):

        def both() -> None:
            store.update_message(APP, "s1", _msg("m1", "rolled back"))
            raise RuntimeError("undo")

        store.transaction(both)
    assert store.get_changes(APP, "s1") == []


def test_old_changes_are_pruned_by_the_next_logged_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.append_messages(APP, "s1", [_msg("m1")])
    store.update_message(APP, "s1", _msg("m1", "a"))
    store.update_message(APP, "s1", _msg("m1", "b"))
    monkeypatch.setattr(_sql_changes, "RETENTION_US", 0)
    store.update_message(APP, "s1", _msg("m1", "c"))
    assert [c.stamp for c in store.get_changes(APP, "s1")] == [_stamp(store, "s1")]


def test_a_sessions_changes_go_with_it(store: Store) -> None:
    for sid, user in (("s1", None), ("s2", "u1"), ("s3", None)):
        store.create_session(APP, sid, user_id=user)
        store.append_messages(APP, sid, [_msg("m1")])
        store.update_message(APP, sid, _msg("m1", "x"))
    assert store.delete_session(APP, "s1")
    assert store.forget_user(APP, "u1") == 1
    assert store.purge_sessions(APP, before=store.now() + timedelta(seconds=1)) == 1
    for sid in ("s1", "s2", "s3"):
        store.append_messages(APP, sid, [_msg("m1")])  # created again: starts with no log
        assert store.get_changes(APP, sid) == []


def test_a_deleted_session_leaves_a_gone_row_for_the_session_list(store: Store) -> None:
    first = store.create_session(APP, "s1", user_id="u1")
    store.append_messages(APP, "s1", [_msg("m1")])
    store.create_session(APP, "s2")
    before = int(store.now().timestamp() * 1_000_000) - 1
    assert store.delete_session(APP, "s1")
    assert store.forget_user(APP, "nobody") == 0
    assert not store.delete_session(APP, "never")  # nothing existed: nothing logged
    assert store.purge_sessions(APP, before=store.now() + timedelta(seconds=1)) == 1
    gone = store.get_session_deletions(APP, before)
    assert [c.payload["session_id"] for c in gone] == ["s1", "s2"]
    assert gone[0].payload == {"session_id": "s1", "generation": first.generation, "user_id": "u1"}
    assert gone[1].payload["user_id"] is None
    assert store.get_session_deletions(APP, gone[0].stamp) == gone[1:]
    assert store.get_session_deletions("other") == []
    again = store.create_session(APP, "s1")
    assert store.get_changes(APP, "s1") == []  # the old generation's gone row is not its log
    assert again.generation != first.generation
