"""Session compaction.

Black-box: only the public API of ``threadline``; compaction functions and token counters below
are the documented user extension points.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from threadline import (
    CompactContext,
    Compaction,
    CompactionError,
    CompactResult,
    ContextBlock,
    Session,
    SessionManager,
    StaticContext,
    create_compact_function,
)
from threadline.messages import assistant, text_of, user


def new(store: Any, sid: str = "c1") -> Session:
    return Session.create(store).for_session(sid)


def chat(session: Session, n: int, prefix: str = "m") -> list[str]:
    """Append ``n`` alternating user/assistant messages with ids prefix0..prefix{n-1}."""
    ids = []
    for i in range(n):
        make = user if i % 2 == 0 else assistant
        session.append_message(make(f"message {i} about topic {i}", id=f"{prefix}{i}"))
        ids.append(f"{prefix}{i}")
    return ids


def ids_of(history: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in history]


class Recorder:
    """A compaction function that records its calls and returns a scripted result."""

    def __init__(self, result: Any = None) -> None:
        self.result = result
        self.calls: list[tuple[list[dict[str, Any]], Any]] = []

    def __call__(self, messages: list[dict[str, Any]], context: CompactContext) -> Any:
        self.calls.append(([dict(m) for m in messages], context))
        return self.result(messages) if callable(self.result) else self.result


# ---------------------------------------------------------------------------- compact()


def test_compact_without_function_raises(store: Any) -> None:
    session = new(store)
    chat(session, 3)
    with pytest.raises(CompactionError):
        session.compact()
    assert session.get_compactions() == []


def test_function_returning_none_stores_nothing(store: Any) -> None:
    fn = Recorder(None)
    session = new(store).on_compaction(fn)
    ids = chat(session, 4)
    assert session.compact() is None
    assert session.get_compactions() == []
    assert len(fn.calls) == 1
    messages, context = fn.calls[0]
    assert ids_of(messages) == ids
    assert isinstance(context, CompactContext)
    assert context.token_counter is None  # no session counter given


def test_compact_stores_overlay_and_returns_result(store: Any) -> None:
    session = new(store).on_compaction(Recorder(CompactResult("m1", "m3", "S1")))
    chat(session, 6)
    result = session.compact()
    assert result == CompactResult("m1", "m3", "S1")
    compactions = session.get_compactions()
    assert len(compactions) == 1
    overlay = compactions[0]
    assert isinstance(overlay, Compaction)
    assert (overlay.from_message_id, overlay.to_message_id, overlay.summary) == ("m1", "m3", "S1")
    history = session.get_history()
    assert ids_of(history) == ["m0", f"compaction_{overlay.id}", "m4", "m5"]
    assert text_of(history[1]) == "S1"
    assert history[1]["role"] == "assistant"
    # an overlay message's createdAt is that of the last message it covers
    assert history[1]["createdAt"] == session.get_message("m3")["createdAt"]  # type: ignore[index]
    assert overlay.created_at.utcoffset() is not None
    # originals are never deleted
    assert session.get_path_length() == 6
    assert session.get_message("m2") is not None


@pytest.mark.parametrize("bad_to", ["nope", "b1"])
def test_result_with_to_not_on_path_stores_nothing(store: Any, bad_to: str) -> None:
    session = new(store)
    chat(session, 4)
    # a sibling branch: b1 is in the session but not on the head path
    session.append_message(user("branch", id="b1"), parent_id="m1")
    session.checkout("m3")
    session.on_compaction(Recorder(CompactResult("m0", bad_to, "S")))
    assert session.compact() is None
    assert session.get_compactions() == []


def test_single_parameter_function_gets_messages_only(store: Any) -> None:
    seen: list[list[dict[str, Any]]] = []

    def summarize_all(messages: list[dict[str, Any]]) -> CompactResult:
        seen.append(messages)
        return CompactResult(messages[0]["id"], messages[-2]["id"], "one-arg summary")

    session = new(store).on_compaction(summarize_all)
    chat(session, 4)
    assert session.compact() == CompactResult("m0", "m2", "one-arg summary")
    assert len(seen) == 1 and ids_of(seen[0]) == ["m0", "m1", "m2", "m3"]


def test_two_parameter_function_gets_context_with_session_counter(store: Any) -> None:
    def counter(*, messages: Any, system_prompt: Any, blocks: Any) -> int:
        return 0

    fn = Recorder(None)
    session = new(store).on_compaction(fn).compact_after(10**9, token_counter=counter)
    chat(session, 3)
    session.compact()
    context = fn.calls[-1][1]
    assert isinstance(context, CompactContext)
    assert context.token_counter is not None
    assert callable(context.token_counter)


def test_explicit_compact_propagates_function_exception(store: Any) -> None:
    def broken(messages: list[dict[str, Any]], context: CompactContext) -> CompactResult:
        raise RuntimeError("summarizer down")

    session = new(store).on_compaction(broken)
    chat(session, 3)
    with pytest.raises(RuntimeError, match="summarizer down"):
        session.compact()
    assert session.get_compactions() == []


def test_iterative_compaction_extends_earliest_visible_overlay(store: Any) -> None:
    fn = Recorder(CompactResult("m1", "m3", "S1"))
    session = new(store).on_compaction(fn)
    chat(session, 6)
    session.compact()
    first = session.get_compactions()[0]
    chat(session, 4, prefix="n")  # n0..n3 after m5
    fn.result = CompactResult("m4", "n1", "S2")
    assert session.compact() is not None
    # the function saw the history with the first overlay applied
    assert ids_of(fn.calls[-1][0]) == [
        "m0",
        f"compaction_{first.id}",
        "m4",
        "m5",
        "n0",
        "n1",
        "n2",
        "n3",
    ]
    compactions = session.get_compactions()
    assert len(compactions) == 2  # superseded overlay stays
    assert compactions[0] == first
    second = compactions[1]
    assert (second.from_message_id, second.to_message_id, second.summary) == ("m1", "n1", "S2")
    history = session.get_history()
    assert ids_of(history) == ["m0", f"compaction_{second.id}", "n2", "n3"]
    assert text_of(history[1]) == "S2"
    # one growing overlay: a third round still starts at m1
    fn.result = CompactResult("n2", "n2", "S3")
    session.compact()
    third = session.get_compactions()[-1]
    assert (third.from_message_id, third.to_message_id) == ("m1", "n2")
    assert ids_of(session.get_history()) == ["m0", f"compaction_{third.id}", "n3"]
    assert [c.summary for c in session.get_compactions()] == ["S1", "S2", "S3"]


def test_compact_on_a_branch_ignores_sibling_overlays(store: Any) -> None:
    session = new(store)
    chat(session, 3)  # m0 m1 m2
    session.append_messages([user("a3", id="a3"), assistant("a4", id="a4")])  # branch A
    session.append_messages(
        [user("b3", id="b3"), assistant("b4", id="b4"), user("b5", id="b5")], parent_id="m2"
    )  # branch B, head
    sibling = session.add_compaction("branch A summary", "m1", "a4")
    fn = Recorder(CompactResult("b3", "b4", "B summary"))
    session.on_compaction(fn)
    assert session.compact("b5") is not None
    assert ids_of(fn.calls[-1][0]) == ["m0", "m1", "m2", "b3", "b4", "b5"]
    stored = session.get_compactions()[-1]
    assert (stored.from_message_id, stored.to_message_id) == ("b3", "b4")
    # branch A still reads through its own overlay only
    assert ids_of(session.get_history("a4")) == ["m0", f"compaction_{sibling.id}"]
    # compact(leaf_id) of branch A extends A's overlay, ignoring B's
    session.append_messages([user("a5", id="a5"), assistant("a6", id="a6")], parent_id="a4")
    fn.result = CompactResult("a5", "a5", "A2")
    assert session.compact("a6") is not None
    assert ids_of(fn.calls[-1][0]) == ["m0", f"compaction_{sibling.id}", "a5", "a6"]
    latest = session.get_compactions()[-1]
    assert (latest.from_message_id, latest.to_message_id) == ("m1", "a5")
    assert ids_of(session.get_history("a6")) == ["m0", f"compaction_{latest.id}", "a6"]
    # and branch B still shows only its own overlay
    assert ids_of(session.get_history("b5")) == ["m0", "m1", "m2", f"compaction_{stored.id}", "b5"]


def test_compact_refreshes_cached_prompt(store: Any) -> None:
    session = (
        new(store, "refresh")
        .with_context("memory")
        .with_cached_prompt()
        .on_compaction(Recorder(CompactResult("m0", "m1", "S")))
    )
    chat(session, 4)
    frozen = session.freeze_system_prompt()
    session.replace_context_block("memory", "learned during the turn")
    assert session.freeze_system_prompt() == frozen
    session.compact()
    assert session.freeze_system_prompt().endswith("learned during the turn")


# ---------------------------------------------------------------------------- compact_after


class Counter:
    """Session token counter: 10 tokens per history message; records its keyword calls."""

    def __init__(self, per_message: int = 10) -> None:
        self.per_message = per_message
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *, messages: Any, system_prompt: Any, blocks: Any) -> int:
        self.calls.append(
            {"messages": list(messages), "system_prompt": system_prompt, "blocks": blocks}
        )
        return self.per_message * len(list(messages))


def test_compact_after_fires_strictly_above_threshold(store: Any) -> None:
    fn = Recorder(None)
    counter = Counter()
    session = new(store).on_compaction(fn).compact_after(30, token_counter=counter)
    chat(session, 3)  # 30 tokens: not above the threshold
    assert fn.calls == []
    assert counter.calls, "the session counter is used for the estimate"
    session.append_message(user("fourth", id="m3"))  # 40 > 30
    assert len(fn.calls) == 1
    assert ids_of(fn.calls[0][0]) == ["m0", "m1", "m2", "m3"]
    assert fn.calls[0][1].token_counter is not None


def test_compact_after_compacts_automatically(store: Any) -> None:
    fn = Recorder(lambda messages: CompactResult(messages[0]["id"], messages[-2]["id"], "auto"))
    session = new(store).on_compaction(fn).compact_after(30, token_counter=Counter())
    chat(session, 4)
    compactions = session.get_compactions()
    assert len(compactions) == 1
    assert (compactions[0].from_message_id, compactions[0].to_message_id) == ("m0", "m2")
    assert ids_of(session.get_history()) == [f"compaction_{compactions[0].id}", "m3"]


def test_compact_after_without_function_never_compacts(store: Any, caplog: Any) -> None:
    counter = Counter()
    session = new(store).compact_after(5, token_counter=counter)
    with caplog.at_level(logging.WARNING, logger="threadline"):
        chat(session, 4)
    assert session.get_path_length() == 4
    assert session.get_compactions() == []
    assert not [r for r in caplog.records if r.name.startswith("threadline")]


def test_on_compaction_without_threshold_never_fires_on_append(store: Any) -> None:
    fn = Recorder(CompactResult("m0", "m1", "S"))
    session = new(store).on_compaction(fn)
    chat(session, 30)
    assert fn.calls == []
    assert session.get_compactions() == []


def test_estimate_includes_frozen_system_prompt(store: Any) -> None:
    counter = Counter(per_message=0)
    session = (
        new(store, "est")
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory")
        .with_cached_prompt()
        .on_compaction(Recorder(None))
        .compact_after(10**9, token_counter=counter)
    )
    frozen = session.freeze_system_prompt()
    session.replace_context_block("memory", "new fact")
    session.append_message(user("hi", id="m0"))
    call = counter.calls[-1]
    assert call["system_prompt"] == frozen
    assert ids_of(call["messages"]) == ["m0"]
    blocks = call["blocks"]
    assert [b.label for b in blocks] == ["soul", "memory"]
    assert all(isinstance(b, ContextBlock) for b in blocks)


def test_estimate_renders_prompt_without_persisting_it(store: Any) -> None:
    counter = Counter(per_message=0)
    session = (
        new(store, "est2")
        .with_context("soul", provider=StaticContext("You are helpful."))
        .with_context("memory")
        .with_cached_prompt()
        .on_compaction(Recorder(None))
        .compact_after(10**9, token_counter=counter)
    )
    session.replace_context_block("memory", "before")
    session.append_message(user("hi", id="m0"))
    prompt = counter.calls[-1]["system_prompt"]
    assert isinstance(prompt, str)
    assert "You are helpful." in prompt and "before" in prompt
    assert store.get_prompt("default", "est2") is None  # not persisted
    # nor frozen: a later write still reaches the first frozen prompt
    session.replace_context_block("memory", "after")
    assert session.freeze_system_prompt().endswith("after")


def test_default_estimate_counts_system_prompt(store: Any) -> None:
    fn = Recorder(None)
    soul = "word " * 200  # ~260 tokens of system prompt, tiny history
    session = (
        new(store, "est3")
        .with_context("soul", provider=StaticContext(soul))
        .on_compaction(fn)
        .compact_after(100)
    )
    session.append_message(user("hi", id="m0"))
    assert len(fn.calls) == 1


# ---------------------------------------------------------------------------- failures


def _failing_session(store: Any, sid: str) -> Session:
    def broken(messages: list[dict[str, Any]], context: CompactContext) -> CompactResult:
        raise RuntimeError("summarizer down")

    return new(store, sid).on_compaction(broken).compact_after(5, token_counter=Counter())


def test_auto_compaction_failure_goes_to_handler(store: Any) -> None:
    errors: list[Any] = []
    session = _failing_session(store, "h").on_compaction_error(lambda *args: errors.append(args))
    stored = session.append_message(user("one", id="m0"))  # 10 > 5
    assert stored["id"] == "m0"
    assert session.get_message("m0") is not None
    assert len(errors) == 1
    flat = [a for a in errors[0] if isinstance(a, BaseException)]
    assert flat and "summarizer down" in str(flat[0])


def test_raising_error_handler_is_logged_not_raised(store: Any, caplog: Any) -> None:
    def handler(*args: Any) -> None:
        raise ValueError("handler broke")

    session = _failing_session(store, "h2").on_compaction_error(handler)
    with caplog.at_level(logging.DEBUG, logger="threadline"):
        session.append_message(user("one", id="m0"))
    assert session.get_message("m0") is not None
    assert [r for r in caplog.records if r.name.startswith("threadline")]


def test_auto_compaction_failure_without_handler_logs_warning(store: Any, caplog: Any) -> None:
    session = _failing_session(store, "h3")
    with caplog.at_level(logging.WARNING, logger="threadline"):
        stored = session.append_message(user("one", id="m0"))
    assert stored["id"] == "m0"
    assert [m["id"] for m in session.get_history()] == ["m0"]
    warnings = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING
        and (r.name == "threadline" or r.name.startswith("threadline."))
    ]
    assert warnings


# ------------------------------------------------------------------------ create_compact_function


def _conversation(session: Session, n: int = 30, start: int = 0) -> list[str]:
    ids = []
    for i in range(start, start + n):
        make = user if i % 2 == 0 else assistant
        text = f"Turn {i}: we discussed deployment step {i} and the database migration plan."
        session.append_message(make(text, id=f"t{i}"))
        ids.append(f"t{i}")
    return ids


def test_create_compact_function_end_to_end(store: Any) -> None:
    prompts: list[str] = []

    def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return f"SUMMARY {len(prompts)}"

    fn = create_compact_function(
        summarize=summarize, tail_token_budget=55, token_counter=lambda ms: 10 * len(ms)
    )
    session = new(store, "e2e").on_compaction(fn)
    ids = _conversation(session, 30)
    result = session.compact()
    # protect_head=3; tail keeps 5 messages (50 <= 55 < 60): middle = t3..t24
    assert result == CompactResult("t3", "t24", "SUMMARY 1")
    prompt = prompts[0]
    for heading in ("## Topic", "## Key Points", "## Current State", "## Open Items"):
        assert heading in prompt
    assert "[user]" in prompt and "[assistant]" in prompt
    assert "deployment step 3 " in prompt and "deployment step 24 " in prompt
    assert "deployment step 2 " not in prompt and "deployment step 25 " not in prompt
    history = session.get_history()
    overlay = session.get_compactions()[0]
    assert ids_of(history) == [*ids[:3], f"compaction_{overlay.id}", *ids[25:]]
    assert text_of(history[3]) == "SUMMARY 1"
    # iterative: more turns, the previous summary is updated, the overlay grows from t3
    _conversation(session, 10, start=30)
    second = session.compact()
    assert second is not None
    assert "SUMMARY 1" in prompts[1]
    latest = session.get_compactions()[-1]
    assert latest.from_message_id == "t3"
    assert latest.summary == "SUMMARY 2"
    assert ids_of(session.get_history())[:4] == [*ids[:3], f"compaction_{latest.id}"]
    assert len(session.get_compactions()) == 2


def test_create_compact_function_too_few_messages(store: Any) -> None:
    calls: list[str] = []
    fn = create_compact_function(summarize=lambda p: calls.append(p) or "S")
    session = new(store, "few").on_compaction(fn)
    _conversation(session, 5)  # <= protect_head + min_tail_messages
    assert session.compact() is None
    assert calls == []
    assert session.get_compactions() == []


def test_create_compact_function_blank_summary_stores_nothing(store: Any) -> None:
    fn = create_compact_function(summarize=lambda p: "   ", tail_token_budget=10)
    session = new(store, "blank").on_compaction(fn)
    _conversation(session, 12)
    assert session.compact() is None
    assert session.get_compactions() == []


def test_create_compact_function_with_extractive_summarizer(store: Any) -> None:
    from threadline.summarizers import extractive

    fn = create_compact_function(summarize=extractive(), tail_token_budget=200)
    session = new(store, "extractive").on_compaction(fn).compact_after(400)
    _conversation(session, 30)
    compactions = session.get_compactions()
    assert compactions, "automatic compaction ran"
    history = session.get_history()
    assert len(history) < 30
    overlay_messages = [m for m in history if m["id"].startswith("compaction_")]
    assert len(overlay_messages) == 1
    assert text_of(overlay_messages[0]).strip()
    assert ids_of(history)[:3] == ["t0", "t1", "t2"]
    assert history[-1]["id"] == "t29"
    assert session.get_path_length() == 30


def test_manager_sessions_use_compaction_settings(store: Any) -> None:
    fn = Recorder(lambda ms: CompactResult(ms[0]["id"], ms[-2]["id"], "mgr"))
    manager = (
        SessionManager(store, app_name="cmp")
        .on_compaction(fn)
        .compact_after(30, token_counter=Counter())
    )
    for i in range(4):
        manager.append("s", user(f"hello {i}", id=f"m{i}"))
    compactions = manager.get_compactions("s")
    assert len(compactions) == 1
    assert compactions[0].summary == "mgr"
    assert ids_of(manager.get_history("s"))[0] == f"compaction_{compactions[0].id}"


def test_summary_budget_uses_estimate_message_tokens(store: Any) -> None:
    from threadline import estimate_message_tokens

    prompts: list[str] = []
    fn = create_compact_function(
        summarize=lambda p: prompts.append(p) or "S", tail_token_budget=1, min_tail_messages=2
    )
    session = new(store, "budget").on_compaction(fn)
    for i in range(10):
        words = " ".join(f"w{i}x{j}" for j in range(120))  # long enough for a budget > 100
        session.append_message(user(words, id=f"b{i}"))
    result = session.compact()
    assert result is not None
    history = session.get_path_length()
    assert history == 10
    middle = [session.get_message(f"b{i}") for i in range(3, 8)]
    assert (result.from_message_id, result.to_message_id) == ("b3", "b7")
    budget = max(100, int(0.2 * estimate_message_tokens(middle)))  # type: ignore[arg-type]
    assert budget > 100
    assert str(budget) in prompts[0]


def test_tail_counting_falls_back_to_the_session_counter(store: Any) -> None:
    def session_counter(*, messages: Any, system_prompt: Any, blocks: Any) -> int:
        return 10 * len(list(messages))

    fn = create_compact_function(summarize=lambda p: "S", tail_token_budget=55)
    session = (
        new(store, "fallback").on_compaction(fn).compact_after(10**9, token_counter=session_counter)
    )
    _conversation(session, 30)
    # 10 tokens per message from the session counter: the tail keeps 5 messages (50 <= 55)
    assert session.compact() == CompactResult("t3", "t24", "S")


def test_tail_counting_prefers_the_function_counter(store: Any) -> None:
    def session_counter(*, messages: Any, system_prompt: Any, blocks: Any) -> int:
        return 1000 * len(list(messages))

    fn = create_compact_function(
        summarize=lambda p: "S", tail_token_budget=55, token_counter=lambda ms: 10 * len(ms)
    )
    session = (
        new(store, "prefer").on_compaction(fn).compact_after(10**9, token_counter=session_counter)
    )
    _conversation(session, 30)
    assert session.compact() == CompactResult("t3", "t24", "S")
