"""Agent turns (``Runner`` / ``AsyncRunner``) over a scripted model, on every backend:
windows by runs and by tokens (system prompt and input counted), overflow summarised into an
overlay with nothing deleted, hooks with persisted state, nothing half-appended on failure."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest

import threadline
from threadline import AsyncSessionManager, Hooks, Runner, SessionManager, create_compact_function
from threadline.aio import AsyncRunner
from threadline.compaction import create_async_compact_function
from threadline.formats import from_anthropic
from threadline.messages import text_of
from threadline.tokens import estimate_message_tokens, estimate_tokens


class ScriptedModel:
    """Each run: first a set_context tool call (the runner executes it), then a text answer.
    Records what every call saw."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any]]] = []

    def __call__(self, system: str, messages: list[Any], tools: Any) -> Any:
        self.calls.append((system, [dict(m) for m in messages]))
        last = messages[-1]
        if last["role"] == "user":
            note = text_of(last)
            args = json.dumps({"label": "memory", "content": f"Last said: {note}"})
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{len(self.calls)}", "type": "function",
                 "function": {"name": "set_context", "arguments": args}}]}  # fmt: skip
        return f"Answer to {text_of(messages[-2])}"


class AsyncScriptedModel(ScriptedModel):
    async def __call__(self, system: str, messages: list[Any], tools: Any) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().__call__(system, messages, tools)


def _run(runner: Any, text: str, **options: Any) -> Any:
    if isinstance(runner, AsyncRunner):
        return asyncio.run(runner.arun(text, **options))
    return runner.run(text, **options)


@pytest.fixture(params=["sync", "async"])
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _manager(flavour: str, store: Any, *, notes: bool = True) -> Any:
    """The manager a runner of that flavour takes: the async twin for the async runner."""
    manager: Any = AsyncSessionManager(store) if flavour == "async" else SessionManager(store)
    return manager.with_context("memory", description="Notes") if notes else manager


def _runner(flavour: str, manager: Any, **options: Any) -> tuple[Any, ScriptedModel]:
    model = AsyncScriptedModel() if flavour == "async" else ScriptedModel()
    cls = AsyncRunner if flavour == "async" else Runner
    return cls(manager, model, **options), model


def _maybe_async(flavour: str, fn: Any) -> Any:
    """``fn`` as the flavour's runner takes it: an ``async def`` for the async runner."""
    if flavour != "async":
        return fn

    async def twin(*args: Any) -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return twin


def test_each_call_sees_exactly_the_last_runs_whole_plus_the_system_prompt(
    store: Any, flavour: str
) -> None:
    runner, model = _runner(flavour, _manager(flavour, store), runs=5)
    for i in range(30):
        _run(runner, f"message {i}", session_id="s")
    by_run: dict[str, list[str]] = {}
    for message in store.get_path("default", "s"):
        by_run.setdefault(message["metadata"]["invocationId"], []).append(message["id"])
    runs = list(by_run.values())
    assert len(runs) == 30 and all(len(r) == 3 for r in runs)  # user, tool call+result, answer
    first_calls = [c for c in model.calls if c[1][-1]["role"] == "user"]
    for k, (system, seen) in enumerate(first_calls):
        expected = [i for r in runs[max(0, k - 5) : k] for i in r]
        assert [m["id"] for m in seen[:-1]] == expected
        assert "MEMORY" in system  # the system prompt, refreshed between runs:
        assert k == 0 or f"Last said: message {k - 1}" in system
    # the tool result of each run is whole inside the window (call and output in one part)
    tool_parts = [p for _, seen in first_calls[5:] for m in seen for p in m["parts"]
                  if p["type"].startswith("tool-")]  # fmt: skip
    assert tool_parts and all(p["state"] == "output-available" for p in tool_parts)


def test_system_prompt_input_and_history_stay_within_the_token_budget(
    store: Any, flavour: str
) -> None:
    runner, model = _runner(flavour, _manager(flavour, store), max_context_tokens=300)
    for i in range(25):
        _run(runner, f"message {i} " + "words " * (i % 7), session_id="s")
    first_calls = [c for c in model.calls if c[1][-1]["role"] == "user"]  # input last
    assert len(first_calls) == 25
    for system, seen in first_calls:  # system prompt + history + input within the budget
        assert estimate_tokens(system) + estimate_message_tokens(seen) <= 300
        assert seen[0]["role"] == "user"  # the window never starts inside a run
    seen_counts = [len(seen) for _, seen in first_calls]
    assert max(seen_counts) > 4 and seen_counts[-1] < 3 * 24 + 1  # history kept, then trimmed
    # The budget binds: one more run of history would not have fitted.
    system, seen = first_calls[-1]
    path = store.get_path("default", "s")
    earlier = path[len(path) - len(seen) - 2 : len(path) - len(seen) + 1]
    assert estimate_tokens(system) + estimate_message_tokens([*earlier, *seen]) > 300
    assert len(path) == 75  # nothing deleted


def test_memory_puts_a_summary_of_what_fell_out_first_and_deletes_nothing(
    store: Any, flavour: str
) -> None:
    prompts: list[str] = []

    def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return f"Summary {len(prompts)} of earlier runs."

    # As is: told to summarise all that fell out. The async runner awaits an async summariser.
    memory = create_compact_function(_maybe_async(flavour, summarize))
    runner, model = _runner(flavour, _manager(flavour, store), runs=2, memory=memory)
    results = [_run(runner, f"message {i}", session_id="s") for i in range(8)]
    first_calls = [seen for _, seen in model.calls if seen[-1]["role"] == "user"]
    runs = [[m["id"] for m in r.messages] for r in results]
    for k, seen in enumerate(first_calls):
        window = [i for r in runs[max(0, k - 2) : k] for i in r]
        if k < 3:
            assert [m["id"] for m in seen[:-1]] == window and results[k].overflow == []
            continue
        # Run k-3 fell out: summarised (with the earlier summary), shown first, then 2 runs.
        assert text_of(seen[0]) == f"Summary {k - 2} of earlier runs."
        assert [m["id"] for m in seen[1:-1]] == window
        assert [m["id"] for m in results[k].overflow] == runs[k - 3]
        transcript = prompts[k - 3].split("<<<TRANSCRIPT>>>")[1]
        assert f"message {k - 3}" in transcript and f"message {k - 2}" not in transcript
        assert k == 3 or f"Summary {k - 3} of earlier runs." in prompts[k - 3]
    path = store.get_path("default", "s")
    assert len(path) == 24  # the raw path still holds every message
    compactions = store.get_compactions("default", "s")
    assert compactions[-1].from_message_id == path[0]["id"]  # one growing summary
    assert text_of(SessionManager(store).get_history("s")[0]) == "Summary 5 of earlier runs."


def test_runs_count_anthropic_tool_results_as_part_of_their_run(store: Any, flavour: str) -> None:
    manager = SessionManager(store)
    manager.append_all("s", from_anthropic([
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "rain"}]},
        {"role": "assistant", "content": "Rain."},
    ]))  # fmt: skip
    runner, model = _runner(flavour, _manager(flavour, store, notes=False), runs=1)
    _run(runner, "And tomorrow?", session_id="s")
    seen = model.calls[0][1]
    assert [m["role"] for m in seen] == ["user", "assistant", "user", "assistant", "user"]
    assert seen[:-1] == manager.get_history("s", runs=2)[:4]  # the run get_history counts


def test_hook_state_is_visible_next_run_and_after_reopening(
    file_store_url: str, flavour: str
) -> None:
    seen: list[Any] = []

    def before(ctx: Any) -> None:
        seen.append(ctx.get_state("visits", 0))
        ctx.set_state("visits", ctx.get_state("visits", 0) + 1)

    hooks = Hooks(before_run=_maybe_async(flavour, before))
    with threadline.connect(file_store_url) as store:
        runner, _ = _runner(flavour, _manager(flavour, store, notes=False), hooks=hooks)
        _run(runner, "one", session_id="s")
        _run(runner, "two", session_id="s")
    with threadline.connect(file_store_url) as store:
        runner, _ = _runner(flavour, _manager(flavour, store, notes=False), hooks=hooks)
        _run(runner, "three", session_id="s")
        assert store.get_state("default", "s", None)["visits"] == 3
    assert seen == [0, 1, 2]


def test_a_model_that_raises_leaves_nothing_of_the_run(store: Any, flavour: str) -> None:
    calls = 0

    def failing(system: str, messages: list[Any], tools: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("model down")
        return "fine"

    cls = AsyncRunner if flavour == "async" else Runner
    runner = cls(_manager(flavour, store, notes=False), _maybe_async(flavour, failing))
    _run(runner, "first", session_id="s")
    with pytest.raises(RuntimeError):
        _run(runner, "second", session_id="s")
    assert [text_of(m) for m in store.get_path("default", "s")] == ["first", "fine"]


def test_a_run_without_a_session_id_starts_a_new_uuid_session(store: Any, flavour: str) -> None:
    runner, _ = _runner(flavour, _manager(flavour, store, notes=False))
    result = _run(runner, "hello")
    assert len(result.session_id) == 32
    roles = [m["role"] for m in store.get_path("default", result.session_id)]
    assert roles == ["user", "assistant"]  # its tool call is not a threadline tool here


def test_a_model_raising_after_a_tool_call_stores_nothing_of_the_run(
    store: Any, flavour: str
) -> None:
    manager = SessionManager(store)  # reads the outcome
    model = ScriptedModel()
    calls = 0

    def flaky(system: str, messages: list[Any], tools: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 4:  # the second run's second call, after its tool call ran
            raise RuntimeError("model down")
        return model(system, messages, tools)

    def before(ctx: Any) -> None:
        ctx.set_state("runs", ctx.get_state("runs", 0) + 1)

    cls = AsyncRunner if flavour == "async" else Runner
    hooks = Hooks(before_run=_maybe_async(flavour, before))
    runner = cls(_manager(flavour, store), _maybe_async(flavour, flaky), hooks=hooks)
    _run(runner, "first", session_id="s")
    with pytest.raises(RuntimeError):
        _run(runner, "second", session_id="s")
    path = store.get_path("default", "s")
    assert [text_of(m) for m in path if m["role"] == "user"] == ["first"]
    assert len(path) == 3 and manager.get_state("s") == {"runs": 1}  # hook state not committed
    _run(runner, "third", session_id="s")
    assert len(store.get_path("default", "s")) == 6 and manager.get_state("s") == {"runs": 2}


def test_a_run_can_be_undone_by_its_invocation_id(store: Any, flavour: str) -> None:
    manager = SessionManager(store)
    runner, _ = _runner(flavour, _manager(flavour, store))
    kept = _run(runner, "keep this", session_id="s")
    undone = _run(runner, "undo this", session_id="s")
    invocation = undone.messages[0]["metadata"]["invocationId"]
    assert {m["metadata"]["invocationId"] for m in undone.messages} == {invocation}
    manager.rewind("s", before_invocation_id=invocation)  # ADK-TS rewindBeforeInvocationId
    assert manager.get_history("s") == kept.messages


def test_count_based_compaction_runs_after_each_run(store: Any, flavour: str) -> None:
    offers: list[int] = []

    def summarise(history: list[Any], context: Any) -> Any:
        offers.append(len(history))
        return threadline.CompactResult(history[0]["id"], history[-1]["id"], "Earlier runs.")

    async def asummarise(history: list[Any], context: Any) -> Any:
        return summarise(history, context)

    if flavour == "async":
        manager: Any = AsyncSessionManager(store).on_compaction(asummarise).compact_when(7, 3)
    else:
        manager = SessionManager(store).on_compaction(summarise).compact_when(7, keep=3)
    manager.with_context("memory", description="Notes")
    runner, model = _runner(flavour, manager)
    for i in range(3):
        _run(runner, f"message {i}", session_id="s")
    assert offers == [6]  # 9 messages > 7: all but the last 3 (run 2) summarised
    seen = model.calls[-2][1]  # the last run's first call saw 6 messages, after: summary + 3
    assert len(seen) == 7
    history = SessionManager(store).get_history("s")
    assert [text_of(history[0]), len(history)] == ["Earlier runs.", 4]


def test_the_async_runner_awaits_memory_built_around_an_async_summariser(store: Any) -> None:
    async def summarize(prompt: str) -> str:
        await asyncio.sleep(0)
        return "Earlier: messages 0 and 1."

    manager = AsyncSessionManager(store)
    runner = AsyncRunner(manager, AsyncScriptedModel(), runs=1,
                         memory=create_compact_function(summarize))  # fmt: skip
    for i in range(3):
        asyncio.run(runner.arun(f"message {i}", session_id="s"))
    seen = runner.model.calls[-1][1]  # type: ignore[attr-defined]
    assert text_of(seen[0]) == "Earlier: messages 0 and 1." and text_of(seen[-1]) == "message 2"
    assert len(store.get_path("default", "s")) == 6  # nothing deleted


def test_the_sync_runner_refuses_async_functions_up_front() -> None:
    async def model(system: str, messages: list[Any], tools: Any) -> str:
        return "ok"

    async def hook(ctx: Any) -> None:
        return None

    manager = SessionManager(":memory:")
    with pytest.raises(threadline.InvalidArgumentError, match="AsyncRunner"):
        Runner(manager, model)
    with pytest.raises(threadline.InvalidArgumentError, match="AsyncRunner"):
        Runner(manager, lambda s, m, t: "ok", hooks=Hooks(after_run=hook))
    memory = create_async_compact_function(lambda prompt: "x")
    with pytest.raises(threadline.CompactionError, match="AsyncRunner"):
        Runner(manager, lambda s, m, t: "ok", memory=memory)
    assert manager.list().sessions == []  # nothing ran


def test_runs_budget_and_memory_together_over_thirty_runs(store: Any, flavour: str) -> None:
    """The acceptance scenario in one: 30 runs, ``runs=5``, a token budget and ``memory=``.
    Every model call stays within the budget (system prompt, input and history counted), sees
    at most the last 5 runs, whole and contiguous up to the input, led by the summary of what
    fell out whenever it fits; the raw path keeps every message."""
    summaries: list[str] = []

    def summarize(prompt: str) -> str:
        summaries.append(f"Summary {len(summaries) + 1}.")
        return summaries[-1]

    memory = create_compact_function(_maybe_async(flavour, summarize))
    runner, model = _runner(flavour, _manager(flavour, store), runs=5, max_context_tokens=260,
                            memory=memory)  # fmt: skip
    made: list[int] = []  # how many summaries existed when run k called the model
    results = []
    for i in range(30):
        results.append(_run(runner, f"message {i} " + "words " * (i % 5), session_id="s"))
        made.append(len(summaries))
    runs = [[m["id"] for m in r.messages] for r in results]
    first_calls = [c for c in model.calls if c[1][-1]["role"] == "user"]
    assert len(first_calls) == 30
    trimmed_by_tokens = 0
    for k, (system, seen) in enumerate(first_calls):
        assert estimate_tokens(system) + estimate_message_tokens(seen) <= 260
        assert text_of(seen[-1]).startswith(f"message {k} ")
        history = seen[:-1]
        if history and history[0]["id"].startswith("compaction_"):
            assert text_of(history[0]) == f"Summary {made[k]}."  # the newest summary
            history = history[1:]
        ids = [m["id"] for m in history]
        shown = len(ids) // 3
        assert len(ids) == 3 * shown and shown <= 5  # whole runs only, at most 5
        assert ids == [i for r in runs[k - shown : k] for i in r]  # the newest, contiguous
        trimmed_by_tokens += shown < min(k, 5)
    assert trimmed_by_tokens > 0 and summaries  # the budget bound, and memory ran
    assert any(seen[0]["id"].startswith("compaction_") for _, seen in first_calls)
    assert len(store.get_path("default", "s")) == 90  # nothing deleted


def test_without_a_session_id_every_run_is_a_fresh_conversation(store: Any, flavour: str) -> None:
    # RadarOS: "If sessionId is omitted, a new UUID is generated per run".
    runner, model = _runner(flavour, _manager(flavour, store, notes=False))
    first, second = _run(runner, "hello"), _run(runner, "hello again")
    assert first.session_id != second.session_id
    assert [len(seen) for _, seen in model.calls] == [1, 1]  # neither saw the other
    listed = {s.id for s in SessionManager(store).list().sessions}
    assert listed == {first.session_id, second.session_id}


def test_after_run_state_and_user_scoped_state_persist(store: Any, flavour: str) -> None:
    seen: list[tuple[Any, Any, Any]] = []

    def before(ctx: Any) -> None:
        seen.append((ctx.user_id, ctx.get_state("last"), ctx.get_state("user:runs", 0)))

    def after(ctx: Any) -> None:
        ctx.set_state("last", text_of(ctx.input))
        ctx.set_state("user:runs", ctx.get_state("user:runs", 0) + 1)

    hooks = Hooks(before_run=_maybe_async(flavour, before), after_run=_maybe_async(flavour, after))
    runner, _ = _runner(flavour, _manager(flavour, store, notes=False), hooks=hooks)
    _run(runner, "one", session_id="a", user_id="ana")
    _run(runner, "two", session_id="a", user_id="ana")
    _run(runner, "three", session_id="b", user_id="ana")  # user: state follows the user
    assert seen == [("ana", None, 0), ("ana", "one", 1), ("ana", None, 2)]
    manager = SessionManager(store)
    assert manager.get_state("a", user_id="ana") == {"last": "two", "user:runs": 3}


@pytest.mark.parametrize("after_run", ["none", "async"])
def test_a_cancelled_async_run_is_stored_whole_or_not_at_all(store: Any, after_run: str) -> None:
    """Cancelled at random points, an ``arun`` either leaves nothing or all of the run: its
    messages and the state its hooks set (counted by the hooks: one per stored run)."""
    import random

    rng = random.Random(7)

    def before(ctx: Any) -> None:
        ctx.set_state("runs", ctx.get_state("runs", 0) + 1)

    async def after(ctx: Any) -> None:
        await asyncio.sleep(0.001)
        ctx.set_state("after", ctx.get_state("after", 0) + 1)

    async def model(system: str, messages: list[Any], tools: Any) -> str:
        await asyncio.sleep(0)
        return "ok"

    hooks = Hooks(before_run=before, after_run=after if after_run == "async" else None)

    async def main() -> int:
        runner = AsyncRunner(AsyncSessionManager(store), model, hooks=hooks)
        cancelled = 0
        for i in range(300):
            task = asyncio.ensure_future(runner.arun(f"m{i}", session_id="s"))
            await asyncio.sleep(rng.choice([0, 0.0002, 0.0005, 0.001, 0.002, 0.004]))
            cancelled += task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await runner.aclose()  # a cancelled run's rest goes on: let it end first
        return cancelled

    cancelled = asyncio.run(main())  # returns once every worker thread has finished
    path = store.get_path("default", "s")
    assert cancelled > 30
    assert [m["role"] for m in path] == ["user", "assistant"] * (len(path) // 2)
    # Both outcomes happened: some runs were stored whole, some cancelled before their append
    # (an empty path would pass the checks above and below without testing anything).
    assert 0 < len(path) // 2 < 300
    state = SessionManager(store).get_state("s")
    assert state.get("runs", 0) == len(path) // 2
    if after_run == "async":
        assert state.get("after", 0) == len(path) // 2


def _cancelled_in_after_run(
    store: Any, close: str, fail: bool = False
) -> tuple[list[str], dict[str, Any]]:
    """One ``arun`` cancelled while its async ``after_run`` runs; then ``main`` returns, as
    ``asyncio.run`` ends, after ``close`` ("aclose", "async with" or "nothing")."""

    async def main() -> None:
        in_after = asyncio.Event()

        async def after(ctx: Any) -> None:
            in_after.set()
            await asyncio.sleep(0.05)
            if fail:
                raise RuntimeError("after_run failed")
            ctx.set_state("after", ctx.get_state("after", 0) + 1)

        async def model(system: str, messages: list[Any], tools: Any) -> str:
            return "ok"

        runner = AsyncRunner(AsyncSessionManager(store), model, hooks=Hooks(after_run=after))

        async def cancel_one() -> None:
            task = asyncio.ensure_future(runner.arun("hi", session_id="s"))
            await in_after.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        if close == "async with":
            async with runner:
                await cancel_one()
        else:
            await cancel_one()
            if close == "aclose":
                await runner.aclose()
                await runner.aclose()  # idempotent

    asyncio.run(main())
    path = store.get_path("default", "s")
    return [m["role"] for m in path], SessionManager(store).get_state("s")


@pytest.mark.parametrize("close", ["aclose", "async with"])
def test_aclose_lets_the_rest_of_a_cancelled_run_end_before_the_loop(
    store: Any, close: str
) -> None:
    """The rest of a cancelled run with an async ``after_run`` needs the loop; ``asyncio.run``
    cancels it when ``main`` returns. Awaiting ``aclose()`` (or leaving ``async with``) first
    stores the run whole: its messages and the state its hook set."""
    assert _cancelled_in_after_run(store, close) == (["user", "assistant"], {"after": 1})


def test_the_rest_of_a_cancelled_run_cut_by_the_loop_end_is_logged(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Without ``aclose()`` the loop's end cuts it: said in the log, not silently. Cut in
    ``after_run``, before its commit, the run is not stored at all."""
    with caplog.at_level("ERROR", logger="threadline.aio"):
        roles, state = _cancelled_in_after_run(store, "nothing")
    assert state == {} and roles == []  # the condition the log reports
    assert any("cancelled before it ended" in r.getMessage() for r in caplog.records)


def test_an_error_in_the_rest_of_a_cancelled_run_is_logged(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """No caller is left to receive it: the error is logged with its traceback."""
    with caplog.at_level("ERROR", logger="threadline.aio"):
        _cancelled_in_after_run(store, "aclose", fail=True)
    failed = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failed) == 1 and failed[0].name == "threadline.aio"
    assert failed[0].exc_info is not None and "after_run failed" in str(failed[0].exc_info[1])


def test_on_overflow_receives_what_lies_before_the_window(store: Any, flavour: str) -> None:
    """Without ``memory``, nothing summarises the fall-out: every run hands the handler (and
    ``TurnResult.overflow``) all that lies before the window, oldest first. With ``memory``,
    what an earlier run already summarised is behind the summary: only the new fall-out."""
    handed: list[list[str]] = []
    runner, _ = _runner(flavour, _manager(flavour, store, notes=False), runs=2)
    runner.on_overflow(_maybe_async(flavour, lambda ms: handed.append([m["id"] for m in ms])))
    results = [_run(runner, f"message {i}", session_id="s") for i in range(5)]
    runs = [[m["id"] for m in r.messages] for r in results]
    assert [r.overflow for r in results[:3]] == [[], [], []]
    assert handed == [runs[0], runs[0] + runs[1]]  # runs 3 and 4: all before their window
    assert [[m["id"] for m in r.overflow] for r in results[3:]] == handed

    handed.clear()
    memory = create_compact_function(_maybe_async(flavour, lambda prompt: "Earlier."))
    runner, _ = _runner(flavour, _manager(flavour, store, notes=False), runs=2, memory=memory)
    runner.on_overflow(_maybe_async(flavour, lambda ms: handed.append([m["id"] for m in ms])))
    results = [_run(runner, f"message {i}", session_id="t") for i in range(5)]
    runs = [[m["id"] for m in r.messages] for r in results]
    assert handed == [runs[0], runs[1]]  # each run's fall-out once: the rest is summarised
