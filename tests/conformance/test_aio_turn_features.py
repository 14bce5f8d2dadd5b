"""The async twins of the RadarOS / ADK-TS session features (spec §17), on every backend:
``AsyncSession.state_view()``, ``get_history(runs=, branch=, after=<epoch>)``,
``AsyncSessionManager(max_messages=N)`` with ``AppendResult.overflow`` and
``rewind(before_invocation_id=...)`` — the seeds' numbers, through ``threadline.aio``, with the
same results as the sync classes they wrap. Also the ADK-TS event helpers on messages read back
from each backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

import threadline
from threadline import AppendResult, AsyncSession, AsyncSessionManager, SessionManager
from threadline.aio import AsyncStateView
from threadline.errors import InvalidArgumentError, MessageNotFoundError
from threadline.formats import from_anthropic
from threadline.messages import (
    assistant,
    function_calls,
    function_responses,
    is_final_response,
    user,
)


def _exchange(i: int) -> list[dict[str, Any]]:
    return [user(f"Hello {i}", id=f"u{i}"), assistant(f"Hi there {i}!", id=f"a{i}")]


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def test_state_view_the_seed_example(store: threadline.Store) -> None:
    async def main() -> None:
        session = AsyncSession.create(store).for_session("state").for_user("u1")
        await session.update_state({"existing": "value"})
        state = await session.state_view()
        assert isinstance(state, AsyncStateView) and not state.has_delta()
        state.set("new", "data")
        assert state.delta == {"new": "data"} and state.has_delta()
        assert state.to_dict() == {"existing": "value", "new": "data"}
        assert "new" in state and state.has("existing") and not state.has("missing")
        assert await session.get_state("new") is None  # pending: nothing written yet
        await state.commit()
        assert not state.has_delta() and state.delta == {}
        state.set("temp:counter", state.get("temp:counter", 0) + 1)
        with pytest.raises(InvalidArgumentError):
            state.set("topic", object())  # fails at once, as in the sync view
        await state.commit()
        assert await session.state() == {
            "existing": "value", "new": "data", "temp:counter": 1}  # fmt: skip

    asyncio.run(main())
    assert SessionManager(store).get_state("state") == {"existing": "value", "new": "data"}


def test_history_windows_the_seed_numbers(store: threadline.Store) -> None:
    async def main() -> tuple[list[Any], ...]:
        async with AsyncSessionManager(store) as manager:
            session = await manager.get_session("runs")
            await session.append_messages([m for i in range(40) for m in _exchange(i)])
            runs = await session.get_history(runs=25)  # RadarOS numHistoryRuns: 25
            by_manager = await manager.get_history("runs", runs=25)
            await session.append_message(
                {"id": "b1", "role": "assistant", "content": "b", "metadata": {"branch": "x.b"}}
            )
            branch = await manager.get_history("runs", branch="x.a", limit=2)
            old = await session.get_history(after=int(datetime(2100, 1, 1, tzinfo=UTC).timestamp()))
            new = await session.get_history(after=0.0, limit=1)
            return runs, by_manager, branch, old, new

    runs, by_manager, branch, old, new = asyncio.run(main())
    assert len(runs) == 50 and ids(runs[:2]) == ["u15", "a15"] and runs == by_manager
    assert ids(branch) == ["u39", "a39"]  # b1 belongs to another agent's branch
    assert old == [] and ids(new) == ["b1"]


def test_max_messages_overflow_the_seed_example(store: threadline.Store) -> None:
    async def main() -> None:
        manager = AsyncSessionManager(store, app_name="radar", max_messages=50)
        await manager.get_or_create("conv-1", user_id="user-42")
        for i in range(25):
            result = await manager.append_all("conv-1", _exchange(i))
            assert isinstance(result, AppendResult) and result.overflow == []
        result = await manager.append_all("conv-1", _exchange(25))
        assert ids(result) == ["u25", "a25"] and ids(result.overflow) == ["u0", "a0"]
        assert result.overflow[0]["parts"][0]["text"] == "Hello 0"
        history = await manager.get_history("conv-1")
        assert len(history) == 50 and history[0]["id"] == "u1"
        assert len(await manager.get_history("conv-1", limit=20)) == 20
        assert len(await manager.get_history("conv-1", limit=None)) == 52  # nothing deleted

    asyncio.run(main())


def test_rewind_before_an_invocation(store: threadline.Store) -> None:
    def invocation(n: int) -> list[dict[str, Any]]:
        return [{**m, "metadata": {"invocationId": f"inv-{n}"}} for m in _exchange(n)]

    async def main() -> None:
        manager = AsyncSessionManager(store, app_name="adk")
        await manager.append_all("s", invocation(123))
        await manager.append("s", invocation(456)[0], state_delta={"booked": True})
        await manager.append("s", invocation(456)[1])
        await manager.append_all("s", invocation(789))
        await manager.rewind("s", before_invocation_id="inv-456")
        assert ids(await manager.get_history("s")) == ["u123", "a123"]
        assert await manager.get_state("s") == {}
        with pytest.raises(MessageNotFoundError):
            await manager.rewind("s", before_invocation_id="inv-789")  # off the path now
        with pytest.raises(InvalidArgumentError):
            await manager.rewind("s")

    asyncio.run(main())


def test_event_helpers_on_messages_read_back(store: threadline.Store) -> None:
    # The ADK-TS event of the seed (a user text event with an invocation id and a timestamp in
    # seconds), then a tool call answered Anthropic-style in a user message.
    manager = SessionManager(store)
    event = {
        "id": "e1",
        "role": "user",
        "parts": [{"type": "text", "text": "Hello, agent!"}],
        "metadata": {"invocationId": "inv-123"},
        "createdAt": datetime.fromtimestamp(1767225600, UTC).isoformat(),
    }
    exchange = from_anthropic([
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "rain"}]},
        {"role": "assistant", "content": "Rain in Oslo."},
    ])  # fmt: skip
    manager.append_all("s", [event, *exchange])
    stored_event, call, result, answer = manager.get_history("s")
    assert not is_final_response(stored_event)  # the user's, not the agent's
    assert function_calls(stored_event) == [] and function_responses(stored_event) == []
    assert function_calls(call) == [{"id": "t1", "name": "weather", "args": {"city": "Oslo"}}]
    assert not is_final_response(call)  # a call still awaits its output in this message
    assert [r["id"] for r in function_responses(result)] == ["t1"]
    assert function_calls(answer) == [] and is_final_response(answer)
    assert manager.get_history("s", after=1767225600)[0]["id"] == "e1"
