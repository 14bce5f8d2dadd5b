"""Micro-compaction: read-time truncation and the store's row-size guard."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.compaction.micro import (
    enforce_row_size,
    shrink_value,
    truncate_older_messages,
    truncate_tool_output,
)
from threadline.types import Message


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def nbytes(value: Any) -> int:
    return len(compact(value).encode("utf-8"))


def text_msg(mid: str, body: str, role: str = "user") -> Message:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": body}]}


def tool_msg(mid: str, output: Any, call_id: str = "c1", input_: Any = None) -> Message:
    part = {
        "type": "tool-search",
        "toolCallId": call_id,
        "toolName": "search",
        "state": "output-available",
        "input": input_ if input_ is not None else {"q": "x"},
        "output": output,
    }
    return {"id": mid, "role": "assistant", "parts": [part]}


# --------------------------------------------------------------------------- read time


def test_recent_messages_are_the_same_objects_and_input_untouched() -> None:
    msgs = [text_msg(f"m{i}", "x" * 20_000) for i in range(6)]
    snapshot = copy.deepcopy(msgs)
    out = truncate_older_messages(msgs, keep_recent=4)
    assert msgs == snapshot
    assert out is not msgs and len(out) == 6
    assert all(out[i] is msgs[i] for i in range(2, 6))
    assert out[0] is not msgs[0]
    assert out[0]["parts"][0]["text"] == "x" * 10_000 + "... [truncated 20000 chars]"


def test_unchanged_older_messages_may_be_reused() -> None:
    msgs = [text_msg("a", "short"), text_msg("b", "short")]
    assert truncate_older_messages(msgs, keep_recent=0) == msgs


def test_keep_recent_larger_than_list() -> None:
    msgs = [text_msg("a", "y" * 20_000)]
    assert truncate_older_messages(msgs, keep_recent=10)[0] is msgs[0]


def test_string_tool_output() -> None:
    msg = tool_msg("t", "r" * 600)
    out = truncate_older_messages([msg], keep_recent=0)[0]
    assert out["parts"][0]["output"] == "r" * 500 + "... [truncated 600 chars]"
    assert out["parts"][0]["input"] == {"q": "x"}
    assert truncate_older_messages([tool_msg("t", "r" * 500)], keep_recent=0)[0]["parts"][0][
        "output"
    ] == ("r" * 500)


def test_structured_output_keeps_shape() -> None:
    output = {
        "status": "ok",
        "count": 3,
        "flags": [True, False],
        "body": "b" * 5000,
        "rows": [{"n": i, "v": "v" * 40} for i in range(50)],
    }
    snapshot = copy.deepcopy(output)
    out = truncate_older_messages([tool_msg("t", output)], keep_recent=0)[0]["parts"][0]["output"]
    assert output == snapshot
    assert list(out) == list(output)  # every key, same order
    assert out["status"] == "ok" and out["count"] == 3 and out["flags"] == [True, False]
    assert isinstance(out["body"], str) and out["body"].endswith("... [truncated 5000 chars]")
    assert isinstance(out["rows"], list)
    rows_chars = len(compact(output["rows"]))
    assert out["rows"][-1] == f"... [truncated {rows_chars} chars]"
    assert all(r in output["rows"] for r in out["rows"][:-1])  # leading items kept whole
    assert len(compact(out)) <= 500


def test_small_strings_inside_an_object_are_kept_whole() -> None:
    output = {"a": "keep me", "b": "k" * 2000, "c": "also keep"}
    out = truncate_tool_output(output, 200)
    assert out["a"] == "keep me" and out["c"] == "also keep"
    assert out["b"].startswith("kkk") and out["b"].endswith("... [truncated 2000 chars]")
    assert len(compact(out)) <= 200


def test_what_cannot_be_kept_becomes_a_placeholder() -> None:
    output = {f"key_{i}": i for i in range(200)}
    out = truncate_tool_output(output, 100)
    assert out == {"__truncated": True, "__truncatedChars": len(compact(output))}


def test_preserve_shape_false_gives_one_string() -> None:
    output = {"rows": list(range(300))}
    text = compact(output)
    out = truncate_older_messages([tool_msg("t", output)], keep_recent=0, preserve_shape=False)
    assert out[0]["parts"][0]["output"] == text[:500] + f"... [truncated {len(text)} chars]"


def test_measured_on_compact_json_with_unicode() -> None:
    # 300 CJK characters: 300 characters of JSON text (ensure_ascii=False), not 1800 of \\u escapes.
    output = {"t": "漢" * 300}
    assert truncate_tool_output(output, 400) is output


def test_other_parts_untouched() -> None:
    msg: Message = {
        "id": "m",
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "r" * 50_000},
            {"type": "custom-x", "data": "d" * 50_000},
            {"type": "tool-a", "toolCallId": "c", "state": "input-available", "input": {}},
        ],
    }
    assert truncate_older_messages([msg], keep_recent=0)[0] is msg


@st.composite
def json_values(draw: st.DrawFn) -> Any:
    return draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=300),
            lambda children: (
                st.lists(children, max_size=8)
                | st.dictionaries(st.text(max_size=8), children, max_size=6)
            ),
            max_leaves=40,
        )
    )


@given(json_values(), st.integers(50, 800))
def test_property_shrink_value(value: Any, budget: int) -> None:
    snapshot = copy.deepcopy(value)
    out = shrink_value(value, budget)
    assert value == snapshot  # never mutated
    compact(out)  # always JSON-serialisable
    if len(compact(value)) <= budget:
        assert out is value
        return
    if isinstance(value, str):
        assert isinstance(out, str) and out.endswith(f"... [truncated {len(value)} chars]")
        marker = f"... [truncated {len(value)} chars]"
        assert len(compact(out)) <= max(budget, len(marker) + 2)
    elif isinstance(value, list):
        assert isinstance(out, list)
        assert out[-1] == f"... [truncated {len(compact(value))} chars]"
    elif isinstance(value, dict):
        placeholder = {"__truncated": True, "__truncatedChars": len(compact(value))}
        assert out == placeholder or list(out) == list(value)


# --------------------------------------------------------------------------- row size


def test_fitting_message_is_returned_as_is() -> None:
    msg = text_msg("m", "hello")
    assert enforce_row_size(msg) is msg


def test_two_million_character_text(caplog: pytest.LogCaptureFixture) -> None:
    msg = text_msg("m", "a" * 2_000_000)
    snapshot = copy.deepcopy(msg)
    with caplog.at_level(logging.WARNING, logger="threadline"):
        out = enforce_row_size(msg)
    assert msg == snapshot
    assert nbytes(out) <= 1_800_000
    assert out["parts"][0]["text"] == (
        "[Text truncated for storage (2000000 chars). First 500 chars: " + "a" * 500 + "...]"
    )
    assert out["metadata"]["compactedTextParts"] == [0]
    assert any(r.name == "threadline" and r.levelno == logging.WARNING for r in caplog.records)


@pytest.mark.parametrize("char", ["😀", "漢", "é"])
def test_multibyte_text_is_measured_in_utf8_bytes(char: str) -> None:
    # 500k characters is under 1.8M characters but over 1.8M UTF-8 bytes for 4- and 3-byte chars.
    body = char * 700_000
    msg = text_msg("m", body)
    out = enforce_row_size(msg)
    size = nbytes(msg)
    if size <= 1_800_000:
        assert out is msg
    else:
        assert nbytes(out) <= 1_800_000
        assert out["parts"][0]["text"].startswith("[Text truncated for storage (700000 chars)")


def test_tool_outputs_first_text_untouched_when_that_suffices() -> None:
    msg = tool_msg("t", {"rows": ["r" * 100] * 30_000, "status": "done"}, call_id="call_9")
    msg["parts"].insert(0, {"type": "text", "text": "t" * 5000})
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    assert out["metadata"] == {"compactedToolOutputs": ["call_9"]}
    assert out["parts"][0]["text"] == "t" * 5000
    output = out["parts"][1]["output"]
    assert output["status"] == "done" and isinstance(output["rows"], list)
    assert len(compact(output)) <= 1000
    assert out["parts"][1]["input"] == {"q": "x"}


def test_text_parts_oldest_first_until_it_fits() -> None:
    msg: Message = {
        "id": "m",
        "role": "assistant",
        "parts": [{"type": "text", "text": c * 800_000} for c in "abc"],
        "metadata": {"model": "x"},
    }
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    assert out["metadata"] == {"model": "x", "compactedTextParts": [0]}
    assert out["parts"][0]["text"].startswith("[Text truncated for storage (800000 chars)")
    assert out["parts"][1]["text"] == "b" * 800_000
    assert msg["metadata"] == {"model": "x"}


def test_custom_limit() -> None:
    out = enforce_row_size(text_msg("m", "z" * 5000), max_bytes=2000)
    assert nbytes(out) <= 2000


def test_last_resort_huge_reasoning_part() -> None:
    msg: Message = {
        "id": "m",
        "role": "assistant",
        "parts": [{"type": "reasoning", "text": "r" * 2_500_000}, {"type": "text", "text": "ok"}],
    }
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    assert out["parts"][0]["type"] == "reasoning"
    assert out["parts"][1] == {"type": "text", "text": "ok"}
    assert out["metadata"]["compactedParts"] == [0]


def test_last_resort_huge_tool_input() -> None:
    msg = tool_msg("t", "fine", input_={"blob": "i" * 3_000_000})
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    part = out["parts"][0]
    assert part["type"] == "tool-search" and part["toolCallId"] == "c1"


def test_last_resort_many_small_parts() -> None:
    parts = [{"type": "text", "text": f"part {i} " + "p" * 50} for i in range(60_000)]
    msg: Message = {"id": "m", "role": "user", "parts": parts}
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    kept = out["metadata"]["compactedPartsRemoved"]
    assert len(out["parts"]) == 60_000 - kept + 1
    assert out["parts"][0] == parts[0]
    assert out["parts"][-1]["text"].startswith(f"[{kept} parts removed for storage")


def test_last_resort_huge_metadata_and_extra_keys() -> None:
    msg: Message = {
        **text_msg("m", "hi"),
        "metadata": {"trace": "t" * 2_000_000},
        "providerData": ["x" * 100] * 30_000,
    }
    out = enforce_row_size(msg)
    assert nbytes(out) <= 1_800_000
    assert out["metadata"]["compactedMetadata"] is True
    assert out["parts"] == msg["parts"]


def test_does_not_mutate_input_in_any_step() -> None:
    msg = tool_msg("t", "o" * 2_000_000)
    msg["parts"].append({"type": "text", "text": "x" * 1_900_000})
    msg["metadata"] = {"keep": 1}
    snapshot = copy.deepcopy(msg)
    out = enforce_row_size(msg)
    assert msg == snapshot
    assert nbytes(out) <= 1_800_000
    assert out["metadata"]["keep"] == 1
