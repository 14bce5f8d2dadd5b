"""SessionManager.

Black-box: only the public API of ``threadline``; the ``Store`` protocol is used to check that a
deleted session leaves nothing behind.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from threadline import (
    InvalidMessageError,
    MessageNotFoundError,
    SessionExistsError,
    SessionInfo,
    SessionManager,
    SessionNotFoundError,
    SessionPage,
    ThreadlineError,
)
from threadline.messages import assistant, text_of, user

from .conftest import write_legacy_row

INFO_FIELDS = {
    "id",
    "app_name",
    "user_id",
    "name",
    "parent_session_id",
    "model",
    "source",
    "input_tokens",
    "output_tokens",
    "estimated_cost",
    "end_reason",
    "metadata",
    "message_count",
    "created_at",
    "updated_at",
    "generation",
}


def info(manager: SessionManager, session_id: str) -> SessionInfo:
    got = manager.get(session_id)
    assert got is not None, session_id
    return got


def updated(manager: SessionManager, session_id: str) -> datetime:
    return info(manager, session_id).updated_at


def ids_of(history: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in history]


# ---------------------------------------------------------------------------- registry


def test_create_get_and_fields(store: Any) -> None:
    manager = SessionManager(store, app_name="reg")
    created = manager.create(
        "My chat",
        session_id="chat-1",
        user_id="u1",
        parent_session_id="p0",
        model="gpt",
        source="web",
        metadata={"k": "v"},
    )
    assert isinstance(created, SessionInfo)
    assert set(created.to_dict()) == INFO_FIELDS
    assert (created.id, created.app_name, created.user_id, created.name) == (
        "chat-1",
        "reg",
        "u1",
        "My chat",
    )
    assert (created.parent_session_id, created.model, created.source) == ("p0", "gpt", "web")
    assert (created.input_tokens, created.output_tokens, created.estimated_cost) == (0, 0, 0.0)
    assert created.end_reason is None
    assert created.metadata == {"k": "v"}
    assert created.message_count == 0
    for stamp in (created.created_at, created.updated_at):
        assert stamp.tzinfo is not None and stamp.utcoffset() == timedelta(0)
    assert manager.get("chat-1") == created
    assert manager.get("nope") is None


def test_create_generates_ids_and_rejects_existing(store: Any) -> None:
    manager = SessionManager(store)
    a = manager.create()
    b = manager.create("named")
    assert isinstance(a.id, str) and a.id and isinstance(b.id, str) and b.id
    assert a.id != b.id
    assert (a.name, b.name, a.app_name) == (None, "named", "default")
    with pytest.raises(SessionExistsError) as caught:
        manager.create(session_id=a.id)
    assert isinstance(caught.value, ThreadlineError)
    # unique per app only
    other = SessionManager(store, app_name="other").create(session_id=a.id)
    assert other.app_name == "other"


def test_create_with_state(store: Any) -> None:
    manager = SessionManager(store, app_name="st")
    manager.create(
        session_id="s1", user_id="u1", state={"step": 1, "user:lang": "en", "app:mode": "x"}
    )
    assert manager.get_state("s1") == {"step": 1, "user:lang": "en", "app:mode": "x"}
    manager.create(session_id="s2", user_id="u1")
    assert manager.get_state("s2") == {"user:lang": "en", "app:mode": "x"}


def test_get_or_create(store: Any) -> None:
    manager = SessionManager(store, app_name="goc")
    made = manager.get_or_create("s1", user_id="u1", name="first")
    assert (made.id, made.user_id, made.name) == ("s1", "u1", "first")
    again = manager.get_or_create("s1", user_id="u1", name="second")
    assert again == made  # existing: returned unchanged
    with pytest.raises(SessionNotFoundError):  # another user's session: missing for u2
        manager.get_or_create("s1", user_id="u2", name="second")
    assert info(manager, "s1") == made


def test_list_pagination_over_120_sessions(store: Any) -> None:
    manager = SessionManager(store, app_name="page")
    created = {manager.create(session_id=f"s{i:03d}").id for i in range(120)}
    SessionManager(store, app_name="noise").create(session_id="x")
    for limit, sizes in ((50, [50, 50, 20]), (40, [40, 40, 40])):
        seen: list[SessionInfo] = []
        cursor = None
        pages: list[SessionPage] = []
        while True:
            page = manager.list(limit=limit, cursor=cursor)
            assert isinstance(page, SessionPage)
            pages.append(page)
            seen.extend(page.sessions)
            cursor = page.next_cursor
            if cursor is None:
                break
            assert len(pages) < 10
        assert [len(p.sessions) for p in pages] == sizes
        assert [p.next_cursor is None for p in pages] == [False, False, True]
        ids = [s.id for s in seen]
        assert len(ids) == len(set(ids)) == 120
        assert set(ids) == created
        stamps = [s.updated_at for s in seen]
        assert stamps == sorted(stamps, reverse=True)
        assert all(s.app_name == "page" for s in seen)
    default_page = manager.list()
    assert len(default_page.sessions) == 50  # default limit
    assert default_page.next_cursor is not None
    # newest updated_at first: touching an old session moves it to the front
    manager.rename("s000", "renamed")
    assert manager.list(limit=1).sessions[0].id == "s000"


def test_list_by_user(store: Any) -> None:
    manager = SessionManager(store, app_name="users")
    for i in range(5):
        manager.create(session_id=f"a{i}", user_id="alice")
    for i in range(3):
        manager.create(session_id=f"b{i}", user_id="bob")
    page = manager.list(user_id="alice", limit=3)
    rest = manager.list(user_id="alice", limit=3, cursor=page.next_cursor)
    ids = [s.id for s in page.sessions + rest.sessions]
    assert sorted(ids) == [f"a{i}" for i in range(5)]
    assert rest.next_cursor is None
    assert {s.id for s in manager.list(user_id="bob").sessions} == {"b0", "b1", "b2"}
    assert manager.list(user_id="carol").sessions == []
    assert len(manager.list().sessions) == 8


def test_rename(store: Any) -> None:
    manager = SessionManager(store)
    manager.create("old", session_id="s1")
    before = updated(manager, "s1")
    manager.rename("s1", "new")
    assert info(manager, "s1").name == "new"
    assert updated(manager, "s1") > before
    with pytest.raises(SessionNotFoundError):
        manager.rename("nope", "x")


def _populate(manager: SessionManager, store: Any, sid: str, user_id: str) -> None:
    manager.create(session_id=sid, user_id=user_id)
    session = manager.get_session(sid).for_user(user_id)
    session.append_messages(
        [user(f"zebra talk in {sid}", id="m1"), assistant("ok", id="m2"), user("more", id="m3")]
    )
    session.add_compaction("summary", "m1", "m2")
    session.replace_context_block("memory", f"memory of {sid}")
    session.freeze_system_prompt()
    session.update_state({"step": 3, "app:shared": 1, "user:pref": "dark"})


def test_delete_leaves_nothing_behind(store: Any) -> None:
    app = "del"
    manager = SessionManager(store, app_name=app).with_context("memory").with_cached_prompt()
    _populate(manager, store, "gone", "u1")
    _populate(manager, store, "kept", "u1")
    assert store.get_prompt(app, "gone") is not None
    manager.delete("gone")
    assert manager.get("gone") is None
    assert store.get_session(app, "gone") is None
    assert store.get_path(app, "gone") == []
    assert store.get_compactions(app, "gone") == []
    assert store.get_block(app, "session", "gone", "memory") is None
    assert store.get_prompt(app, "gone") is None
    state = store.get_state(app, "gone", None)
    assert not [k for k in state if not k.startswith(("app:", "user:"))]
    assert store.search_messages(app, "zebra", session_id="gone") == []
    assert {h.session_id for h in manager.search("zebra")} == {"kept"}
    assert "gone" not in {s.id for s in manager.list().sessions}
    # the other session is untouched
    assert ids_of(store.get_path(app, "kept")) == ["m1", "m2", "m3"]
    assert len(store.get_compactions(app, "kept")) == 1
    assert store.get_block(app, "session", "kept", "memory") == "memory of kept"
    assert store.get_prompt(app, "kept") is not None
    assert manager.get_state("kept")["step"] == 3
    with pytest.raises(SessionNotFoundError) as caught:
        manager.delete("gone")
    assert isinstance(caught.value, KeyError)


def test_get_session_is_cached_and_creates_no_row(store: Any) -> None:
    manager = SessionManager(store, app_name="lazy")
    session = manager.get_session("s1")
    assert manager.get_session("s1") is session
    assert manager.get_session("s2") is not session
    session.get_history()
    session.get_context_blocks()
    assert manager.get("s1") is None
    assert manager.list().sessions == []
    session.append_message(user("first write", id="m1"))
    row = info(manager, "s1")
    assert row.message_count == 1
    assert [s.id for s in manager.list().sessions] == ["s1"]


def test_first_write_by_a_user_session_records_user(store: Any) -> None:
    manager = SessionManager(store, app_name="lazyuser")
    manager.get_session("s1").for_user("u9").append_message(user("hello", id="m1"))
    assert info(manager, "s1").user_id == "u9"
    assert [s.id for s in manager.list(user_id="u9").sessions] == ["s1"]


def test_delegating_writes_touch_updated_at_and_reads_do_not(store: Any) -> None:
    manager = SessionManager(store, app_name="touch")
    manager.create(session_id="s")
    stamps = [updated(manager, "s")]

    def wrote() -> None:
        stamps.append(updated(manager, "s"))
        assert stamps[-1] > stamps[-2]

    def read_only() -> None:
        assert updated(manager, "s") == stamps[-1]

    manager.append("s", user("one", id="m1"))
    wrote()
    manager.append_all("s", [assistant("two", id="m2"), user("three", id="m3")])
    wrote()
    assert ids_of(manager.get_history("s")) == ["m1", "m2", "m3"]  # append_all attaches to head
    manager.upsert("s", {"id": "m3", "role": "user", "parts": [{"type": "text", "text": "3!"}]})
    wrote()
    assert text_of(manager.get_history("s")[-1]) == "3!"
    manager.upsert("s", user("four", id="m4"))
    wrote()
    manager.append("s", user("branch", id="b1"), "m1")
    wrote()
    manager.add_compaction("s", "sum", "m1", "m2")
    wrote()
    manager.delete_messages("s", ["b1"])
    wrote()
    manager.update_state("s", {"k": 1})
    wrote()
    manager.add_usage("s", 1, 1, 0.0)
    wrote()
    # reads
    manager.get_history("s")
    manager.get_message_count("s")
    manager.get_branches("s", "m1")
    manager.get_compactions("s")
    manager.get_state("s")
    manager.get("s")
    manager.list()
    manager.search("three")
    session = manager.get_session("s")
    session.get_history()
    session.get_message("m1")
    session.get_latest_leaf()
    session.get_path_length()
    session.search("one")
    session.state  # noqa: B018
    read_only()
    manager.clear_messages("s")
    wrote()
    assert manager.get_history("s") == []


def test_message_count_vs_get_message_count(store: Any) -> None:
    manager = SessionManager(store, app_name="count")
    manager.append_all("s", [user("a", id="m1"), assistant("b", id="m2"), user("c", id="m3")])
    manager.append("s", user("branch", id="b1"), "m1")  # head moves to the branch
    manager.add_compaction("s", "sum", "m1", "m2")
    assert info(manager, "s").message_count == 4  # every stored message, all branches
    assert manager.get_message_count("s") == 2  # head path m1 -> b1, raw
    manager.get_session("s").checkout("m3")
    assert manager.get_message_count("s") == 3  # raw: overlay not applied
    assert ids_of(manager.get_branches("s", "m1")) == ["m2", "b1"]


def test_fork_materialises_overlay(store: Any) -> None:
    manager = SessionManager(store, app_name="fork")
    manager.create("origin", session_id="src", user_id="u1")
    manager.append_all(
        "src",
        [
            user("u one", id="m1"),
            assistant("a one", id="m2"),
            user("u two", id="m3"),
            assistant("a two", id="m4"),
            user("u three", id="m5"),
        ],
    )
    manager.add_compaction("src", "SUMMARY of one", "m1", "m2")
    forked = manager.fork("src", "m4", "Forked")
    assert isinstance(forked, SessionInfo)
    assert forked.id != "src"
    assert (forked.parent_session_id, forked.name) == ("src", "Forked")
    assert forked.user_id == "u1"
    history = manager.get_history(forked.id)
    assert [text_of(m) for m in history] == ["SUMMARY of one", "u two", "a two"]
    assert [m["role"] for m in history] == ["assistant", "user", "assistant"]
    for m in history:
        assert not m["id"].startswith("compaction_")
        assert m["id"] not in {"m1", "m2", "m3", "m4", "m5"}
    assert manager.get_compactions(forked.id) == []
    assert info(manager, forked.id).message_count == 3
    # the origin is unchanged
    assert ids_of(store.get_path("fork", "src")) == ["m1", "m2", "m3", "m4", "m5"]
    with pytest.raises(MessageNotFoundError):
        manager.fork("src", "nope")


def test_compact_and_split(store: Any) -> None:
    manager = SessionManager(store, app_name="split")
    manager.create("Project chat", session_id="p", user_id="u1")
    manager.append_all("p", [user("hi", id="m1"), assistant("hello", id="m2")])
    child = manager.compact_and_split("p", "We agreed on Friday.")
    assert isinstance(child, SessionInfo)
    assert info(manager, "p").end_reason == "compaction"
    assert (child.parent_session_id, child.name) == ("p", "Project chat")
    assert child.user_id == "u1"  # the child continues the same user's conversation
    assert child.id != "p"
    history = manager.get_history(child.id)
    assert history
    first = text_of(history[0])
    assert first.startswith("[Context from previous session]")
    assert "We agreed on Friday." in first
    named = manager.compact_and_split(child.id, "Second summary", name="Round 3")
    assert named.name == "Round 3"
    assert info(manager, child.id).end_reason == "compaction"


def test_add_usage_concurrent_totals(store: Any) -> None:
    manager = SessionManager(store, app_name="usage")
    manager.create(session_id="s")
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(100):
                manager.add_usage("s", 1, 2, 0.5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    row = info(manager, "s")
    assert (row.input_tokens, row.output_tokens, row.estimated_cost) == (800, 1600, 400.0)


# ---------------------------------------------------------------------------- search and apps


def test_cross_session_search_scoped_to_app_and_user(store: Any) -> None:
    a = SessionManager(store, app_name="app-a")
    b = SessionManager(store, app_name="app-b")
    a.create(session_id="s1", user_id="u1")
    a.create(session_id="s2", user_id="u2")
    b.create(session_id="s1", user_id="u1")
    a.append("s1", user("the giraffe in app a", id="m1"))
    a.append("s2", user("another giraffe in app a", id="m1"))
    b.append("s1", user("giraffe of app b", id="m1"))
    hits = a.search("giraffe")
    assert {(h.session_id, h.content) for h in hits} == {
        ("s1", "the giraffe in app a"),
        ("s2", "another giraffe in app a"),
    }
    assert [h.session_id for h in a.search("giraffe", user_id="u1")] == ["s1"]
    assert [h.content for h in b.search("giraffe")] == ["giraffe of app b"]
    assert len(a.search("giraffe", limit=1)) == 1
    # same session id in two apps = two sessions
    assert [text_of(m) for m in a.get_history("s1")] == ["the giraffe in app a"]
    assert [text_of(m) for m in b.get_history("s1")] == ["giraffe of app b"]
    b.delete("s1")
    assert [text_of(m) for m in a.get_history("s1")] == ["the giraffe in app a"]


def test_app_isolation_of_everything_keyed_by_session(store: Any) -> None:
    a = SessionManager(store, app_name="iso-a").with_context("memory")
    b = SessionManager(store, app_name="iso-b").with_context("memory")
    sa, sb = a.get_session("same"), b.get_session("same")
    sa.append_message(user("in a", id="m1"))
    sa.replace_context_block("memory", "memory a")
    sa.update_state({"k": "a"})
    sa.add_compaction("sum a", "m1", "m1")
    assert sb.get_history() == []
    assert sb.get_context_block("memory").content == ""  # type: ignore[union-attr]
    assert sb.state.get("k") is None
    assert sb.get_compactions() == []
    sb.append_message(user("in b", id="m1"))  # same message id, other app: no conflict
    assert text_of(sb.get_history()[0]) == "in b"
    assert text_of(sa.get_message("m1")) == "in a"  # type: ignore[arg-type]


def test_with_searchable_history(store: Any) -> None:
    manager = SessionManager(store, app_name="hist").with_searchable_history("history")
    manager.create(session_id="only")
    block = manager.get_session("only").get_context_block("history")
    assert block is not None
    assert block.content == "1 session available for search."
    assert (block.is_searchable, block.writable) == (True, False)
    manager.create(session_id="two")
    manager.create(session_id="three")
    fresh = manager.get_session("three")
    assert fresh.get_context_block("history").content == "3 sessions available for search."  # type: ignore[union-attr]
    assert "HISTORY [searchable]" in fresh.freeze_system_prompt()
    tools = fresh.tools()
    assert "search_context" in set(tools)
    assert "set_context" not in set(tools)  # read-only search block
    manager.append("two", user("the pelican landed", id="p1"))
    found = tools.execute("search_context", {"label": "history", "query": "pelican"})
    assert "pelican landed" in found
    assert tools.execute("search_context", {"label": "history", "query": "zzzqqq"}) == (
        "No results found."
    )


def test_manager_context_shared_provider_and_namespaced_blocks(store: Any) -> None:
    manager = (
        SessionManager(store, app_name="ns")
        .with_context("soul", provider="You are helpful.")
        .with_context("memory", description="Learned facts", max_tokens=1100)
    )
    a, b = manager.get_session("a"), manager.get_session("b")
    a.replace_context_block("memory", "fact for a")
    assert b.get_context_block("memory").content == ""  # type: ignore[union-attr]
    assert a.get_context_block("soul").content == b.get_context_block("soul").content  # type: ignore[union-attr]
    assert "MEMORY (Learned facts)" in b.freeze_system_prompt()


# ---------------------------------------------------------------------------- purge


def test_purge_with_datetime_and_timedelta(clocked_store: Any, clock: Any) -> None:
    store = clocked_store
    manager = SessionManager(store, app_name="purge")
    other = SessionManager(store, app_name="purge-other")
    manager.create(session_id="old1", user_id="u1")
    manager.create(session_id="old2", user_id="u2")
    manager.append("old2", user("zebra", id="m1"))
    other.create(session_id="old-other")
    cutoff = clock.advance(seconds=1)
    clock.advance(seconds=1)
    manager.create(session_id="new1", user_id="u1")
    # user filter: only u1's old sessions
    assert manager.purge(older_than=cutoff, user_id="u2") == 1
    assert manager.get("old2") is None
    assert manager.get("old1") is not None
    assert store.get_path("purge", "old2") == []
    assert manager.purge(older_than=cutoff) == 1
    assert manager.get("old1") is None
    assert manager.get("new1") is not None
    assert other.get("old-other") is not None  # only the manager's app
    clock.advance(seconds=10)
    manager.create(session_id="new2")
    assert manager.purge(older_than=timedelta(seconds=5)) == 1
    assert {s.id for s in manager.list().sessions} == {"new2"}
    assert other.purge(older_than=timedelta(0)) == 1


class Box:
    """A writable provider instance handed to the manager (user extension point)."""

    def __init__(self) -> None:
        self.value = ""

    def get(self) -> str:
        return self.value

    def set(self, content: str) -> None:
        self.value = content


def test_explicit_provider_instance_is_shared_by_manager_sessions(store: Any) -> None:
    box = Box()
    manager = SessionManager(store, app_name="shared").with_context("team", provider=box)
    a, b = manager.get_session("a"), manager.get_session("b")
    a.replace_context_block("team", "shared note")
    assert box.value == "shared note"
    assert b.refresh_system_prompt().endswith("shared note")


def test_append_all_with_parent_none_starts_a_new_root(store: Any) -> None:
    manager = SessionManager(store, app_name="roots")
    manager.append_all("s", [user("a", id="m1"), assistant("b", id="m2")])
    manager.append_all("s", [user("c", id="r1"), assistant("d", id="r2")], None)
    assert ids_of(manager.get_history("s")) == ["r1", "r2"]
    assert ids_of(manager.get_history("s", "m2")) == ["m1", "m2"]
    assert info(manager, "s").message_count == 4


def test_a_refused_fork_leaves_no_child(store: Any) -> None:
    manager = SessionManager(store, app_name="fork")
    manager.append_all("src", [user("u one", id="m1"), assistant("a one", id="m2")])
    # A row no release could write well-formed: the copy refuses it (Amendment 13).
    write_legacy_row(store, {"id": "m2", "role": "assistant", "parts": [{"type": "text"}]})
    with pytest.raises(InvalidMessageError):
        manager.fork("src", "m2")
    assert [i.id for i in manager.list().sessions] == ["src"]  # created and copied together
