"""A session's identity has a generation (api.md Amendment 11, clarification 23).

Deleting a session and creating one with the same id makes a new session with a new
generation. A store call with ``generation=`` acts only on that creation (else
``SessionNotFoundError``, nothing stored); a ``Session`` or a store handle binds to the
generation it first observes; a ``SessionManager`` (of any process) notices the change on its
next use and never shows the new session the old one's owner, blocks or messages.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import threadline
from threadline.aio import AsyncSessionManager
from threadline.errors import SessionNotFoundError
from threadline.messages import user
from threadline.store import Store
from threadline.store._generation import takes_generation
from threadline.store._handle import SessionStore, _Bound

APP = "g"
SID = "chat"


def _msg(mid: str, text: str = "hi") -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text}]}


def _recreated(store: Store) -> tuple[int, int]:
    """Session ``chat`` created with one message, deleted, created again with its own:
    (old generation, new generation)."""
    store.append_messages(APP, SID, [_msg("m1", "old")], state_delta={"k": "old"})
    old = store.get_session(APP, SID)
    assert old is not None
    assert store.delete_session(APP, SID)
    store.append_messages(APP, SID, [_msg("m1", "new")], state_delta={"k": "new"})
    store.set_block(APP, "session", SID, "memory", "new notes")
    store.set_prompt(APP, SID, "new prompt")
    new = store.get_session(APP, SID)
    assert new is not None
    return old.generation, new.generation


def _snapshot(store: Store) -> tuple[Any, ...]:
    return (
        store.get_session(APP, SID),
        store.dump_session(APP, SID),
        store.get_prompt(APP, SID),
        store.get_block(APP, "session", SID, "memory"),
    )


# Every per-session store method, called on session ``chat`` (the ``generation=`` is added).
CALLS: dict[str, Callable[[Store, int], Any]] = {
    "append_messages": lambda s, g: s.append_messages(APP, SID, [_msg("x")], generation=g),
    "update_message": lambda s, g: s.update_message(APP, SID, _msg("m1", "edit"), generation=g),
    "delete_messages": lambda s, g: s.delete_messages(APP, SID, ["m1"], generation=g),
    "clear_messages": lambda s, g: s.clear_messages(APP, SID, generation=g),
    "get_message": lambda s, g: s.get_message(APP, SID, "m1", generation=g),
    "get_head": lambda s, g: s.get_head(APP, SID, generation=g),
    "set_head": lambda s, g: s.set_head(APP, SID, "m1", generation=g),
    "get_path": lambda s, g: s.get_path(APP, SID, generation=g),
    "get_tree": lambda s, g: s.get_tree(APP, SID, generation=g),
    "get_path_encoded": lambda s, g: s.get_path_encoded(APP, SID, generation=g),
    "get_history_encoded": lambda s, g: s.get_history_encoded(APP, SID, generation=g),
    "get_path_tail": lambda s, g: s.get_path_tail(APP, SID, 2, generation=g),
    "get_history_tail_encoded": lambda s, g: s.get_history_tail_encoded(APP, SID, 2, generation=g),
    "get_path_ids": lambda s, g: s.get_path_ids(APP, SID, generation=g),
    "get_recent_path": lambda s, g: s.get_recent_path(APP, SID, 1000, generation=g),
    "get_path_length": lambda s, g: s.get_path_length(APP, SID, generation=g),
    "get_children": lambda s, g: s.get_children(APP, SID, "m1", generation=g),
    "add_compaction": lambda s, g: s.add_compaction(APP, SID, "sum", "m1", "m1", generation=g),
    "get_changes": lambda s, g: s.get_changes(APP, SID, generation=g),
    "get_compactions": lambda s, g: s.get_compactions(APP, SID, generation=g),
    "get_skill_loads": lambda s, g: s.get_skill_loads(APP, SID, generation=g),
    "get_block": lambda s, g: s.get_block(APP, "session", SID, "memory", generation=g),
    "set_block": lambda s, g: s.set_block(APP, "session", SID, "memory", "x", generation=g),
    "get_prompt": lambda s, g: s.get_prompt(APP, SID, generation=g),
    "set_prompt": lambda s, g: s.set_prompt(APP, SID, "stale prompt", generation=g),
    "get_state": lambda s, g: s.get_state(APP, SID, None, generation=g),
    "update_state": lambda s, g: s.update_state(APP, SID, None, {"k": "stale"}, generation=g),
    "rewind": lambda s, g: s.rewind(APP, SID, "m1", generation=g),
    "update_session": lambda s, g: s.update_session(APP, SID, name="stale", generation=g),
    "touch_session": lambda s, g: s.touch_session(APP, SID, generation=g),
    "delete_session": lambda s, g: s.delete_session(APP, SID, generation=g),
    "add_usage": lambda s, g: s.add_usage(APP, SID, 1, 1, 0.5, generation=g),
    "search_messages": lambda s, g: s.search_messages(APP, "new", session_id=SID, generation=g),
}


def _session_methods() -> set[str]:
    """Store methods whose first parameters name one session: ``(app, session_id, ...)``
    or a block's ``(app, owner, owner_id, ...)``."""
    names = set()
    for name in dir(Store):
        if name.startswith("_") or not callable(getattr(Store, name)):
            continue
        params = list(inspect.signature(getattr(Store, name)).parameters)[1:3]
        if params in (["app", "session_id"], ["app", "owner"]):
            names.add(name)
    return names


def test_every_per_session_store_method_declares_generation_and_is_tested() -> None:
    # Creating a session, reading its registry row (which carries the generation), dumping
    # it whole and making a handle take no precondition.
    methods = _session_methods() - {"create_session", "get_session", "dump_session", "session"}
    methods.add("search_messages")  # one session's search (session_id=...)
    assert methods == set(CALLS)
    for name in methods:
        assert takes_generation(getattr(Store, name)), name


def test_generations_are_distinct_and_never_reused(store: Store) -> None:
    seen = [store.create_session(APP, "a").generation]
    store.append_messages(APP, "b", [_msg("m1")])  # each way of creating a row
    store.touch_session(APP, "c")
    store.add_usage(APP, "d", 1, 1, 0.0)
    store.update_state(APP, "e", None, {"k": 1})
    for sid in "bcde":
        info = store.get_session(APP, sid)
        assert info is not None
        seen.append(info.generation)
    for _ in range(3):  # the same id, created again and again
        store.delete_session(APP, "a")
        seen.append(store.create_session(APP, "a").generation)
    store.append_messages(APP, "a", [_msg("m2")])  # a write to an existing row keeps it
    assert store.get_session(APP, "a").generation == seen[-1]  # type: ignore[union-attr]
    assert all(g > 0 for g in seen) and len(set(seen)) == len(seen)
    assert seen[-3:] == sorted(seen[-3:])


@pytest.mark.parametrize("method", sorted(CALLS))
def test_a_stale_generation_raises_and_stores_nothing(store: Store, method: str) -> None:
    old, new = _recreated(store)
    assert new != old
    before = _snapshot(store)
    with pytest.raises(SessionNotFoundError):
        CALLS[method](store, old)
    assert _snapshot(store) == before
    CALLS[method](store, new)  # the current generation: the call works


@pytest.mark.parametrize("method", sorted(CALLS))
def test_a_deleted_generation_is_not_created_again(store: Store, method: str) -> None:
    store.append_messages(APP, SID, [_msg("m1")])
    gone = store.get_session(APP, SID).generation  # type: ignore[union-attr]
    store.delete_session(APP, SID)
    with pytest.raises(SessionNotFoundError):
        CALLS[method](store, gone)
    assert store.get_session(APP, SID) is None
    assert store.dump_session(APP, SID) is None


def test_generation_on_a_block_of_a_user_or_the_app_is_refused(store: Store) -> None:
    with pytest.raises(threadline.InvalidArgumentError):
        store.get_block(APP, "user", "ana", "memory", generation=1)
    with pytest.raises(threadline.InvalidArgumentError):
        store.search_messages(APP, "words", generation=1)  # no session named
    with pytest.raises(threadline.InvalidArgumentError):
        store.get_head(APP, SID, generation=0)  # generations are positive


def test_a_session_bound_to_a_deleted_generation_raises(store: Store) -> None:
    old = threadline.Session(store, app_name=APP, session_id=SID).with_context("memory")
    old.append_message(_msg("m1", "old"))
    old.update_state({"k": "old"})
    store.delete_session(APP, SID)
    for call in (  # deleted, not created again: nothing is created either
        lambda: old.append_message(_msg("m2")),
        old.get_history,
        lambda: old.update_state({"k": "x"}),
    ):
        with pytest.raises(SessionNotFoundError):
            call()
    assert store.get_session(APP, SID) is None
    fresh = threadline.Session(store, app_name=APP, session_id=SID)
    fresh.append_message(_msg("n1", "new"))  # an unbound Session still creates it
    fresh.update_state({"k": "new"})
    for call in (
        lambda: old.append_message(_msg("m3")),
        old.get_history,
        old.get_latest_leaf,
        lambda: old.get_message("n1"),
        lambda: old.get_state("k"),
        lambda: old.update_state({"k": "x"}),
        lambda: old.replace_context_block("memory", "stale"),
    ):
        with pytest.raises(SessionNotFoundError):
            call()
    assert [m["id"] for m in fresh.get_history()] == ["n1"]
    assert fresh.get_state("k") == "new"
    assert store.get_block(APP, "session", SID, "memory") is None
    again = threadline.Session(store, app_name=APP, session_id=SID)
    assert [m["id"] for m in again.get_history()] == ["n1"]


def test_a_session_binds_on_its_first_read(store: Store) -> None:
    store.append_messages(APP, SID, [_msg("m1")])
    reader = threadline.Session(store, app_name=APP, session_id=SID)
    assert [m["id"] for m in reader.get_history()] == ["m1"]
    store.delete_session(APP, SID)
    store.append_messages(APP, SID, [_msg("n1")])
    with pytest.raises(SessionNotFoundError):
        reader.get_history()


def test_a_store_handle_binds_to_its_generation(store: Store) -> None:
    handle = store.session(APP, SID)
    assert handle.generation is None and handle.get_path() == []  # nothing to bind to yet
    handle.append_messages([_msg("m1")])
    info = store.get_session(APP, SID)
    assert info is not None and handle.generation == info.generation
    assert handle.info() == info
    store.delete_session(APP, SID)
    store.append_messages(APP, SID, [_msg("n1")])
    assert handle.info() is None
    with pytest.raises(SessionNotFoundError):
        handle.get_path()
    with pytest.raises(SessionNotFoundError):
        handle.append_messages([_msg("m2")])
    assert [m["id"] for m in store.session(APP, SID).get_path()] == ["n1"]


# Every storage method of a store handle (store.session(...)), called on session ``chat``.
HANDLE_CALLS: dict[str, Callable[[SessionStore], Any]] = {
    "append_messages": lambda h: h.append_messages([_msg("x")]),
    "update_message": lambda h: h.update_message(_msg("m1", "edit")),
    "delete_messages": lambda h: h.delete_messages(["m1"]),
    "clear_messages": lambda h: h.clear_messages(),
    "get_message": lambda h: h.get_message("m1"),
    "get_head": lambda h: h.get_head(),
    "set_head": lambda h: h.set_head("m1"),
    "get_path": lambda h: h.get_path(),
    "get_path_encoded": lambda h: h.get_path_encoded(),
    "get_history_encoded": lambda h: h.get_history_encoded(),
    "get_path_tail": lambda h: h.get_path_tail(2),
    "get_history_tail_encoded": lambda h: h.get_history_tail_encoded(2),
    "get_path_ids": lambda h: h.get_path_ids(),
    "get_recent_path": lambda h: h.get_recent_path(1000),
    "get_path_length": lambda h: h.get_path_length(),
    "get_children": lambda h: h.get_children("m1"),
    "add_compaction": lambda h: h.add_compaction("sum", "m1", "m1"),
    "get_compactions": lambda h: h.get_compactions(),
    "get_skill_loads": lambda h: h.get_skill_loads(),
    "get_prompt": lambda h: h.get_prompt(),
    "set_prompt": lambda h: h.set_prompt("stale prompt"),
    "rewind": lambda h: h.rewind("m1"),
    "get_state": lambda h: h.get_state(),
    "update_state": lambda h: h.update_state({"k": "stale"}),
    "search": lambda h: h.search("new"),
}


def test_every_storage_method_of_a_handle_is_tested() -> None:
    bound = {
        name
        for name, member in vars(SessionStore).items()
        if not name.startswith("_") and (isinstance(member, _Bound) or inspect.isfunction(member))
    }
    # read_attachment reads an app's attachments; info() is tested on its own.
    assert bound - {"read_attachment", "info"} == set(HANDLE_CALLS)


@pytest.mark.parametrize("method", sorted(HANDLE_CALLS))
def test_a_bound_handle_refuses_the_session_created_after_it(store: Store, method: str) -> None:
    handle = store.session(APP, SID)
    handle.append_messages([_msg("m1", "old")])
    assert store.delete_session(APP, SID)
    store.append_messages(APP, SID, [_msg("m1", "new")], state_delta={"k": "new"})
    store.set_prompt(APP, SID, "new prompt")
    before = _snapshot(store)
    with pytest.raises(SessionNotFoundError):
        HANDLE_CALLS[method](handle)
    assert _snapshot(store) == before
    HANDLE_CALLS[method](store.session(APP, SID))  # a new handle acts on the new session


class _Racing:
    """A store whose first append is followed, before it returns, by another writer (a
    thread of its own) deleting the session and creating it again."""

    def __init__(self, real: Store) -> None:
        self.real = real
        self.raced = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def append_messages(self, *args: Any, **kwargs: Any) -> Any:
        stored = self.real.append_messages(*args, **kwargs)
        if not self.raced:
            self.raced = True

            def other() -> None:
                self.real.delete_session(APP, SID)
                self.real.append_messages(APP, SID, [_msg("theirs")])

            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        return stored


_Racing.append_messages.__signature__ = inspect.signature(Store.append_messages)  # type: ignore[attr-defined]


def test_a_handle_binds_to_the_creation_its_first_write_made(store: Store) -> None:
    """Not to the one a racing writer made right after: the store notes the generation in
    the creating write's own transaction."""
    handle = SessionStore(_Racing(store), APP, SID)  # type: ignore[arg-type]
    handle.append_messages([_msg("mine")])
    theirs = store.get_session(APP, SID)
    assert theirs is not None and handle.generation not in (None, theirs.generation)
    with pytest.raises(SessionNotFoundError):
        handle.get_path()
    assert [m["id"] for m in store.get_path(APP, SID)] == ["theirs"]


class _Plain:
    """A third-party store: forwards to a real one, knows nothing of generations."""

    def __init__(self, real: Store) -> None:
        self.real = real
        self.keywords: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.real, name)

        def forward(*args: Any, **kwargs: Any) -> Any:
            self.keywords.update(kwargs)
            return method(*args, **kwargs)

        return forward


def test_a_store_without_generations_keeps_working(store: Store) -> None:
    plain = _Plain(store)
    session = threadline.Session(plain, app_name=APP, session_id=SID)  # type: ignore[arg-type]
    session.append_message(_msg("m1"))
    session.update_state({"k": 1})
    assert [m["id"] for m in session.get_history()] == ["m1"] and session.get_state("k") == 1
    assert "generation" not in plain.keywords
    handle = SessionStore(plain, APP, SID)  # type: ignore[arg-type]
    assert handle.get_path_length() == 1


def test_a_manager_cache_follows_a_session_created_again_by_another_process(
    file_store_url: str,
) -> None:
    """Two managers over one database (two workers): B deletes ``chat`` and creates it for
    another user; A's next use shows the new owner's session and blocks, never the old."""

    def manager() -> threadline.SessionManager:
        return (
            threadline.SessionManager(file_store_url, app_name=APP)
            .with_context("profile", scope="user")
            .with_context("memory")
        )

    with manager() as a, manager() as b:
        a.create(session_id=SID, user_id="u")
        cached = a.get_session(SID)
        cached.replace_context_block("profile", "u's secret profile")
        cached.replace_context_block("memory", "u's notes")
        cached.append_message(user("u's message", id="m1"))
        assert "u's secret profile" in cached.freeze_system_prompt()

        b.delete(SID)
        b.create(session_id=SID, user_id="v")
        theirs = b.get_session(SID, user_id="v")
        theirs.replace_context_block("profile", "v's profile")

        assert a.get(SID, user_id="u") is None
        with pytest.raises(SessionNotFoundError):
            a.get_session(SID, user_id="u")
        for session in (a.get_session(SID), a.get_session(SID, user_id="v")):
            assert session is not cached and session.user_id == "v"
            prompt = session.freeze_system_prompt()
            assert "v's profile" in prompt and "u's" not in prompt
            assert session.get_context_block("memory").content == ""  # type: ignore[union-attr]
            assert session.get_history() == []
        with pytest.raises(SessionNotFoundError):
            cached.get_history()  # the object handed out before stays bound to the old one
        a.append(SID, user("v's message", id="n1"), user_id="v")
        assert [m["id"] for m in b.get_history(SID)] == ["n1"]


def test_a_manager_cache_follows_a_session_created_again_for_the_same_owner(
    file_store_url: str,
) -> None:
    with (
        threadline.SessionManager(file_store_url, app_name=APP).with_context("memory") as a,
        threadline.SessionManager(file_store_url, app_name=APP) as b,
    ):
        a.append(SID, user("old", id="m1"), user_id="ana")
        a.get_session(SID, user_id="ana").replace_context_block("memory", "old notes")
        b.delete(SID)
        b.create(session_id=SID, user_id="ana")
        block = a.get_session(SID, user_id="ana").get_context_block("memory")
        assert block is not None and block.content == ""
        assert a.get_history(SID, user_id="ana") == []
        assert a.get_message_count(SID) == 0


def test_an_async_manager_follows_a_session_created_again(file_store_url: str) -> None:
    async def run() -> None:
        async with AsyncSessionManager(file_store_url, app_name=APP) as a:
            a_sync = threadline.SessionManager(file_store_url, app_name=APP)
            await a.append(SID, user("old", id="m1"), user_id="u")
            cached = await a.get_session(SID)
            a_sync.delete(SID)
            a_sync.append(SID, user("new", id="n1"), user_id="v")
            with pytest.raises(SessionNotFoundError):
                await cached.get_history()
            fresh = await a.get_session(SID)
            assert fresh.user_id == "v"
            assert [m["id"] for m in await fresh.get_history()] == ["n1"]
            assert [m["id"] for m in await a.get_history(SID)] == ["n1"]
            a_sync.close()

    asyncio.run(run())


def test_appends_bound_to_a_generation_race_a_delete_at_the_store_level(
    file_store_url: str,
) -> None:
    """A delete racing appends of a bound writer: each append lands wholly before the
    delete (and goes with it) or raises ``SessionNotFoundError``; none reaches the session
    created after the delete (docs/guarantees.md)."""
    with threadline.connect(file_store_url) as setup:
        setup.append_messages(APP, SID, [_msg("seed")])
        old = setup.get_session(APP, SID).generation  # type: ignore[union-attr]
    landed: list[str] = []
    refused: list[str] = []
    started = threading.Event()

    def writer() -> None:
        # Until refused (bounded in time): a fixed count could all land before the delete.
        deadline = time.monotonic() + 60
        with threadline.connect(file_store_url) as store:
            for i in itertools.count():
                if time.monotonic() > deadline:
                    return
                mid = f"w{i}"
                try:
                    store.append_messages(APP, SID, [_msg(mid)], generation=old)
                except SessionNotFoundError:
                    refused.append(mid)
                    return
                landed.append(mid)
                started.set()

    thread = threading.Thread(target=writer)
    thread.start()
    with threadline.connect(file_store_url) as store:
        started.wait(30)
        store.delete_session(APP, SID)
        store.append_messages(APP, SID, [_msg("fresh")])
        thread.join(60)
        assert refused and landed
        assert store.get_path_ids(APP, SID) == ["fresh"]
        new = store.get_session(APP, SID)
        assert new is not None and new.generation != old and new.message_count == 1


# -- a binding made in a transaction that rolls back is undone -----------------------------------


class _Undone(Exception):
    pass


def _roll_back(store: Store, fn: Callable[[], Any]) -> None:
    def body() -> None:
        fn()
        raise _Undone("rolled back")

    with pytest.raises(_Undone):
        store.transaction(body)


def test_a_creation_rolled_back_does_not_bind_the_session(store: Store) -> None:
    """The first append of a Session runs in a transaction that rolls back: no session was
    created, so its next append creates it (not "generation N is deleted")."""
    manager = threadline.SessionManager(store, app_name=APP)
    session = manager.get_session(SID)
    _roll_back(store, lambda: session.append_message(_msg("m1")))
    assert store.get_session(APP, SID) is None and session._generation() is None
    session.append_message(_msg("m2"))
    info = store.get_session(APP, SID)
    assert info is not None and session._generation() == info.generation
    assert [m["id"] for m in session.get_history()] == ["m2"]
    assert manager.get_session(SID) is session


def test_a_read_in_a_rolled_back_transaction_does_not_bind(store: Store) -> None:
    """A handle's first read sees the transaction's own creation; rolled back, unbound."""
    reader = store.session(APP, SID)

    def create_then_read() -> None:
        store.append_messages(APP, SID, [_msg("m1")])
        assert [m["id"] for m in reader.get_path()] == ["m1"]

    _roll_back(store, create_then_read)
    assert reader.generation is None
    store.append_messages(APP, SID, [_msg("n1")])
    assert [m["id"] for m in reader.get_path()] == ["n1"]


def test_a_manager_session_built_in_a_rolled_back_transaction_is_unbound(store: Store) -> None:
    manager = threadline.SessionManager(store, app_name=APP)
    built: list[threadline.Session] = []

    def create_then_get() -> None:
        store.append_messages(APP, SID, [_msg("m1")])
        built.append(manager.get_session(SID))

    _roll_back(store, create_then_get)
    assert built[0]._generation() is None
    built[0].append_message(_msg("n1"))
    assert [m["id"] for m in built[0].get_history()] == ["n1"]


def test_a_rolled_back_creation_leaves_no_binding_to_another_users_session(store: Store) -> None:
    """SQLite numbers the next creation as the rolled-back one: the Session must not hold
    that number, or it would act on another user's session as its own."""
    mine = threadline.Session(store, app_name=APP, session_id=SID, user_id="u1")
    _roll_back(store, lambda: mine.append_message(_msg("secret")))
    theirs = threadline.Session(store, app_name=APP, session_id=SID, user_id="u2")
    theirs.append_message(_msg("own"))
    assert mine._generation() is None
    store.delete_session(APP, SID)  # u2's session gone: u1's Session creates its own
    mine.append_message(_msg("mine"))
    info = store.get_session(APP, SID)
    assert info is not None and info.user_id == "u1"
    assert [m["id"] for m in mine.get_history()] == ["mine"]


@pytest.mark.postgres
def test_each_retried_attempt_of_a_transaction_starts_unbound(pg_dsn: str) -> None:
    """PostgreSQL runs ``fn`` again after a deadlock: the first attempt's binding (to a
    creation rolled back with it) is undone before the second runs."""
    import psycopg

    store = threadline.connect(pg_dsn)
    try:
        handle = store.session(APP, SID)
        attempts: list[int | None] = []

        def body() -> None:
            attempts.append(handle.generation)
            handle.append_messages([_msg("m1")])
            if len(attempts) == 1:
                raise psycopg.errors.DeadlockDetected("deadlock detected (simulated)")

        store.transaction(body)
        info = store.get_session(APP, SID)
        assert attempts == [None, None]
        assert info is not None and handle.generation == info.generation
        assert [m["id"] for m in handle.get_path()] == ["m1"]
    finally:
        store.close()
