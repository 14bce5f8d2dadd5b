"""``Runner.context``: what a run would send, from the run's own steps. Its numbers are checked
against what the model function actually receives in the next run (same system prompt, same
window), under ``runs``, ``max_context_tokens``, the session's ``token_counter`` and summaries;
``read_only_scopes`` keeps app-wide blocks out of a run's memory tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import threadline
from threadline import CompactResult, Runner, SessionManager
from threadline.aio import AsyncRunner
from threadline.errors import InvalidArgumentError
from threadline.tokens import estimate_tokens


class Recorder:
    """A model function recording what it was given, answering with a fixed text."""

    def __init__(self, answer: str = "Sure, noted.") -> None:
        self.calls: list[tuple[str, list[dict[str, Any]]]] = []
        self.answer = answer

    def __call__(self, system: str, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls.append((system, messages))
        return self.answer


def _manager() -> SessionManager:
    return (
        SessionManager(":memory:")
        .with_context("soul", provider="You are a careful travel agent.")
        .with_context("memory", description="Facts", max_tokens=200)
    )


def _fill(runner: Runner, session_id: str, turns: int) -> None:
    for i in range(turns):
        runner.run(f"message number {i} about hotels and beaches", session_id=session_id)


@pytest.mark.parametrize(
    ("runs", "budget"), [(None, None), (2, None), (None, 150), (3, 120), (0, None)]
)
def test_the_view_is_what_the_next_run_sends(runs: int | None, budget: int | None) -> None:
    model = Recorder()
    runner = Runner(_manager(), model, runs=runs, max_context_tokens=budget)
    _fill(runner, "s", 6)
    text = "and one more question"
    view = runner.context("s", user_input=text)
    runner.run(text, session_id="s")
    system, sent = model.calls[-1]
    assert view.system == system
    assert [m["id"] for m in view.messages] == [m["id"] for m in sent[:-1]]
    assert sent[-1]["parts"][0]["text"] == text
    history = runner.target.get_history("s")[:-2]  # type: ignore[union-attr]
    assert [m["id"] for m in view.dropped + view.messages] == [m["id"] for m in history]
    if budget is not None:
        assert view.dropped, "the budget is small enough to drop something"
        assert view.total_tokens <= budget
        assert view.total_tokens == view.system_tokens + view.input_tokens + view.history_tokens


def test_the_view_counts_blocks_and_totals() -> None:
    manager = _manager()
    runner = Runner(manager, Recorder(), max_context_tokens=200)
    manager.get_session("s").replace_context_block("memory", "Likes quiet hotels.")
    _fill(runner, "s", 3)
    view = runner.context("s")
    assert [b.label for b in view.blocks] == ["soul", "memory"]
    assert "Likes quiet hotels." in view.blocks[1].text
    assert view.blocks[0].tokens == estimate_tokens(view.blocks[0].text)
    assert view.system_tokens == estimate_tokens(view.system)
    assert "\n\n".join(b.text for b in view.blocks) == view.system
    doc = view.to_dict()
    assert doc["totals"] == {
        "system": view.system_tokens,
        "input": 0,
        "history": sum(m["tokens"] for m in doc["messages"]),
        "total": view.total_tokens,
        "budget": 200,
        "dropped": sum(view.dropped_tokens),
    }
    assert [m["id"] for m in doc["messages"]] == [m["id"] for m in view.messages]
    assert doc["runs"] is None and doc["max_context_tokens"] == 200


def test_a_frozen_prompt_is_shown_as_frozen_not_as_the_blocks_are_now() -> None:
    manager = _manager().with_cached_prompt()
    model = Recorder()
    runner = Runner(manager, model)
    manager.get_session("s").replace_context_block("memory", "Old fact.")
    runner.run("hello", session_id="s")  # the run's refresh stores the prompt with "Old fact."
    manager.get_session("s").replace_context_block("memory", "New fact.")
    view = runner.context("s")
    runner.run("again", session_id="s")
    assert "Old fact." in view.system and "New fact." not in view.system
    assert view.system == model.calls[-1][0]


def test_the_sessions_token_counter_counts_the_window_and_the_view() -> None:
    """A counter of one token per character: the window and the view both use it."""

    def chars(*, messages: list[dict[str, Any]], system_prompt: str, blocks: Any) -> int:
        text = sum(len(p.get("text", "")) for m in messages for p in m.get("parts", []))
        return text + len(system_prompt)

    manager = _manager().compact_after(10**9, token_counter=chars)
    model = Recorder("ok")
    runner = Runner(manager, model, max_context_tokens=300)
    _fill(runner, "s", 5)
    view = runner.context("s", user_input="q")
    runner.run("q", session_id="s")
    assert view.system_tokens == len(view.system)
    assert view.message_tokens == [
        sum(len(p.get("text", "")) for p in m["parts"]) for m in view.messages
    ]
    assert view.input_tokens == 1
    assert [m["id"] for m in view.messages] == [m["id"] for m in model.calls[-1][1][:-1]]
    # the last run that fell out (a user message and its answer) would not have fit
    assert view.total_tokens <= 300 < view.total_tokens + sum(view.dropped_tokens[-2:])


def test_a_summary_before_the_window_is_shown_and_what_it_covers_is_dropped() -> None:
    manager = _manager().on_compaction(
        lambda history: CompactResult(history[0]["id"], history[3]["id"], "Earlier: hotels.")
    )
    model = Recorder()
    runner = Runner(manager, model, runs=2)
    _fill(runner, "s", 4)  # the summary covers the first two runs; the window the last two
    manager.get_session("s").compact()
    view = runner.context("s")
    assert [m["parts"][0]["text"][:16] for m in view.messages[1::2]] == [
        "message number 2",
        "message number 3",
    ]
    runner.run("next", session_id="s")
    ids = [m["id"] for m in view.messages]
    assert ids[0].startswith("compaction_")
    assert ids == [m["id"] for m in model.calls[-1][1][:-1]]


def test_a_view_stores_nothing_and_a_new_session_is_empty() -> None:
    manager = _manager()
    runner = Runner(manager, Recorder())
    view = runner.context("fresh", user_input="hi")
    assert view.messages == [] and view.dropped == [] and view.input_tokens > 0
    assert manager.get("fresh") is None
    assert runner.context().session_id  # no id: a new (unstored) session, as run() would make


def test_the_async_twin_gives_the_same_view() -> None:
    runner = Runner(_manager(), Recorder(), runs=2)
    _fill(runner, "s", 4)
    twin = AsyncRunner(runner.target, Recorder(), runs=2)
    assert asyncio.run(twin.acontext("s")).to_dict() == runner.context("s").to_dict()


def test_read_only_scopes_keep_app_blocks_out_of_a_runs_tools() -> None:
    manager = _manager().with_context("rules", description="House rules", scope="app")
    calls = iter(
        [
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"c{i}",
                            "type": "function",
                            "function": {"name": "set_context", "arguments": args},
                        }
                        for i, args in enumerate(
                            [
                                '{"label": "rules", "content": "No refunds."}',
                                '{"label": "memory", "content": "Likes tea."}',
                            ]
                        )
                    ],
                }
            ],
            "Done.",
        ]
    )
    seen: list[list[str]] = []

    def model(system: str, messages: Any, tools: Any) -> Any:
        seen.append(tools["set_context"].parameters["properties"]["label"]["enum"])
        return next(calls)

    runner = Runner(manager, model, read_only_scopes=("app",))
    result = runner.run("remember", session_id="s", user_id="ana")
    assert seen[0] == ["memory"]
    outputs = [p["output"] for p in result.messages[1]["parts"]]
    assert outputs[0].startswith("Error:") and outputs[1].startswith("Written to memory")
    session = manager.get_session("s", user_id="ana")
    assert session.get_context_block("rules").content == ""
    assert session.get_context_block("memory").content == "Likes tea."


def test_read_only_scopes_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="read_only_scopes"):
        Runner(_manager(), Recorder(), read_only_scopes=("everything",))
    with pytest.raises(InvalidArgumentError, match="read_only_scopes"):
        Runner(_manager(), Recorder(), read_only_scopes="app")  # type: ignore[arg-type]


def test_runner_context_is_public() -> None:
    assert threadline.ContextView is threadline.runner.ContextView
