"""Runs are atomic (api.md amendment 12, clarification 24), on every backend, for ``Runner``
and ``AsyncRunner``: a run commits once, at its end — its messages, the block and entry edits
its tools made, the state its hooks set, a new session's registry row — or, when the model, a
tool or a hook raises, leaves the store exactly as it was (compared as a whole-store dump).
Also ``Store.transaction``, duplicate ids with other content, and ``stop_reason``."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from threadline import (
    AsyncSessionManager,
    Hooks,
    Runner,
    SessionManager,
    StoreSearchProvider,
    StoreSkillProvider,
)
from threadline.aio import AsyncRunner
from threadline.errors import InvalidMessageError
from threadline.messages import text_of

USER = "ana"


class Boom(Exception):
    pass


class Abort(BaseException):
    """Raised through a tool: not an ``Exception``, so the tool cannot report it."""


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _manager(flavour: str, store: Any, **blocks: Any) -> Any:
    manager: Any = AsyncSessionManager(store) if flavour == "async" else SessionManager(store)
    manager = manager.with_context("memory", description="Notes", max_tokens=200)
    manager = manager.with_context("shared", description="App notes", scope="app")
    manager = manager.with_context("skills", provider=StoreSkillProvider(store))
    manager = manager.with_context("notes", provider=StoreSearchProvider(store))
    for label, provider in blocks.items():
        manager = manager.with_context(label, provider=provider)
    return manager


def _model(flavour: str, fn: Any) -> Any:
    if flavour != "async":
        return fn

    async def model(system: str, messages: list[Any], tools: Any) -> Any:
        await asyncio.sleep(0)
        return fn(system, messages, tools)

    return model


def _run(flavour: str, manager: Any, model: Any, text: str = "hi", **options: Any) -> Any:
    run_options = {k: options.pop(k) for k in ("session_id", "user_id") if k in options}
    run_options.setdefault("session_id", "s")
    run_options.setdefault("user_id", USER)
    if flavour == "async":

        async def main() -> Any:
            async with AsyncRunner(manager, _model(flavour, model), **options) as runner:
                return await runner.arun(text, **run_options)

        return asyncio.run(main())
    return Runner(manager, model, **options).run(text, **run_options)


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}  # fmt: skip


def _script(*steps: Any) -> Any:
    """A model that returns ``steps`` in order (a callable step is called, an exception
    raised); records what each call saw."""
    seen: list[list[Any]] = []

    def model(system: str, messages: list[Any], tools: Any) -> Any:
        seen.append(messages)
        step = steps[len(seen) - 1]
        if isinstance(step, BaseException):
            raise step
        return step(messages) if callable(step) else step

    model.seen = seen  # type: ignore[attr-defined]
    return model


def _snapshot(store: Any) -> Any:
    """Everything these tests can write: every session dumped whole (registry row, messages,
    overlays, blocks, state, prompt), user and app blocks and state, skill entries."""
    apps = store.list_apps()
    sessions: dict[str, Any] = {}
    for app in apps:
        cursor = None
        while True:
            page = store.list_sessions(app, limit=100, cursor=cursor)
            for info in page.sessions:
                sessions[info.id] = store.dump_session(app, info.id)
            cursor = page.next_cursor
            if cursor is None:
                break
    shared = [store.get_block("default", owner, owner_id, label)
              for owner, owner_id in (("user", USER), ("app", ""))
              for label in ("memory", "shared")]  # fmt: skip
    return (
        apps,
        sessions,
        shared,
        store.list_entries("default", "skills"),
        store.list_entries("default", "notes"),
        store.get_state("default", "no-such-session", USER),
    )


def _prepare(flavour: str, store: Any) -> Any:
    """A manager whose session "s" already holds a run, a block, an entry and state."""
    manager = _manager(flavour, store)
    model = _script(_call("set_context", "c0", label="memory", content="first"), "ok")
    hooks = Hooks(before_run=lambda ctx: ctx.set_state("user:visits", 1))
    _run(flavour, manager, model, hooks=hooks)
    store.put_entry("default", "skills", "tea", "Brew it.", "Tea")
    store.set_block("default", "app", "", "shared", "app notes")
    return manager


# -- Store.transaction ---------------------------------------------------------------------------


def test_a_transaction_commits_all_its_writes_or_none(store: Any) -> None:
    store.append_messages("app", "s", [{"id": "m0", "role": "user", "parts": []}])
    before = store.dump_session("app", "s")

    def writes() -> int:
        store.append_messages("app", "s", [{"id": "m1", "role": "assistant", "parts": []}])
        store.set_block("app", "session", "s", "memory", "noted")
        store.put_entry("app", "skills", "k", "text")
        store.update_state("app", "s", None, {"k": 1, "app:k": 2})
        store.append_messages("app", "new", [{"id": "n1", "role": "user", "parts": []}])
        # reads inside see the transaction's own writes
        assert [m["id"] for m in store.get_path("app", "s")] == ["m0", "m1"]
        assert store.get_block("app", "session", "s", "memory") == "noted"
        assert store.transaction(lambda: store.get_state("app", "s", None)) == {"k": 1, "app:k": 2}
        return 7

    def failing() -> None:
        writes()
        raise Boom("rolled back")

    with pytest.raises(Boom):
        store.transaction(failing)
    assert store.dump_session("app", "s") == before
    assert store.get_session("app", "new") is None
    assert store.get_entry("app", "skills", "k") is None
    assert store.get_state("app", "other", None) == {}
    assert store.transaction(writes) == 7
    assert [m["id"] for m in store.get_path("app", "s")] == ["m0", "m1"]
    assert store.get_state("app", "s", None) == {"k": 1, "app:k": 2}
    assert store.get_entry("app", "skills", "k") is not None
    assert store.get_session("app", "new") is not None


def test_another_thread_is_not_part_of_a_transaction(store: Any) -> None:
    """The transaction belongs to the thread that opened it: another thread's write is its
    own (committed whatever the transaction does)."""
    import threading

    def other() -> None:
        store.set_block("app", "app", "", "shared", "from another thread")

    def failing() -> None:
        store.set_block("app", "app", "", "mine", "rolled back")
        if store.__class__.__name__ != "SQLiteStore":  # SQLite: the writer waits for us
            thread = threading.Thread(target=other)
            thread.start()
            thread.join()
        raise Boom("no")

    with pytest.raises(Boom):
        store.transaction(failing)
    other()
    assert store.get_block("app", "app", "", "mine") is None
    assert store.get_block("app", "app", "", "shared") == "from another thread"


def test_a_block_read_in_a_transaction_keeps_other_writers_out_until_it_ends(store: Any) -> None:
    """Read, then write back what was read plus an edit (a run's ``append``): another
    writer's edit of that block made meanwhile waits for the commit and lands after it,
    instead of being overwritten with the stale read."""
    import threading
    import time

    store.set_block("app", "app", "", "shared", "v0")
    started = threading.Event()

    def other() -> None:
        started.wait()
        store.set_block("app", "app", "", "shared", "theirs")

    def read_modify_write() -> None:
        current = store.get_block("app", "app", "", "shared")
        started.set()
        time.sleep(0.3)  # the other writer tries now
        store.set_block("app", "app", "", "shared", f"{current}\nmine")

    thread = threading.Thread(target=other)
    thread.start()
    store.transaction(read_modify_write)
    thread.join()
    assert store.get_block("app", "app", "", "shared") == "theirs"


# -- a run that fails stores nothing ----------------------------------------------------------


@pytest.mark.parametrize("session_id", ["s", "new"])
def test_a_model_raising_after_tool_edits_leaves_the_store_as_it_was(
    store: Any, flavour: str, session_id: str
) -> None:
    manager = _prepare(flavour, store)
    before = _snapshot(store)
    model = _script(
        _call("set_context", "c1", label="memory", content="edited", action="append"),
        _call("set_context", "c2", label="shared", content="app edit"),
        _call(
            "set_context", "c3", label="skills", content="Say arr.", metadata={"title": "Pirate"}
        ),
        Boom("model down"),
    )
    with pytest.raises(Boom):
        _run(flavour, manager, model, session_id=session_id)
    assert _snapshot(store) == before
    # the session objects the manager caches show the stored block, not the rolled-back edit
    session = manager.sync.get_session("s") if flavour == "async" else manager.get_session("s")
    assert session.get_context_block("memory").content == "first"


def test_after_run_raising_stores_no_message_and_no_state(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)
    before = _snapshot(store)

    def after(ctx: Any) -> None:
        ctx.set_state("after", 1)
        raise Boom("after_run failed")

    hooks = Hooks(before_run=lambda ctx: ctx.set_state("before", 1), after_run=after)
    model = _script(_call("set_context", "c1", label="memory", content="x"), "done")
    for session_id in ("s", "new"):
        with pytest.raises(Boom):
            _run(flavour, manager, model if session_id == "s" else _script("a"), hooks=hooks,
                 session_id=session_id)  # fmt: skip
    assert _snapshot(store) == before


def test_before_run_state_is_rolled_back_with_the_run(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)
    before = _snapshot(store)

    def before_run(ctx: Any) -> None:
        ctx.set_state("user:visits", 2)
        ctx.set_state("app:seen", True)
        ctx.set_state("here", "yes")

    with pytest.raises(Boom):
        _run(flavour, manager, _script(Boom("model down")), hooks=Hooks(before_run=before_run))

    def before_then_raise(ctx: Any) -> None:
        before_run(ctx)
        raise Boom("before_run failed")

    with pytest.raises(Boom):  # a before_run that raises after setting state
        _run(flavour, manager, _script("ok"), hooks=Hooks(before_run=before_then_raise))
    with pytest.raises(Boom):  # the run fails at its very end, in after_run
        _run(flavour, manager, _script(_call("set_context", "c", label="memory", content="x"),
                                       "ok"),
             hooks=Hooks(before_run=before_run, after_run=_raise))  # fmt: skip
    assert _snapshot(store) == before


def _raise(ctx: Any) -> None:
    raise Boom("after_run failed")


def test_a_hook_state_value_the_store_refuses_stores_nothing(store: Any, flavour: str) -> None:
    from threadline.errors import InvalidArgumentError

    manager = _prepare(flavour, store)
    before = _snapshot(store)
    hooks = Hooks(after_run=lambda ctx: ctx.set_state("score", float("inf")))
    with pytest.raises(InvalidArgumentError):
        _run(flavour, manager, _script(_call("set_context", "c", label="memory", content="y"),
                                       "ok"), hooks=hooks)  # fmt: skip
    assert _snapshot(store) == before


class _Flaky:
    """A custom search block whose ``search`` raises ``Abort``."""

    def get(self) -> str:
        return "searchable notes"

    def search(self, query: str) -> str:
        raise Abort("tool aborted")


def test_a_tool_that_raises_leaves_the_store_as_it_was(store: Any, flavour: str) -> None:
    """An error a tool reports (``Error: ...``) drops only that call's edit; one that escapes
    the tool ends the run, and the run's earlier edits are not made either."""
    manager = _prepare(flavour, store)
    before = _snapshot(store)
    manager = manager.with_context("flaky", provider=_Flaky())
    model = _script(
        _call("set_context", "c1", label="memory", content="edited"),
        _call("search_context", "c2", label="flaky", query="tea"),
        "unreachable",
    )
    with pytest.raises(Abort):
        _run(flavour, manager, model)
    assert _snapshot(store) == before

    too_long = "word " * 500  # over the block's max_tokens: the tool answers with an error
    model = _script(_call("set_context", "c1", label="memory", content=too_long), "ok")
    result = _run(flavour, _manager(flavour, store), model)
    assert result.messages[1]["parts"][0]["output"].startswith("Error:")
    assert store.get_block("default", "session", "s", "memory") == "first"


# -- what a run commits ------------------------------------------------------------------------


def test_tools_see_the_runs_own_edits_and_the_commit_replays_them(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)
    model = _script(
        _call("set_context", "c1", label="memory", content="second", action="append"),
        _call(
            "set_context", "c2", label="skills", content="Say arr.", metadata={"title": "Pirate"}
        ),
        _call("load_context", "c3", label="skills", key="pirate"),
        _call("set_context", "c4", label="memory", content="third", action="append"),
        _call(
            "set_context",
            "c5",
            label="notes",
            content="Drinks green tea.",
            metadata={"title": "tea"},
        ),
        _call("search_context", "c6", label="notes", query="green"),
        "done",
    )
    result = _run(flavour, manager, model)
    outputs = [p.get("output") for m in result.messages for p in m["parts"] if "output" in p]
    assert outputs[2] == "Say arr."  # the entry written earlier in the run
    assert outputs[5] == "[tea]\nDrinks green tea."
    assert store.get_block("default", "session", "s", "memory") == "first\nsecond\nthird"
    assert store.get_entry("default", "skills", "pirate").content == "Say arr."
    assert result.stop_reason == "done"


def test_edits_by_other_writers_during_the_run_come_first(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)

    def meanwhile(messages: Any) -> str:  # another writer edits both blocks mid-run
        store.set_block("default", "session", "s", "memory", "theirs")
        store.set_block("default", "app", "", "shared", "their app notes")
        return "done"

    model = _script(
        _call("set_context", "c1", label="memory", content="mine", action="append"),
        _call("set_context", "c2", label="shared", content="my app notes"),
        meanwhile,
    )
    _run(flavour, manager, model)
    assert store.get_block("default", "session", "s", "memory") == "theirs\nmine"
    assert store.get_block("default", "app", "", "shared") == "my app notes"


def test_custom_provider_writes_follow_the_commit_best_effort(
    store: Any, flavour: str, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[tuple[str, int]] = []

    class Notes:
        def __init__(self, fail: bool) -> None:
            self.fail, self.text = fail, ""

        def get(self) -> str:
            return self.text

        def set(self, content: str) -> None:
            calls.append((content, len(store.get_path("default", "s"))))  # after the commit?
            if self.fail:
                raise Boom("remote notes are down")
            self.text = content

    manager = _manager(flavour, store, broken=Notes(True), custom=Notes(False))
    model = _script(
        _call("set_context", "c1", label="broken", content="lost"),
        _call("set_context", "c2", label="custom", content="kept"),
        "done",
    )
    with caplog.at_level(logging.WARNING, logger="threadline.runner"):
        result = _run(flavour, manager, model)
    assert len(result.messages) == 4 and calls == [("lost", 4), ("kept", 4)]
    assert any("broken" in r.getMessage() for r in caplog.records)


def test_a_message_id_stored_with_other_content_is_refused(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)
    old = store.get_path("default", "s")[-1]
    before = _snapshot(store)
    other = {"id": old["id"], "role": "assistant", "content": "NEW answer"}
    with pytest.raises(InvalidMessageError, match="other content"):
        _run(flavour, manager, _script(_call("set_context", "c", label="memory", content="z"),
                                       other))  # fmt: skip
    assert _snapshot(store) == before
    twice = [{"id": "twice", "role": "assistant", "content": c} for c in ("one", "two")]
    with pytest.raises(InvalidMessageError, match="other content"):  # twice in one run
        _run(flavour, manager, _script(twice))
    assert _snapshot(store) == before
    # The same content again (a retried run) is no error: createdAt and invocationId differ.
    same = {"id": old["id"], "role": old["role"], "parts": old["parts"]}
    result = _run(flavour, manager, _script(same))
    assert text_of(result.output) == text_of(old)


def test_stop_reason_says_whether_max_steps_was_reached(store: Any, flavour: str) -> None:
    manager = _manager(flavour, store)

    def forever(messages: Any) -> Any:
        return _call("set_context", f"c{len(messages)}", label="memory", content="again")

    result = _run(flavour, manager, _script(forever, forever, forever), max_steps=3)
    assert result.stop_reason == "max_steps" and len(result.messages) == 4
    result = _run(flavour, manager, _script(forever, "done"), max_steps=2)
    assert result.stop_reason == "done"
    assert _run(flavour, manager, _script("done"), max_steps=1).stop_reason == "done"


def test_the_model_cannot_change_the_messages_the_run_stores(store: Any, flavour: str) -> None:
    def rewrite(messages: Any) -> str:
        messages[-1]["parts"][0]["text"] = "REWRITTEN"
        return "ok"

    result = _run(flavour, _manager(flavour, store), _script(rewrite), "hello")
    assert text_of(store.get_path("default", "s")[0]) == "hello" == text_of(result.messages[0])


def test_the_memory_overlay_is_stored_after_the_commit_only(store: Any, flavour: str) -> None:
    """The model sees the summary of what fell out at once; the overlay is stored after the
    run's commit, so a run that fails stores none."""
    from threadline import create_compact_function

    memory = create_compact_function(lambda prompt: "Earlier talk.")
    manager = _manager(flavour, store)
    for i in range(3):
        _run(flavour, manager, _script(f"answer {i}"), f"q{i}", runs=1, memory=memory)
    before = _snapshot(store)
    overlays = len(store.get_compactions("default", "s"))

    def sees_summary(messages: Any) -> str:
        assert text_of(messages[0]) == "Earlier talk."
        assert len(store.get_compactions("default", "s")) == overlays  # not stored yet
        raise Boom("model down")

    with pytest.raises(Boom):
        _run(flavour, manager, _script(sees_summary), "q3", runs=1, memory=memory)
    assert _snapshot(store) == before
    _run(flavour, manager, _script("answer 3"), "q3", runs=1, memory=memory)
    assert len(store.get_compactions("default", "s")) == overlays + 1


def test_a_skill_loaded_and_unloaded_in_one_run_ends_unloaded(store: Any, flavour: str) -> None:
    manager = _prepare(flavour, store)
    model = _script(
        _call("load_context", "c1", label="skills", key="tea"),
        _call("unload_context", "c2", label="skills", key="tea"),
        "done",
    )
    result = _run(flavour, manager, model)
    assert result.messages[2]["parts"][0]["output"].startswith("Unloaded")
    cached = manager.sync.get_session("s") if flavour == "async" else manager.get_session("s")
    assert cached.loaded_skills == set()
    assert SessionManager(store).get_session("s", user_id=USER).loaded_skills == set()
    stored = store.get_message("default", "s", result.messages[1]["id"])
    assert "unloaded" in json.dumps(stored)


@pytest.mark.parametrize("managers", ["one each", "shared"])
def test_concurrent_runs_appending_to_the_same_blocks_lose_no_line(
    store: Any, managers: str
) -> None:
    """Runs in several threads append to one session block and one app block at once, each
    thread with its own manager (as processes would be) or all through one (one cached
    Session: its commits and prompt refreshes never wait for each other in a cycle): each
    commit re-reads the block under its lock, so every line of every run is kept."""
    import threading

    errors: list[BaseException] = []
    shared = _manager("sync", store)

    def worker(t: int) -> None:
        manager = shared if managers == "shared" else _manager("sync", store)
        try:
            for i in range(4):
                line = f"line {t}-{i}"
                model = _script(
                    _call("set_context", "a", label="memory", content=line, action="append"),
                    _call("set_context", "b", label="shared", content=line, action="append"),
                    "ok",
                )
                Runner(manager, model).run(line, session_id="s", user_id=USER)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads) and errors == []
    expected = {f"line {t}-{i}" for t in range(4) for i in range(4)}
    assert set(store.get_block("default", "session", "s", "memory").split("\n")) == expected
    assert set(store.get_block("default", "app", "", "shared").split("\n")) == expected
    assert len(store.get_path("default", "s")) == 16 * 4


def test_a_run_whose_session_is_created_again_meanwhile_stores_nothing_in_the_new_one(
    store: Any, flavour: str
) -> None:
    """The run's one commit acts on the generation it read (Amendment 11): the session it
    started on is deleted and created again for another user while the model thinks, so the
    commit raises SessionNotFoundError and the new owner's session holds none of the run."""
    from threadline.errors import SessionNotFoundError

    manager = _prepare(flavour, store)

    def recreate(messages: Any) -> Any:
        store.delete_session("default", "s")
        store.create_session("default", "s", user_id="ben")
        return "answer for ana"

    with pytest.raises(SessionNotFoundError):
        _run(flavour, manager, _script(recreate))
    dump = store.dump_session("default", "s")
    assert dump.info.user_id == "ben"
    assert dump.messages == []


def test_a_run_whose_commit_fails_on_a_new_session_leaves_it_unbound(store: Any) -> None:
    """The failed commit created the session and rolled back: the next run creates it."""
    from threadline import Session
    from threadline.errors import InvalidArgumentError

    session = Session(store, session_id="new", user_id=USER)
    bad = {"on": True}

    def after(ctx: Any) -> None:
        if bad["on"]:  # refused by the store inside the commit, after the append
            ctx.set_state("score", float("inf"))

    runner = Runner(session, _script("first", "second"), hooks=Hooks(after_run=after))
    with pytest.raises(InvalidArgumentError):
        runner.run("one")
    assert store.get_session("default", "new") is None
    bad["on"] = False
    assert text_of(runner.run("two").output) == "second"
    assert [text_of(m) for m in session.get_history()] == ["two", "second"]
