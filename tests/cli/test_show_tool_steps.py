"""Amendment 22: a call and its result appended separately (the agent-loop order) show as one
answered step in ``threadline show`` and ``threadline history`` — the call with the result's
state and output, the result named after its call — never as a call not answered."""

from __future__ import annotations

from pathlib import Path

import threadline

from .conftest import Run


def _loop(db: str, outcome: dict[str, object]) -> None:
    session = threadline.Session.create(db).for_session("loop")
    session.append_message({"id": "m1", "role": "user", "content": "weather in Oslo?"})
    session.append_message(
        {"id": "m2", "role": "assistant", "content": None, "tool_calls": [{"id": "c1",
         "type": "function", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]}
    )  # fmt: skip
    result = {"type": "dynamic-tool", "toolCallId": "c1", **outcome}
    session.append_message({"id": "m3", "role": "tool", "parts": [result]})


def test_show_and_history_draw_call_and_result_as_one_step(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "loop.db")
    _loop(db, {"state": "output-available", "output": "rain"})
    for args in (("show", "--full", "--width", "160"), ("history",)):
        out = run(args[0], db, "loop", *args[1:]).out
        assert '⚙ weather({"city": "Oslo"}) → rain' in out, out  # the call, answered
        assert "⚙ weather → rain" in out  # the result, named after its call
        assert "input-available" not in out and "unknown" not in out


def test_a_failed_result_shows_its_error_on_the_call(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "failed.db")
    _loop(db, {"state": "output-error", "errorText": "station offline"})
    out = run("show", db, "loop", "--full", "--width", "160").out
    assert '⚙ weather({"city": "Oslo"}) ✗ station offline' in out, out
