"""``get_history(runs=N)``, ``branch=`` and ``after=<epoch seconds>`` on every backend.

From the seeds: RadarOS ``numHistoryRuns: 25`` keeps "the last 25 exchanges (50 messages)";
ADK-TS ``GetSessionConfig`` loads ``numRecentEvents``, events of one ``branch`` and events
after ``afterTimestamp`` (seconds since the epoch, as ``Date.now() / 1000``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import threadline
from threadline import Session, SessionManager
from threadline._windows import Window
from threadline.errors import InvalidArgumentError
from threadline.messages import assistant, normalize_message, tool_call, user


def _exchanges(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(count):
        out += [user(f"question {i}", id=f"u{i}"), assistant(f"answer {i}", id=f"a{i}")]
    return out


def test_radaros_last_25_exchanges_are_50_messages(store: threadline.Store) -> None:
    session = Session.create(store).for_session("runs")
    session.append_messages(_exchanges(40))
    window = session.get_history(runs=25)
    assert len(window) == 50
    assert [m["id"] for m in window[:2]] == ["u15", "a15"]
    assert window[-1]["id"] == "a39"
    assert window == session.get_history()[-50:]


def test_a_history_with_n_runs_or_fewer_comes_back_whole(store: threadline.Store) -> None:
    session = Session.create(store).for_session("few")
    session.append_messages([assistant("Welcome!", id="hello"), *_exchanges(3)])
    assert session.get_history(runs=3)[0]["id"] == "hello"
    assert len(session.get_history(runs=10)) == 7
    assert [m["id"] for m in session.get_history(runs=2)] == ["u1", "a1", "u2", "a2"]
    assert session.get_history(runs=0) == []


def test_tool_calls_and_their_results_stay_in_their_run(store: threadline.Store) -> None:
    # Anthropic and Gemini carry tool results in user messages: they start no run.
    session = Session.create(store).for_session("tools")
    call = tool_call("weather", {"city": "Oslo"}, tool_call_id="c1")
    call["id"] = "call"
    result = {"id": "result", "role": "user", "parts": [{
        "type": "tool-weather", "toolCallId": "c1", "toolName": "weather",
        "state": "output-available", "input": {"city": "Oslo"}, "output": "rain"}]}
    session.append_messages([
        user("hi", id="u0"), assistant("hello", id="a0"),
        user("Weather in Oslo?", id="u1"), call, result, assistant("Rain.", id="a1"),
    ])
    assert [m["id"] for m in session.get_history(runs=1)] == ["u1", "call", "result", "a1"]


def test_runs_combine_with_limit_max_tokens_and_after(store: threadline.Store) -> None:
    session = Session.create(store).for_session("combined")
    base = datetime(2026, 1, 1, tzinfo=UTC)
    messages = _exchanges(10)
    for i, message in enumerate(messages):
        message["createdAt"] = base + timedelta(minutes=i)
    session.append_messages(messages)
    assert [m["id"] for m in session.get_history(runs=3, limit=4)] == ["u8", "a8", "u9", "a9"]
    # after first (u7 onwards), then the last 5 runs of what is left: 3 runs, the first cut
    after = base + timedelta(minutes=15)
    assert [m["id"] for m in session.get_history(runs=5, after=after)][:2] == ["a7", "u8"]
    tight = session.get_history(runs=3, max_tokens=1)
    assert [m["id"] for m in tight] == ["a9"]  # oldest dropped first, the leaf kept


def test_summaries_before_the_window_stay_in_front(store: threadline.Store) -> None:
    session = Session.create(store).for_session("summary")
    session.append_messages(_exchanges(6))
    session.add_compaction("They talked about 0 to 3.", "u0", "a3")
    window = session.get_history(runs=2)
    assert window[0]["parts"][0]["text"] == "They talked about 0 to 3."
    assert [m["id"] for m in window[1:]] == ["u4", "a4", "u5", "a5"]
    assert [m["id"] for m in session.get_history(runs=1)] == ["u5", "a5"]


class _CountingStore:
    """The real store; counts rows of path reads and refuses whole-path reads."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.rows_read = 0

    def get_path_tail(self, *args: Any, **kwargs: Any) -> Any:
        rows = self._store.get_path_tail(*args, **kwargs)
        self.rows_read += len(rows)
        return rows

    def get_history_tail_encoded(self, *args: Any, **kwargs: Any) -> Any:
        rows, overlays = self._store.get_history_tail_encoded(*args, **kwargs)
        self.rows_read += len(rows)
        return rows, overlays

    def get_path_encoded(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("get_history(runs=...) read the whole path")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_runs_read_about_as_many_rows_as_they_return(store: threadline.Store) -> None:
    store.append_messages("app", "s", [normalize_message(m) for m in _exchanges(500)])
    counting = _CountingStore(store)
    session = Session.create(counting).for_app("app").for_session("s")
    window = session.get_history(runs=5)
    assert [m["id"] for m in window] == [f"{k}{i}" for i in range(495, 500) for k in "ua"]
    assert counting.rows_read <= 4 * len(window)


def test_the_manager_forwards_runs(store: threadline.Store) -> None:
    manager = SessionManager(store, app_name="travel")
    manager.append_all("s1", _exchanges(4))
    assert [m["id"] for m in manager.get_history("s1", runs=1)] == ["u3", "a3"]


def test_runs_must_be_a_non_negative_integer() -> None:
    session = Session.create(":memory:")
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(InvalidArgumentError):
            session.get_history(runs=bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- branch


def _agents(session: Session) -> None:
    tagged = [
        ("u1", "user", None), ("r1", "assistant", "root"),
        ("a1", "assistant", "root.agent_a"), ("b1", "assistant", "root.agent_b"),
        ("x1", "assistant", "root.agent_a.helper"), ("a2", "assistant", "root.agent_a"),
    ]
    for mid, role, branch in tagged:
        message: dict[str, Any] = {"id": mid, "role": role, "content": mid}
        if branch is not None:
            message["metadata"] = {"branch": branch}
        session.append_message(message)


def test_branch_keeps_unset_equal_and_ancestor_branches(store: threadline.Store) -> None:
    session = Session.create(store).for_session("agents")
    _agents(session)
    assert [m["id"] for m in session.get_history(branch="root.agent_a")] == [
        "u1", "r1", "a1", "a2"]
    assert [m["id"] for m in session.get_history(branch="root.agent_b")] == ["u1", "r1", "b1"]
    assert [m["id"] for m in session.get_history(branch="root")] == ["u1", "r1"]
    assert [m["id"] for m in session.get_history(branch="root.agent_a", limit=2)] == [
        "a1", "a2"]
    manager = SessionManager(store)
    manager.append_all("m", [{"role": "user", "content": "x", "metadata": {"branch": "other"}}])
    assert manager.get_history("m", branch="root") == []


def test_branch_must_be_an_id() -> None:
    session = Session.create(":memory:")
    for bad in ("", 3, "\ud800"):
        with pytest.raises(InvalidArgumentError):
            session.get_history(branch=bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- after


def test_after_accepts_epoch_seconds_as_well(store: threadline.Store) -> None:
    session = Session.create(store).for_session("epoch")
    session.append_message({"id": "old", "role": "user", "content": "a",
                            "createdAt": "2020-01-01T00:00:00.000Z"})
    session.append_message({"id": "new", "role": "user", "content": "b",
                            "createdAt": "2026-01-01T00:00:00.000Z"})
    cut = datetime(2025, 6, 1, tzinfo=UTC)
    for after in (cut, cut.isoformat(), "2025-06-01", int(cut.timestamp()), cut.timestamp()):
        assert [m["id"] for m in session.get_history(after=after)] == ["new"], after
    assert len(session.get_history(after=0)) == 2
    for bad in (True, False, float("nan"), float("inf"), 10**20, [1], object()):
        with pytest.raises(InvalidArgumentError):
            session.get_history(after=bad)


# ------------------------------------------------------------------------------- property


@settings(max_examples=60, deadline=None)
@given(
    roles=st.lists(st.sampled_from(["user", "assistant", "tool-result"]), min_size=1,
                   max_size=40),
    branches=st.lists(st.sampled_from([None, "root", "root.a", "root.b"]), max_size=40),
    overlays=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)), max_size=3),
    runs=st.integers(0, 8),
    limit=st.none() | st.integers(1, 30),
    branch=st.none() | st.sampled_from(["root", "root.a"]),
)
def test_a_tail_read_windows_exactly_like_the_whole_history(
    roles: list[str],
    branches: list[str | None],
    overlays: list[tuple[int, int]],
    runs: int,
    limit: int | None,
    branch: str | None,
) -> None:
    store = threadline.connect(":memory:")
    messages = []
    for i, role in enumerate(roles):
        if role == "tool-result":
            message: dict[str, Any] = {"role": "user", "parts": [{
                "type": "tool-t", "toolCallId": f"c{i}", "state": "output-available",
                "input": {}, "output": 1}]}
        else:
            message = {"role": role, "content": f"m{i}"}
        tag = branches[i] if i < len(branches) else None
        if tag is not None:
            message["metadata"] = {"branch": tag}
        messages.append(normalize_message(message))
    ids = [m["id"] for m in store.append_messages("app", "s", messages)]
    for a, b in overlays:
        start, end = sorted((a % len(ids), b % len(ids)))
        store.add_compaction("app", "s", f"sum {start}-{end}", ids[start], ids[end])
    session = Session.create(store).for_app("app").for_session("s")
    full = session.get_history(branch=branch)
    expected = Window(runs=runs, limit=limit).apply(full)
    assert session.get_history(runs=runs, limit=limit, branch=branch) == expected
    store.close()
