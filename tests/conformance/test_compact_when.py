"""Count-based automatic compaction: ``.compact_when(min_messages, keep)`` (ADK-TS
``EventsCompactionConfig(minEventsBeforeCompact=50, targetEvents=20)``) on Session,
SessionManager, their async twins and a provider-backed session, on every backend.

The seed's numbers: compact when the active path holds more than 50 visible messages, keep the
last 20; what was compacted becomes one summary overlay (nothing deleted).
"""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest

from threadline import (
    AsyncSession,
    AsyncSessionManager,
    CompactContext,
    CompactResult,
    InvalidArgumentError,
    Session,
    SessionManager,
    create_compact_function,
)
from threadline.compaction import create_async_compact_function
from threadline.compaction.function import TRANSCRIPT_END, TRANSCRIPT_START
from threadline.messages import assistant, text_of, user

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_provider.py"


def turn(i: int) -> dict[str, Any]:
    """Message ``m{i}``: even ones from the user, odd ones from the assistant."""
    make = user if i % 2 == 0 else assistant
    return make(f"message {i}", id=f"m{i}")


def ids_of(history: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in history]


class SummariseAll:
    """A compaction function summarising everything it is offered (recording each offer)."""

    def __init__(self) -> None:
        self.offers: list[list[str]] = []
        self.contexts: list[CompactContext] = []

    def __call__(self, history: list[dict[str, Any]], context: CompactContext) -> CompactResult:
        self.offers.append(ids_of(history))
        self.contexts.append(context)
        return CompactResult(history[0]["id"], history[-1]["id"], f"summary {len(self.offers)}")


def test_the_seed_numbers_50_and_20(store: Any) -> None:
    fn = SummariseAll()
    session = Session.create(store).for_session("s").on_compaction(fn).compact_when(50, keep=20)
    for i in range(50):
        session.append_message(turn(i))
    assert fn.offers == [] and session.get_compactions() == []  # 50 is not more than 50
    session.append_message(turn(50))  # 51 visible: compact all but the last 20
    assert fn.offers == [[f"m{i}" for i in range(31)]]
    assert fn.contexts[0].summarize_all is True
    history = session.get_history()
    assert len(history) == 21
    assert text_of(history[0]) == "summary 1"
    assert ids_of(history[1:]) == [f"m{i}" for i in range(31, 51)]
    assert session.get_path_length() == 51  # nothing deleted

    # The summary counts as one visible message: 30 more appends reach 51 visible again.
    for i in range(51, 80):
        session.append_message(turn(i))
    assert len(fn.offers) == 1 and len(session.get_history()) == 50
    session.append_message(turn(80))
    summary_id = f"compaction_{session.get_compactions()[0].id}"
    assert fn.offers[1] == [summary_id, *[f"m{i}" for i in range(31, 61)]]
    history = session.get_history()
    assert [text_of(history[0]), *ids_of(history[1:])] == [
        "summary 2",
        *[f"m{i}" for i in range(61, 81)],
    ]
    latest = session.get_compactions()[-1]  # one growing summary, from the first message
    assert (latest.from_message_id, latest.to_message_id) == ("m0", "m60")
    assert len(session.get_history(leaf_id="m80")) == 21


def test_a_tool_call_and_its_result_stay_together_in_the_kept_part(store: Any) -> None:
    fn = SummariseAll()
    session = Session.create(store).for_session("t").on_compaction(fn).compact_when(4, keep=2)
    call = {"type": "tool-weather", "toolCallId": "c1", "state": "input-available", "input": {}}
    result = {**call, "state": "output-available", "output": "sunny"}
    session.append_messages(
        [
            user("hi", id="u1"),
            assistant("hello", id="a1"),
            user("weather?", id="u2"),
            {"id": "a2", "role": "assistant", "parts": [call]},
            {"id": "t2", "role": "tool", "parts": [result]},
        ]
    )
    # keep=2 would start at the result t2: the kept part starts at its call a2 instead.
    assert fn.offers == [["u1", "a1", "u2"]]
    assert ids_of(session.get_history())[1:] == ["a2", "t2"]


def test_keep_zero_summarises_everything(store: Any) -> None:
    fn = SummariseAll()
    session = Session.create(store).for_session("z").on_compaction(fn).compact_when(3, keep=0)
    session.append_messages([turn(i) for i in range(4)])
    assert fn.offers == [["m0", "m1", "m2", "m3"]]
    assert [text_of(m) for m in session.get_history()] == ["summary 1"]


def test_the_default_compact_function_summarises_all_it_is_offered(store: Any) -> None:
    prompts: list[str] = []

    def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return f"## Topic\nround {len(prompts)}"

    fn = create_compact_function(summarize)  # its own planning would keep a 20k-token tail
    session = Session.create(store).for_session("d").on_compaction(fn).compact_when(6, keep=2)
    session.append_messages([turn(i) for i in range(7)])
    transcript = prompts[0].split(TRANSCRIPT_START)[1].split(TRANSCRIPT_END)[0]
    assert [f"message {i}" in transcript for i in range(7)] == [True] * 5 + [False] * 2
    assert ids_of(session.get_history())[1:] == ["m5", "m6"]
    session.append_messages([turn(i) for i in range(7, 11)])  # 3 + 4 = 7 visible
    assert "round 1" in prompts[1]  # the previous summary is updated, not lost
    compactions = session.get_compactions()
    assert (compactions[-1].from_message_id, compactions[-1].to_message_id) == ("m0", "m8")
    assert text_of(session.get_history()[0]) == "## Topic\nround 2"


def test_the_manager_compacts_every_session_after_append_all(store: Any) -> None:
    fn = SummariseAll()
    manager = SessionManager(store).on_compaction(fn).compact_when(50, keep=20)
    manager.append_all("a", [turn(i) for i in range(50)])
    assert fn.offers == []
    stored = manager.append_all("a", [turn(50)])
    assert ids_of(stored) == ["m50"]  # the append returns what it stored
    assert len(manager.get_history("a")) == 21
    manager.append_all("b", [turn(i) for i in range(60)])  # one transaction, one compaction
    assert fn.offers[-1] == [f"m{i}" for i in range(40)]
    assert ids_of(manager.get_history("b"))[1:] == [f"m{i}" for i in range(40, 60)]


def test_with_max_messages_the_overflow_is_still_reported(store: Any) -> None:
    fn = SummariseAll()
    manager = SessionManager(store, max_messages=5).on_compaction(fn).compact_when(8, keep=3)
    manager.append_all("s", [turn(i) for i in range(8)])
    result = manager.append_all("s", [turn(8)])
    # m3 was pushed out; m4 and m5 left the window into the summary.
    assert ids_of(result.overflow) == ["m3", "m4", "m5"]
    assert fn.offers == [[f"m{i}" for i in range(6)]]
    assert ids_of(manager.get_history("s", limit=None))[1:] == ["m6", "m7", "m8"]


def test_only_the_active_path_is_compacted(store: Any) -> None:
    fn = SummariseAll()
    session = Session.create(store).for_session("b").on_compaction(fn).compact_when(4, keep=1)
    session.append_messages([turn(i) for i in range(4)])
    session.append_message(user("other branch", id="x1"), parent_id="m1")
    assert fn.offers == []  # the new head's path holds 3 messages
    session.append_messages([assistant("ok", id="x2"), user("more", id="x3")])
    assert fn.offers == [["m0", "m1", "x1", "x2"]]
    assert ids_of(session.get_history("m3")) == ["m0", "m1", "m2", "m3"]  # untouched branch


def test_a_declining_or_failing_function_never_fails_the_append(store: Any) -> None:
    declined: list[int] = []

    def decline(history: list[dict[str, Any]]) -> None:
        declined.append(len(history))

    session = Session.create(store).for_session("n").on_compaction(decline).compact_when(2, 1)
    session.append_messages([turn(i) for i in range(3)])
    assert declined == [2] and session.get_compactions() == []

    errors: list[BaseException] = []

    def fail(history: list[dict[str, Any]]) -> None:
        raise RuntimeError("summariser down")

    failing = (
        Session.create(store)
        .for_session("f")
        .on_compaction(fail)
        .compact_when(2, keep=1)
        .on_compaction_error(errors.append)
    )
    stored = failing.append_messages([turn(i) for i in range(3)])
    assert len(stored) == 3 and failing.get_path_length() == 3
    assert [str(e) for e in errors] == ["summariser down"]


def test_combines_with_compact_after(store: Any) -> None:
    fn = SummariseAll()
    session = (
        Session.create(store)
        .for_session("c")
        .on_compaction(fn)
        .compact_after(10**9)  # never reached
        .compact_when(3, keep=1)
    )
    session.append_messages([turn(i) for i in range(4)])
    assert fn.offers == [["m0", "m1", "m2"]]


@pytest.mark.parametrize(
    ("min_messages", "keep"), [(5, 5), (5, 6), (-1, 0), (5, -1), (True, 0), (5, 1.5)]
)
def test_bad_arguments_are_refused(min_messages: Any, keep: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        Session.create(":memory:").compact_when(min_messages, keep)
    with pytest.raises(InvalidArgumentError):
        SessionManager(":memory:").compact_when(min_messages, keep)
    with pytest.raises(InvalidArgumentError):
        AsyncSession.create(":memory:").compact_when(min_messages, keep)


def test_a_provider_backed_session_compacts_through_its_provider() -> None:
    provider = runpy.run_path(str(EXAMPLE))["DictProvider"]()
    fn = SummariseAll()
    session = Session.create(provider).on_compaction(fn).compact_when(4, keep=2)
    session.append_messages([turn(i) for i in range(5)])
    assert fn.offers == [["m0", "m1", "m2"]]
    assert [text_of(m) for m in session.get_history()] == ["summary 1", "message 3", "message 4"]
    for i in range(5, 7):
        session.append_message(turn(i))
    summary_id = f"compaction_{provider.compactions[0].id}"
    assert fn.offers[1] == [summary_id, "m3", "m4"]
    assert ids_of(session.get_history())[1:] == ["m5", "m6"]
    assert len(provider.messages) == 7  # nothing deleted


def test_the_async_session_awaits_an_async_function_with_the_same_numbers(store: Any) -> None:
    offers: list[list[str]] = []

    async def summarise(history: list[dict[str, Any]], context: CompactContext) -> CompactResult:
        assert context.summarize_all
        offers.append(ids_of(history))
        return CompactResult(history[0]["id"], history[-1]["id"], f"summary {len(offers)}")

    async def main() -> list[dict[str, Any]]:
        session = (
            AsyncSession.create(store).for_session("s").on_compaction(summarise).compact_when(50)
        )
        for i in range(50):
            await session.append_message(turn(i))
        assert offers == []
        await session.append_messages([turn(50)])
        assert offers == [[f"m{i}" for i in range(31)]]
        for i in range(51, 81):
            await session.append_message(turn(i))
        return list(await session.get_history())

    history = asyncio.run(main())
    assert len(offers) == 2 and offers[1][1:] == [f"m{i}" for i in range(31, 61)]
    assert [text_of(history[0]), *ids_of(history[1:])] == [
        "summary 2",
        *[f"m{i}" for i in range(61, 81)],
    ]


def test_the_async_manager_with_an_async_default_function(store: Any) -> None:
    async def summarize(prompt: str) -> str:
        return "## Topic\nearlier"

    async def main() -> list[dict[str, Any]]:
        manager = (
            AsyncSessionManager(store)
            .on_compaction(create_async_compact_function(summarize))
            .compact_when(4, keep=2)
        )
        for i in range(5):
            await manager.append("s", turn(i))
        return list(await manager.get_history("s"))

    history = asyncio.run(main())
    assert [text_of(history[0]), *ids_of(history[1:])] == ["## Topic\nearlier", "m3", "m4"]


def test_the_async_twin_runs_a_sync_function_too(store: Any) -> None:
    fn = SummariseAll()

    async def main() -> list[dict[str, Any]]:
        session = AsyncSession.create(store).for_session("y").on_compaction(fn).compact_when(2, 1)
        await session.append_messages([turn(i) for i in range(3)])
        return list(await session.get_history())

    assert ids_of(asyncio.run(main()))[1:] == ["m2"] and fn.offers == [["m0", "m1"]]
