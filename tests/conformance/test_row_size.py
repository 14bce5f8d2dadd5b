"""Oversized messages are compacted on write, never rejected.

Black-box: only the public API of ``threadline``.
"""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from threadline import Session, truncate_older_messages
from threadline.messages import tool_call

LIMIT = 1_800_000


def size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def new(store: Any, sid: str = "big") -> Session:
    return Session.create(store, size_policy="truncate").for_session(sid)


def _warned(caplog: Any) -> bool:
    return any(
        r.levelno >= logging.WARNING and r.name.split(".")[0] == "threadline"
        for r in caplog.records
    )


def test_oversized_tool_output_is_truncated_on_append(store: Any, caplog: Any) -> None:
    message = tool_call("fetch", {"url": "x"}, "x" * 2_000_000, "call-big")
    message["id"] = "a1"
    message["parts"].append({"type": "text", "text": "done"})
    original = copy.deepcopy(message)
    session = new(store)
    with caplog.at_level(logging.WARNING, logger="threadline"):
        returned = session.append_message(message)
    assert message == original  # the caller's dict is not mutated
    stored = session.get_message("a1")
    assert stored is not None
    assert stored == returned
    assert size(stored) <= LIMIT
    output = stored["parts"][0]["output"]
    assert isinstance(output, str)
    assert output.startswith("x" * 100)
    assert "[truncated 2000000 chars]" in output
    assert len(output) < 1_200
    assert stored["parts"][1] == {"type": "text", "text": "done"}
    assert stored["metadata"]["compactedToolOutputs"] == ["call-big"]
    assert _warned(caplog)


def test_oversized_text_parts_are_truncated_oldest_first(store: Any) -> None:
    first, second = "a" * 1_000_000, "b" * 1_000_000
    message = {
        "id": "a2",
        "role": "assistant",
        "parts": [{"type": "text", "text": first}, {"type": "text", "text": second}],
    }
    session = new(store, "text")
    session.append_message(message)
    stored = session.get_message("a2")
    assert stored is not None
    assert size(stored) <= LIMIT
    assert stored["parts"][0]["text"] == (
        f"[Text truncated for storage (1000000 chars). First 500 chars: {'a' * 500}...]"
    )
    assert stored["parts"][1]["text"] == second
    assert stored["metadata"]["compactedTextParts"] == [0]


def test_oversized_user_message_is_stored_not_rejected(store: Any) -> None:
    session = new(store, "user")
    session.append_message(
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "é" * 1_000_000}]}
    )
    stored = session.get_message("u1")
    assert stored is not None
    assert size(stored) <= LIMIT
    assert [m["id"] for m in session.get_history()] == ["u1"]


def test_message_just_under_the_limit_is_unchanged(store: Any) -> None:
    session = new(store, "under")
    text = "z" * 1_500_000
    session.append_message(
        {"id": "ok", "role": "assistant", "parts": [{"type": "text", "text": text}]}
    )
    stored = session.get_message("ok")
    assert stored is not None
    assert stored["parts"][0]["text"] == text
    assert "compactedTextParts" not in stored.get("metadata", {})


def test_truncate_older_messages_on_history(store: Any) -> None:
    session = new(store, "micro")
    for i in range(6):
        m = tool_call("lookup", {"i": i}, "o" * 2_000, f"c{i}")
        m["id"] = f"t{i}"
        session.append_message(m)
    history = session.get_history()
    trimmed = truncate_older_messages(history, keep_recent=2, max_tool_output_chars=100)
    assert len(trimmed) == 6
    assert trimmed[-2] is history[-2] and trimmed[-1] is history[-1]
    for old in trimmed[:4]:
        assert "[truncated 2000 chars]" in old["parts"][0]["output"]
    # a read-time copy: nothing stored changed
    assert session.get_message("t0")["parts"][0]["output"] == "o" * 2_000  # type: ignore[index]
