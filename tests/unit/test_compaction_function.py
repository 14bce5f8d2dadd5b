"""The default compaction function: planning, prompt, sync/async summarize."""

from __future__ import annotations

import asyncio
import json
import math
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.compaction.function import (
    AsyncCompactFunction,
    build_summary_prompt,
    create_async_compact_function,
    create_compact_function,
    is_tool_result,
    plan_compaction,
    previous_summary_of,
)
from threadline.errors import CompactionError
from threadline.summarizers import extractive
from threadline.tokens import estimate_message_tokens
from threadline.types import CompactContext, CompactResult, Message


def text(mid: str, role: str = "user", body: str | None = None) -> Message:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body or f"text of {mid}"}]}


def convo(n: int) -> list[Message]:
    return [text(f"m{i}", "user" if i % 2 == 0 else "assistant") for i in range(n)]


def call(mid: str, call_id: str, name: str = "search") -> Message:
    part = {"type": f"tool-{name}", "toolCallId": call_id, "state": "input-available", "input": {}}
    return {"id": mid, "role": "assistant", "parts": [part]}


def result(mid: str, call_id: str, name: str = "search", output: Any = "ok") -> Message:
    part = {
        "type": f"tool-{name}",
        "toolCallId": call_id,
        "state": "output-available",
        "input": {},
        "output": output,
    }
    return {"id": mid, "role": "assistant", "parts": [part]}


def ones(messages: list[Message]) -> int:
    """Per-message counter: every message costs 1 token."""
    assert len(messages) == 1
    return 1


class Recorder:
    def __init__(self, reply: str = "## Topic\nT") -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply


# --------------------------------------------------------------------------- planning


def test_too_few_messages() -> None:
    assert plan_compaction(convo(5), protect_head=3, min_tail_messages=2) is None
    assert plan_compaction(convo(6), protect_head=3, min_tail_messages=2, tail_token_budget=0) == (
        3,
        4,
    )


def test_tail_budget_and_min_tail() -> None:
    msgs = convo(20)
    # 5 one-token messages fit a budget of 5: the tail is m15..m19.
    assert plan_compaction(msgs, tail_token_budget=5, count_tokens=lambda m: 1) == (3, 15)
    # min_tail_messages pulls the cut earlier when the budget alone would keep fewer.
    assert plan_compaction(
        msgs, tail_token_budget=1, min_tail_messages=4, count_tokens=lambda m: 1
    ) == (3, 16)
    # The newest message is kept even if it alone exceeds the budget.
    assert plan_compaction(
        msgs, tail_token_budget=0, min_tail_messages=0, count_tokens=lambda m: 100
    ) == (3, 19)


def test_everything_fits_the_tail_means_nothing_to_do() -> None:
    assert plan_compaction(convo(30), tail_token_budget=10_000) is None


def test_protect_head_start_skips_tool_results() -> None:
    msgs = [text("m0"), text("m1", "assistant"), call("m2", "c1"), result("m3", "c1")]
    msgs += convo(10)[4:]
    planned = plan_compaction(msgs, protect_head=3, tail_token_budget=0, count_tokens=lambda m: 1)
    assert planned is not None and planned[0] == 4


def test_cut_moves_back_to_keep_call_with_result() -> None:
    msgs = [*convo(6), call("m6", "c1"), result("m7", "c1"), text("m8")]
    # A budget of 2 would cut between the call (m6) and its result (m7).
    planned = plan_compaction(
        msgs, tail_token_budget=2, min_tail_messages=0, count_tokens=lambda m: 1
    )
    assert planned == (3, 6)


def test_chained_results_move_the_cut_back_further() -> None:
    msgs = [*convo(6), call("m6", "c1"), result("m7", "c1"), result("m8", "c1"), text("m9")]
    planned = plan_compaction(
        msgs, tail_token_budget=2, min_tail_messages=0, count_tokens=lambda m: 1
    )
    assert planned == (3, 6)


def test_combined_call_and_output_is_not_split_material() -> None:
    msgs = [*convo(6), result("m6", "c1"), text("m7"), text("m8")]
    assert not is_tool_result(msgs[6], msgs[5])
    planned = plan_compaction(
        msgs, tail_token_budget=2, min_tail_messages=0, count_tokens=lambda m: 1
    )
    assert planned == (3, 7)


def test_tool_result_detection_shapes() -> None:
    c, r = call("a", "c1"), result("b", "c1")
    assert is_tool_result(r, c)
    assert not is_tool_result(result("b", "other"), c)  # ids present and different
    assert not is_tool_result(r, text("x"))
    role_tool: Message = {"id": "t", "role": "tool", "parts": [{"type": "text", "text": "42"}]}
    assert is_tool_result(role_tool, c)
    openai_style: Message = {
        "id": "a",
        "role": "assistant",
        "parts": [],
        "tool_calls": [{"id": "c9", "type": "function"}],
    }
    assert is_tool_result({**role_tool, "tool_call_id": "c9"}, openai_style)
    assert not is_tool_result({**role_tool, "tool_call_id": "c8"}, openai_style)
    mixed = {**r, "parts": [*r["parts"], {"type": "text", "text": "and here is why"}]}
    assert not is_tool_result(mixed, c)
    no_ids_call = {
        "id": "a",
        "role": "assistant",
        "parts": [{"type": "tool-x", "state": "input-available"}],
    }
    no_ids_result = {"id": "b", "role": "assistant", "parts": [{"type": "tool-x", "output": 1}]}
    assert is_tool_result(no_ids_result, no_ids_call)


def test_overlay_only_middle_is_nothing() -> None:
    msgs = [*convo(3), {**text("compaction_c1", "assistant"), "id": "compaction_c1"}, *convo(6)[3:]]
    planned = plan_compaction(
        msgs, tail_token_budget=0, min_tail_messages=3, count_tokens=lambda m: 1
    )
    assert planned is None


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError):
        plan_compaction(convo(3), protect_head=-1)
    with pytest.raises(ValueError):
        create_compact_function(lambda p: p, tail_token_budget=-5)
    with pytest.raises(ValueError):
        create_compact_function("not callable")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- the function


def test_result_and_prompt_for_a_plain_conversation() -> None:
    summarize = Recorder("  ## Topic\nTrip  \n")
    fn = create_compact_function(summarize, tail_token_budget=0, token_counter=ones)
    msgs = convo(10)
    res = fn(msgs, CompactContext())
    assert res == CompactResult("m3", "m7", "## Topic\nTrip")
    (prompt,) = summarize.prompts
    for section in ("## Topic", "## Key Points", "## Current State", "## Open Items"):
        assert section in prompt
    assert "[user]\ntext of m4" in prompt and "[assistant]\ntext of m3" in prompt
    assert "text of m2" not in prompt and "text of m8" not in prompt
    assert "invent" in prompt.lower()


def test_summary_budget_in_prompt() -> None:
    long = [text(f"m{i}", body="word " * 400) for i in range(10)]
    summarize = Recorder()
    create_compact_function(summarize, tail_token_budget=0, token_counter=ones)(long)
    middle = long[3:8]
    target = max(100, math.floor(0.2 * estimate_message_tokens(middle)))
    assert target > 100
    assert f"about {target} tokens" in summarize.prompts[0]
    short = Recorder()
    create_compact_function(short, tail_token_budget=0, token_counter=ones)(convo(10))
    assert "about 100 tokens" in short.prompts[0]


def test_blank_or_none_summary_gives_none() -> None:
    for reply in ("", "   \n", None):
        fn = create_compact_function(lambda p, r=reply: r, tail_token_budget=0)
        assert fn(convo(10)) is None


def test_non_string_summary_raises() -> None:
    fn = create_compact_function(lambda p: 42, tail_token_budget=0)  # type: ignore[arg-type,return-value]
    with pytest.raises(CompactionError):
        fn(convo(10))


def test_summarize_not_called_when_nothing_to_compact() -> None:
    summarize = Recorder()
    assert create_compact_function(summarize)(convo(4)) is None
    assert summarize.prompts == []


def test_previous_summary_is_updated_and_overlay_excluded_from_middle() -> None:
    overlay = {
        "id": "compaction_c1",
        "role": "assistant",
        "parts": [{"type": "text", "text": "## Topic\nEarlier summary text"}],
    }
    msgs = [*convo(3), overlay, *[text(f"n{i}") for i in range(6)]]
    summarize = Recorder()
    fn = create_compact_function(summarize, tail_token_budget=0, token_counter=ones)
    res = fn(msgs)
    assert res is not None
    assert (res.from_message_id, res.to_message_id) == ("n0", "n3")
    prompt = summarize.prompts[0]
    assert "Earlier summary text" in prompt and "Update" in prompt
    assert prompt.count("compaction_c1") == 0
    assert previous_summary_of(msgs) == "## Topic\nEarlier summary text"
    assert "Update" not in build_summary_prompt(convo(2), None, 100)


def test_tool_parts_rendered_as_json_and_clipped() -> None:
    output = {"rows": [{"city": "Oslo", "temp": 3}], "note": "ünïcødé"}
    big = "z" * 2000
    msgs = [
        *convo(3),
        result("t1", "c1", "weather", output),
        result("t2", "c2", "fetch", big),
        {
            **call("t3", "c3", "lookup"),
            "parts": [{**call("t3", "c3")["parts"][0], "input": {"q": [1, 2]}}],
        },
        *convo(8)[3:],
    ]
    summarize = Recorder()
    create_compact_function(summarize, tail_token_budget=0, token_counter=ones)(msgs)
    prompt = summarize.prompts[0]
    assert json.dumps(output, separators=(",", ":"), ensure_ascii=False) in prompt
    assert "weather" in prompt and "fetch" in prompt
    assert "[object Object]" not in prompt and "{'rows'" not in prompt
    assert "z" * 500 + "... [truncated 2000 chars]" in prompt and "z" * 501 not in prompt
    assert '"q":[1,2]' in prompt
    assert "output: (none yet)" in prompt


# --------------------------------------------------------------------------- token counters


def test_own_counter_wins_and_is_called_per_message() -> None:
    calls: list[list[Message]] = []

    def own(messages: list[Message]) -> int:
        calls.append(messages)
        return 1

    def session(**kwargs: Any) -> int:
        raise AssertionError("session counter must not be used")

    fn = create_compact_function(Recorder(), tail_token_budget=2, token_counter=own)
    assert fn(convo(10), CompactContext(token_counter=session)) is not None
    assert calls and all(len(c) == 1 for c in calls)


def test_session_counter_called_with_keywords() -> None:
    seen: list[dict[str, Any]] = []

    def session(*, messages: list[Message], system_prompt: str, blocks: list[Any]) -> int:
        seen.append({"messages": messages, "system_prompt": system_prompt, "blocks": blocks})
        return 1

    fn = create_compact_function(Recorder(), tail_token_budget=2)
    res = fn(convo(10), CompactContext(token_counter=session))
    assert res is not None and res.to_message_id == "m7"
    assert seen and all(len(s["messages"]) == 1 and s["system_prompt"] == "" for s in seen)
    assert all(s["blocks"] == [] for s in seen)


def test_heuristic_counter_by_default() -> None:
    msgs = [text(f"m{i}", body="x" * 400) for i in range(10)]  # 104 tokens each
    fn = create_compact_function(Recorder(), tail_token_budget=350, min_tail_messages=1)
    res = fn(msgs)
    assert res is not None and res.to_message_id == "m6"  # m7..m9 = 312 tokens fit


# --------------------------------------------------------------------------- async


def test_async_summarize_in_sync_call_raises_without_warning() -> None:
    async def summarize(prompt: str) -> str:
        return "S"

    fn = create_compact_function(summarize, tail_token_budget=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would fail the test
        with pytest.raises(CompactionError, match="acompact"):
            fn(convo(10))


def test_acompact_accepts_sync_and_async_summarize() -> None:
    async def summarize(prompt: str) -> str:
        await asyncio.sleep(0)
        return "async summary"

    fn = create_compact_function(summarize, tail_token_budget=0)
    res = asyncio.run(fn.acompact(convo(10)))
    assert res == CompactResult("m3", "m7", "async summary")
    sync_fn = create_compact_function(lambda p: "sync", tail_token_budget=0)
    assert asyncio.run(sync_fn.acompact(convo(10), None)) == CompactResult("m3", "m7", "sync")


def test_create_async_compact_function() -> None:
    async def summarize(prompt: str) -> str:
        return "S"

    fn = create_async_compact_function(summarize, tail_token_budget=0, protect_head=1)
    assert isinstance(fn, AsyncCompactFunction)
    assert asyncio.run(fn(convo(10), CompactContext())) == CompactResult("m1", "m7", "S")
    assert asyncio.run(fn(convo(2))) is None


def test_end_to_end_with_extractive_summarizer() -> None:
    msgs = [
        text("u0", "user", "I want to plan a trip to Oslo in March."),
        text("a0", "assistant", "Great, Oslo in March is cold, around 2 degrees."),
        text("u1", "user", "My budget is 1500 euros and I prefer trains."),
        text("a1", "assistant", "Noted: 1500 euros, trains preferred."),
        text("u2", "user", "Can you also check hotels near the central station?"),
        text("a2", "assistant", "I will look at hotels next."),
        text("u3", "user", "Thanks."),
        text("a3", "assistant", "You're welcome."),
    ]
    fn = create_compact_function(extractive(), protect_head=1, tail_token_budget=0)
    res = fn(msgs)
    assert res is not None and (res.from_message_id, res.to_message_id) == ("a0", "a2")
    assert res.summary.startswith("## Topic\n")
    assert "1500 euros" in res.summary


# --------------------------------------------------------------------------- properties


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    msgs: list[Message] = []
    for i in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["text", "text", "pair", "combined"]))
        if kind == "pair":
            msgs += [call(f"c{i}", f"id{i}"), result(f"r{i}", f"id{i}")]
        elif kind == "combined":
            msgs.append(result(f"x{i}", f"id{i}"))
        else:
            msgs.append(text(f"t{i}", draw(st.sampled_from(["user", "assistant"]))))
    return msgs


@given(
    conversations(),
    st.integers(0, 5),
    st.integers(0, 12),
    st.integers(0, 4),
)
def test_property_plan_respects_boundaries(
    msgs: list[Message], protect_head: int, budget: int, min_tail: int
) -> None:
    planned = plan_compaction(
        msgs,
        protect_head=protect_head,
        tail_token_budget=budget,
        min_tail_messages=min_tail,
        count_tokens=lambda m: 1,
    )
    if planned is None:
        return
    start, end = planned
    assert protect_head <= start < end <= len(msgs) - 1
    if len(msgs) - min_tail >= start:
        assert end <= len(msgs) - min_tail
    assert not (start > 0 and is_tool_result(msgs[start], msgs[start - 1]))
    assert not is_tool_result(msgs[end], msgs[end - 1])
    # Each call in the middle has its result in the middle too (never split).
    for i in range(start, end):
        if msgs[i]["id"].startswith("c"):
            assert i + 1 < end


def test_tail_budget_on_a_tool_heavy_history_with_a_custom_counter() -> None:
    # Tool results are expensive (1000 tokens each), everything else costs 10. With a 2500-token
    # tail budget the tail can hold two results; the cut must then move back so the call that
    # each kept result answers stays with it.
    history: list[Message] = [text("u0"), text("a0", "assistant"), text("u1")]
    for k in range(5):
        history += [call(f"c{k}", f"id{k}"), result(f"r{k}", f"id{k}", output="x" * 50)]
    history.append(text("final", "assistant"))

    def weighted(messages: list[Message]) -> int:
        (message,) = messages
        part = message["parts"][0] if message["parts"] else {}
        return 1000 if part.get("state") == "output-available" else 10

    recorder = Recorder()
    fn = create_compact_function(recorder, tail_token_budget=2500, token_counter=weighted)
    res = fn(history, None)
    assert res is not None
    ids = [m["id"] for m in history]
    tail = ids[ids.index(res.to_message_id) + 1 :]
    assert tail == ["c3", "r3", "c4", "r4", "final"]  # two results + their calls + the last turn
    assert res.from_message_id == "c0" and res.to_message_id == "r2"
    assert sum(weighted([m]) for m in history if m["id"] in tail) <= 2500


def test_parallel_tool_results_stay_with_their_call() -> None:
    """Two calls answered by two ``tool`` messages (OpenAI's shape): no cut between them."""
    from threadline.compaction.function import plan_compaction
    from threadline.formats import from_openai_chat

    chat = [{"role": "user", "content": f"q{i}"} for i in range(3)]
    chat.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                for k in (1, 2)
            ],
        }
    )
    chat += [{"role": "tool", "tool_call_id": f"c{k}", "content": "x" * 400} for k in (1, 2)]
    chat += [{"role": "user", "content": "next"}, {"role": "assistant", "content": "done"}]
    messages = [{**m, "id": f"m{i}"} for i, m in enumerate(from_openai_chat(chat))]
    for budget in range(0, 400, 5):
        plan = plan_compaction(messages, protect_head=1, tail_token_budget=budget)
        if plan is not None:
            start, end = plan
            assert end not in (4, 5) and start not in (4, 5), (budget, plan)  # results 4 and 5
