"""Conformance: the message tree.

Every test runs against each backend through the ``store`` fixture (tests/conftest.py) and uses
the public ``Session`` API only.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import threadline
from threadline import Session
from threadline.errors import InvalidMessageError, MessageNotFoundError


def msg(mid: str, text: str | None = None, role: str = "user", **extra: Any) -> dict[str, Any]:
    """A valid message with one text part."""
    part = {"type": "text", "text": text or f"text {mid}"}
    return {"id": mid, "role": role, "parts": [part], **extra}


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def head_id(session: Session) -> str | None:
    leaf = session.get_latest_leaf()
    return None if leaf is None else leaf["id"]


@pytest.fixture
def session(store: Any) -> Session:
    return Session.create(store).for_session("s1")


def chain(session: Session, *mids: str) -> None:
    for mid in mids:
        session.append_message(msg(mid))


# --------------------------------------------------------------------------- append_message


def test_append_auto_parent_is_the_head(session: Session) -> None:
    first = session.append_message(msg("m1"))
    session.append_message(msg("m2"))
    session.append_message(msg("m3"), threadline.AUTO)
    assert first["id"] == "m1"
    assert ids(session.get_history()) == ["m1", "m2", "m3"]
    assert head_id(session) == "m3"
    assert ids(session.get_branches("m1")) == ["m2"]
    assert ids(session.get_branches("m2")) == ["m3"]


def test_append_returns_the_stored_message(session: Session) -> None:
    returned = session.append_message(msg("m1", "hello"))
    assert returned == session.get_message("m1")
    assert returned["parts"] == [{"type": "text", "text": "hello"}]
    assert returned["role"] == "user"


def test_append_with_none_parent_starts_a_new_root(session: Session) -> None:
    chain(session, "m1", "m2")
    session.append_message(msg("r2"), None)
    assert head_id(session) == "r2"
    assert ids(session.get_history()) == ["r2"]
    assert session.get_path_length() == 1
    # the old tree is untouched
    assert ids(session.get_history("m2")) == ["m1", "m2"]
    assert session.get_branches("m2") == []


def test_first_append_into_empty_session_is_a_root(session: Session) -> None:
    assert session.get_latest_leaf() is None
    session.append_message(msg("m1"))
    assert ids(session.get_history()) == ["m1"]


def test_append_with_explicit_parent_branches_and_moves_head(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    session.append_message(msg("b2"), "m1")
    assert head_id(session) == "b2"
    assert ids(session.get_history()) == ["m1", "b2"]
    assert ids(session.get_history("m3")) == ["m1", "m2", "m3"]
    # the next AUTO append continues the branch, not the old leaf
    session.append_message(msg("b3"))
    assert ids(session.get_history()) == ["m1", "b2", "b3"]


def test_append_with_unknown_parent_raises_and_stores_nothing(session: Session) -> None:
    chain(session, "m1")
    with pytest.raises(MessageNotFoundError) as info:
        session.append_message(msg("m2"), "nope")
    assert isinstance(info.value, KeyError)
    assert session.get_message("m2") is None
    assert head_id(session) == "m1"
    assert session.get_branches("m1") == []


def test_parent_from_another_session_is_unknown(store: Any) -> None:
    a = Session.create(store).for_session("a")
    b = Session.create(store).for_session("b")
    a.append_message(msg("only-in-a"))
    with pytest.raises(MessageNotFoundError):
        b.append_message(msg("x"), "only-in-a")
    assert b.get_message("x") is None
    assert b.get_latest_leaf() is None


def test_reappend_existing_id_is_a_noop_first_write_wins(session: Session) -> None:
    original = session.append_message(msg("m1", "first version"))
    session.append_message(msg("m2"))
    again = session.append_message(msg("m1", "second version", role="assistant"))
    assert again == original
    assert session.get_message("m1") == original
    assert head_id(session) == "m2"  # head not moved
    assert session.get_path_length() == 2
    assert [h.id for h in session.search("second")] == []


def test_reappend_ignores_parent_id(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    session.append_message(msg("m1"), "m3")  # would create a cycle if honoured
    session.append_message(msg("m3"), None)
    assert ids(session.get_history()) == ["m1", "m2", "m3"]
    assert ids(session.get_history("m1")) == ["m1"]
    assert head_id(session) == "m3"
    assert ids(session.get_branches("m3")) == []


def test_reappend_after_checkout_does_not_move_head(session: Session) -> None:
    chain(session, "m1", "m2")
    session.checkout("m1")
    session.append_message(msg("m2"))
    assert head_id(session) == "m1"


# --------------------------------------------------------------------------- append_messages


def test_append_messages_chains_and_returns_normalised(session: Session) -> None:
    out = session.append_messages(
        [msg("a1"), {"id": "a2", "role": "assistant", "content": "hi"}, msg("a3")]
    )
    assert ids(out) == ["a1", "a2", "a3"]
    assert out[1]["parts"] == [{"type": "text", "text": "hi"}]
    assert "content" not in out[1]
    assert all(isinstance(m.get("createdAt"), str) for m in out)
    assert out == session.get_history()
    assert head_id(session) == "a3"


def test_append_messages_attaches_to_head_by_default(session: Session) -> None:
    chain(session, "m1", "m2")
    session.append_messages([msg("a1"), msg("a2")])
    assert ids(session.get_history()) == ["m1", "m2", "a1", "a2"]


def test_append_messages_with_explicit_and_none_parent(session: Session) -> None:
    chain(session, "m1", "m2")
    session.append_messages([msg("b1"), msg("b2")], "m1")
    assert ids(session.get_history()) == ["m1", "b1", "b2"]
    session.append_messages([msg("r1"), msg("r2")], None)
    assert ids(session.get_history()) == ["r1", "r2"]
    assert ids(session.get_branches("m1")) == ["m2", "b1"]


def test_append_messages_unknown_parent_stores_nothing(session: Session) -> None:
    chain(session, "m1")
    with pytest.raises(MessageNotFoundError):
        session.append_messages([msg("x1"), msg("x2")], "missing")
    assert session.get_message("x1") is None
    assert session.get_message("x2") is None
    assert head_id(session) == "m1"


def test_existing_message_inside_batch_still_parents_the_next(session: Session) -> None:
    chain(session, "m1", "m2")
    out = session.append_messages([msg("x1"), msg("m1", "ignored text"), msg("x2")])
    assert ids(out) == ["x1", "m1", "x2"]
    assert out[1] == session.get_message("m1")
    assert out[1]["parts"][0]["text"] == "text m1"
    assert ids(session.get_history("x1")) == ["m1", "m2", "x1"]
    assert ids(session.get_history("x2")) == ["m1", "x2"]
    assert session.get_path_length("x2") == 2
    assert session.get_path_length("x1") == 3
    assert head_id(session) == "x2"
    assert ids(session.get_recent_history(10**6).messages) == ["m1", "x2"]
    assert ids(session.get_branches("m1")) == ["m2", "x2"]


def test_batch_ending_with_existing_message_leaves_head_on_last_new_one(session: Session) -> None:
    chain(session, "m1")
    session.append_messages([msg("y1"), msg("m1")])
    assert head_id(session) == "y1"
    assert ids(session.get_history()) == ["m1", "y1"]


def test_batch_of_only_existing_messages_does_not_move_head(session: Session) -> None:
    chain(session, "m1", "m2")
    session.checkout("m1")
    out = session.append_messages([msg("m1"), msg("m2")])
    assert ids(out) == ["m1", "m2"]
    assert head_id(session) == "m1"


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "x3", "parts": [{"type": "text", "text": "no role"}]},
        {"id": "compaction_x3", "role": "user", "content": "overlay id"},
        {"id": "x3", "role": "user", "parts": "not a list"},
        "not a dict",
    ],
    ids=["no-role", "overlay-id", "parts-not-list", "not-dict"],
)
def test_append_messages_is_one_transaction(session: Session, bad: Any) -> None:
    chain(session, "m1")
    with pytest.raises(InvalidMessageError):
        session.append_messages([msg("x1"), msg("x2"), bad])
    assert session.get_message("x1") is None
    assert session.get_message("x2") is None
    assert head_id(session) == "m1"
    assert session.get_path_length() == 1
    assert session.search("x1") == []


# --------------------------------------------------------------------------- update_message


def test_update_replaces_role_parts_metadata_and_keeps_the_rest(session: Session) -> None:
    session.append_message(msg("m0"))
    old = session.append_message(msg("m1", "old words", metadata={"k": 1, "j": [1]}))
    session.append_message(msg("m2"))
    session.append_message(msg("b1"), "m0")  # sibling of m1, newer seq
    new = session.update_message(
        {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "new words"}],
         "metadata": {"z": True}}
    )
    assert new["id"] == "m1"
    assert new["role"] == "assistant"
    assert new["parts"] == [{"type": "text", "text": "new words"}]
    assert new["metadata"] == {"z": True}
    assert new["createdAt"] == old["createdAt"]  # omitted createdAt is kept
    assert session.get_message("m1") == new
    # parent, children and seq order unchanged; head not moved
    assert ids(session.get_history("m2")) == ["m0", "m1", "m2"]
    assert ids(session.get_branches("m0")) == ["m1", "b1"]
    assert head_id(session) == "b1"


def test_update_without_metadata_removes_it(session: Session) -> None:
    session.append_message(msg("m1", metadata={"keep": "no"}))
    new = session.update_message({"id": "m1", "role": "user", "content": "plain"})
    assert "metadata" not in new
    assert "metadata" not in session.get_message("m1")
    assert new["parts"] == [{"type": "text", "text": "plain"}]
    assert "content" not in new


def test_update_with_created_at_replaces_it(session: Session) -> None:
    session.append_message(msg("m1"))
    new = session.update_message(
        {"id": "m1", "role": "user", "content": "x", "createdAt": "2020-02-03T04:05:06+02:00"}
    )
    assert new["createdAt"] == "2020-02-03T02:05:06.000Z"
    assert session.get_message("m1")["createdAt"] == "2020-02-03T02:05:06.000Z"


def test_update_keeps_search_index_in_step(session: Session) -> None:
    session.append_message(msg("m1", "pineapple pizza"))
    session.update_message({"id": "m1", "role": "user", "content": "mushroom risotto"})
    assert session.search("pineapple") == []
    hits = session.search("risotto")
    assert [h.id for h in hits] == ["m1"]
    assert hits[0].content == "mushroom risotto"


def test_update_unknown_id_raises_and_stores_nothing(session: Session) -> None:
    chain(session, "m1")
    with pytest.raises(MessageNotFoundError):
        session.update_message(msg("ghost", "boo"))
    assert session.get_message("ghost") is None
    assert session.get_path_length() == 1
    assert session.search("boo") == []


def test_update_does_not_mutate_callers_dict(session: Session) -> None:
    chain(session, "m1")
    update = {"id": "m1", "role": "user", "content": "new"}
    before = copy.deepcopy(update)
    session.update_message(update)
    assert update == before


# --------------------------------------------------------------------------- delete_messages


def test_delete_returns_count_and_ignores_unknown(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    assert session.delete_messages(["m3", "nope"]) == 1
    assert session.delete_messages([]) == 0
    assert session.delete_messages(["m3"]) == 0
    assert session.get_message("m3") is None


def test_deleting_head_moves_head_to_remaining_leaf_with_highest_seq(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    session.append_message(msg("b1"), "m1")
    session.append_message(msg("c1"), "m1")
    session.checkout("m3")
    # leaves now: m3 (head), b1, c1 (newest)
    assert session.delete_messages(["m3"]) == 1
    assert head_id(session) == "c1"
    assert ids(session.get_history()) == ["m1", "c1"]


def test_deleting_head_prefers_newest_leaf_over_its_parent(session: Session) -> None:
    chain(session, "m1", "m2")
    session.append_message(msg("b1"), "m1")
    session.append_message(msg("b2"))
    session.checkout("m2")
    session.delete_messages(["m2"])
    # remaining leaves: m1 (seq 1) and b2 (seq 4)
    assert head_id(session) == "b2"


def test_deleting_a_middle_message_does_not_reparent_children(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    assert session.delete_messages(["m1"]) == 1
    assert ids(session.get_history("m2")) == ["m2"]
    assert ids(session.get_history()) == ["m2", "m3"]
    assert head_id(session) == "m3"
    assert session.get_path_length() == 2


def test_deleting_several_messages_of_one_path(session: Session) -> None:
    chain(session, "m1", "m2", "m3", "m4", "m5", "m6")
    assert session.delete_messages(["m4", "m2"]) == 2
    assert ids(session.get_history()) == ["m5", "m6"]
    assert ids(session.get_history("m3")) == ["m3"]
    assert session.get_path_length() == 2
    assert session.get_path_length("m3") == 1
    assert ids(session.get_branches("m1")) == []
    assert ids(session.get_branches("m3")) == []
    session.append_message(msg("m7"))
    assert ids(session.get_history()) == ["m5", "m6", "m7"]
    assert session.get_path_length() == 3


def test_deleting_everything_empties_head(session: Session) -> None:
    chain(session, "m1", "m2")
    assert session.delete_messages(["m1", "m2"]) == 2
    assert session.get_latest_leaf() is None
    assert session.get_history() == []
    assert session.get_path_length() == 0
    session.append_message(msg("n1"))
    assert ids(session.get_history()) == ["n1"]


def test_deleted_messages_leave_search(session: Session) -> None:
    session.append_message(msg("m1", "ephemeral gizmo"))
    session.append_message(msg("m2", "durable gizmo"))
    session.delete_messages(["m1"])
    assert [h.id for h in session.search("gizmo")] == ["m2"]
    assert session.search("ephemeral") == []


def test_delete_only_touches_this_session(store: Any) -> None:
    a = Session.create(store).for_session("a")
    b = Session.create(store).for_session("b")
    a.append_message(msg("m1", "in a"))
    b.append_message(msg("m1", "in b"))
    assert a.delete_messages(["m1"]) == 1
    assert b.get_message("m1")["parts"][0]["text"] == "in b"
    assert ids(b.get_history()) == ["m1"]


# --------------------------------------------------------------------------- clear_messages


def test_clear_messages_removes_everything_of_the_session(store: Any) -> None:
    s = Session.create(store).for_session("s1")
    other = Session.create(store).for_session("s2")
    s.append_message(msg("m1", "xylophone"))
    s.append_message(msg("m2"))
    s.add_compaction("summary", "m1", "m2")
    other.append_message(msg("m1", "xylophone too"))
    s.clear_messages()
    assert s.get_history() == []
    assert s.get_latest_leaf() is None
    assert s.get_message("m1") is None
    assert s.get_path_length() == 0
    assert s.search("xylophone") == []
    assert s.get_compactions() == []
    # the other session is untouched
    assert [h.id for h in other.search("xylophone")] == ["m1"]
    # ids can be reused afterwards
    s.append_message(msg("m1", "again"))
    assert ids(s.get_history()) == ["m1"]
    assert s.get_message("m1")["parts"][0]["text"] == "again"


# --------------------------------------------------------------------------- reads and navigation


def test_get_message_unknown_is_none(session: Session) -> None:
    assert session.get_message("nope") is None
    chain(session, "m1")
    assert session.get_message("nope") is None


def test_get_latest_leaf_is_the_head(session: Session) -> None:
    assert session.get_latest_leaf() is None
    chain(session, "m1", "m2")
    assert session.get_latest_leaf() == session.get_message("m2")


def test_checkout_moves_head_and_next_append_follows(session: Session) -> None:
    chain(session, "m1", "m2", "m3")
    session.checkout("m1")
    assert head_id(session) == "m1"
    assert ids(session.get_history()) == ["m1"]
    session.append_message(msg("b2"))
    assert ids(session.get_history()) == ["m1", "b2"]
    session.checkout("m3")  # back to the old branch
    assert ids(session.get_history()) == ["m1", "m2", "m3"]


def test_checkout_unknown_raises_and_keeps_head(store: Any) -> None:
    s = Session.create(store).for_session("s1")
    other = Session.create(store).for_session("s2")
    other.append_message(msg("foreign"))
    chain(s, "m1")
    for bad in ("nope", "foreign"):
        with pytest.raises(MessageNotFoundError):
            s.checkout(bad)
    assert head_id(s) == "m1"


def test_head_is_persisted_across_session_objects(store: Any) -> None:
    s = Session.create(store).for_session("s1")
    chain(s, "m1", "m2")
    s.checkout("m1")
    again = Session.create(store).for_session("s1")
    assert head_id(again) == "m1"
    again.append_message(msg("b2"))
    assert ids(s.get_history()) == ["m1", "b2"]


def test_get_path_length(session: Session) -> None:
    assert session.get_path_length() == 0
    chain(session, "m1", "m2", "m3")
    session.append_message(msg("b2"), "m1")
    assert session.get_path_length() == 2
    assert session.get_path_length("m3") == 3
    assert session.get_path_length("m1") == 1
    session.add_compaction("sum", "m1", "m2")
    assert session.get_path_length("m3") == 3  # overlays not applied
    with pytest.raises(MessageNotFoundError):
        session.get_path_length("nope")


def test_get_branches_oldest_first_by_seq_not_time(session: Session) -> None:
    session.append_message(msg("root"))
    session.append_message(msg("c1", createdAt="2030-01-01T00:00:00.000Z"), "root")
    session.append_message(msg("c2", createdAt="2020-01-01T00:00:00.000Z"), "root")
    session.append_message(msg("c3", createdAt="2025-01-01T00:00:00.000Z"), "root")
    branches = session.get_branches("root")
    assert ids(branches) == ["c1", "c2", "c3"]
    assert branches[0] == session.get_message("c1")
    assert session.get_branches("c1") == []


# --------------------------------------------------------------------------- sessions


def test_same_message_id_in_two_sessions(store: Any) -> None:
    a = Session.create(store).for_session("a")
    b = Session.create(store).for_session("b")
    a.append_message(msg("m1", "alpha text"))
    b.append_message(msg("m1", "beta text"))
    a.append_message(msg("m2"))
    assert a.get_message("m1")["parts"][0]["text"] == "alpha text"
    assert b.get_message("m1")["parts"][0]["text"] == "beta text"
    assert ids(a.get_history()) == ["m1", "m2"]
    assert ids(b.get_history()) == ["m1"]
    b.update_message(msg("m1", "beta changed"))
    assert a.get_message("m1")["parts"][0]["text"] == "alpha text"


def test_sessions_are_isolated(store: Any) -> None:
    a = Session.create(store).for_session("a")
    b = Session.create(store).for_session("b")
    chain(a, "a1", "a2")
    a.append_message(msg("a3", "walrus"))
    assert b.get_history() == []
    assert b.get_latest_leaf() is None
    assert b.get_message("a1") is None
    assert b.get_path_length() == 0
    assert b.search("walrus") == []
    assert b.get_compactions() == []
    with pytest.raises(MessageNotFoundError):
        b.get_history("a1")
    b.append_message(msg("b1"))
    assert ids(b.get_history()) == ["b1"]  # b's head is not a's
    assert ids(a.get_history()) == ["a1", "a2", "a3"]


def test_default_session_id_is_default(store: Any) -> None:
    Session.create(store).append_message(msg("d1"))
    assert ids(Session.create(store).for_session("default").get_history()) == ["d1"]
    assert Session.create(store).for_session("other").get_history() == []


def test_direct_constructor_matches_builder(store: Any) -> None:
    built = Session.create(store)
    assert built.for_session("s9") is built  # builder methods return the same object
    Session(store, session_id="s9").append_message(msg("k1"))
    assert ids(Session.create(store).for_session("s9").get_history()) == ["k1"]


def test_same_session_id_in_two_apps_is_two_sessions(store: Any) -> None:
    one = threadline.SessionManager(store, app_name="app-one").get_session("shared")
    two = threadline.SessionManager(store, app_name="app-two").get_session("shared")
    one.append_message(msg("m1", "first app kestrel"))
    two.append_message(msg("m1", "second app heron"))
    assert one.get_message("m1")["parts"][0]["text"] == "first app kestrel"
    assert two.get_message("m1")["parts"][0]["text"] == "second app heron"
    assert [h.id for h in one.search("heron")] == []
    assert [h.id for h in two.search("heron")] == ["m1"]
    one.clear_messages()
    assert ids(two.get_history()) == ["m1"]
    # a bare Session belongs to app "default"
    assert Session.create(store).for_session("shared").get_history() == []


WEIRD_IDS = ["m'1", 'm"2', "a%", "a_", "東京", "with space", "semi;colon", "back\\slash", "🚀",
             "x" * 300, "-- comment", "Robert'); DROP TABLE tl_messages;--"]


def test_unusual_ids_work_everywhere(session: Session) -> None:
    session.append_message(msg("root"))
    for mid in WEIRD_IDS:
        session.append_message(msg(mid, f"weird {mid}"), "root")
    session.append_message(msg("ab"), "root")  # would match LIKE 'a%' / 'a_'
    session.append_message(msg("child"), "a%")
    assert ids(session.get_branches("root")) == [*WEIRD_IDS, "ab"]
    assert ids(session.get_branches("a%")) == ["child"]
    assert session.get_branches("a_") == []
    for mid in WEIRD_IDS:
        assert session.get_message(mid)["id"] == mid
        assert ids(session.get_history(mid)) == ["root", mid]
    session.checkout("東京")
    assert ids(session.get_history()) == ["root", "東京"]
    assert session.delete_messages(["a%"]) == 1
    assert session.get_message("ab") is not None
    assert session.get_message("a_") is not None


@pytest.mark.parametrize("sid", ["s/1", "s'1", "東京", "with space", "%", "a" * 200])
def test_unusual_session_ids(store: Any, sid: str) -> None:
    s = Session.create(store).for_session(sid)
    s.append_message(msg("m1", "unusual session"))
    assert ids(Session.create(store).for_session(sid).get_history()) == ["m1"]
    assert Session.create(store).for_session("s_1" if sid == "s/1" else "x").get_history() == []
    [hit] = s.search("unusual")
    assert hit.session_id == sid


def test_append_messages_empty_batch(session: Session) -> None:
    chain(session, "m1")
    assert session.append_messages([]) == []
    assert head_id(session) == "m1"
