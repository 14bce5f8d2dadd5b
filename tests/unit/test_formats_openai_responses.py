# ruff: noqa: E501  (item shapes read best on one line)
"""OpenAI Responses input items ⇄ threadline messages: lossless round trips (hypothesis,
realistic item lists) and goldens written from the shapes in the Responses API reference."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.formats import from_openai_responses, to_openai_responses
from threadline.messages import normalize_messages

TEXT = st.text(max_size=40)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
FUTURE = st.dictionaries(st.sampled_from(["annotations", "x_future", "logprobs"]), JSON_VALUE, max_size=1)
CALL_ID = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=4, max_size=10).map(lambda s: f"call_{s}")
B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())

INPUT_PART = st.one_of(
    st.builds(lambda t, f: {"type": "input_text", "text": t, **f}, TEXT, FUTURE),
    st.builds(lambda u, d: {"type": "input_image", "image_url": u, **d}, st.sampled_from(["https://example.com/a.png"]) | B64.map(lambda b: "data:image/png;base64," + b), st.sampled_from([{}, {"detail": "auto"}])),
    st.builds(lambda b, n: {"type": "input_file", "file_data": "data:application/pdf;base64," + b, **n}, B64, st.sampled_from([{}, {"filename": "a.pdf"}])),
    st.just({"type": "input_image", "file_id": "file-123", "detail": "low"}),
)
OUTPUT_PART = st.one_of(
    st.builds(lambda t: {"type": "output_text", "text": t, "annotations": []}, TEXT),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, TEXT),
)


@st.composite
def _items(draw: Any) -> list[Any]:
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["user", "system", "developer", "assistant", "call", "reasoning", "raw"]))
        if kind in ("user", "system", "developer"):
            item: dict[str, Any] = {"role": kind, "content": draw(st.one_of(TEXT, st.lists(INPUT_PART, min_size=1, max_size=3)))}
            if draw(st.booleans()):
                item = {"type": "message", **item}
            items.append(item)
        elif kind == "assistant":
            items.append({"type": "message", "id": "msg_" + draw(st.text("abc123", min_size=3, max_size=6)), "role": "assistant", "status": "completed", "content": draw(st.lists(OUTPUT_PART, max_size=2))})
        elif kind == "call":
            call_id = draw(CALL_ID)
            args = draw(st.dictionaries(st.sampled_from(["city", "q"]), JSON_VALUE, max_size=2))
            arguments = draw(st.sampled_from([json.dumps(args), json.dumps(args, separators=(",", ":")), '{"city": "Os']))
            items.append({"type": "function_call", "id": "fc_" + call_id[5:], "call_id": call_id, "name": draw(st.sampled_from(["get_weather", "search"])), "arguments": arguments, "status": "completed"})
            if draw(st.booleans()):
                items.append({"type": "function_call_output", "call_id": call_id, "output": draw(TEXT)})
        elif kind == "reasoning":
            item = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": t} for t in draw(st.lists(TEXT, max_size=2))]}
            if draw(st.booleans()):
                item["encrypted_content"] = draw(B64)
            items.append(item)
        else:
            items.append({"type": "web_search_call", "id": "ws_1", "status": "completed", **draw(FUTURE)})
    return items


@settings(max_examples=500, deadline=None)
@given(_items())
def test_round_trip_is_lossless(items: list[Any]) -> None:
    converted = from_openai_responses(items)
    assert to_openai_responses(converted) == items
    for message in converted:
        assert "id" not in message and "createdAt" not in message  # item ids stay metadata


@settings(max_examples=100, deadline=None)
@given(_items())
def test_round_trip_through_normalisation(items: list[Any]) -> None:
    assert to_openai_responses(normalize_messages(from_openai_responses(items))) == items


def test_golden_function_calling() -> None:
    items = [
        {"role": "user", "content": "What's the weather like in Paris today?"},
        {"type": "function_call", "id": "fc_12345xyz", "call_id": "call_12345xyz", "name": "get_weather", "arguments": '{"location":"Paris, France"}'},
        {"type": "function_call_output", "call_id": "call_12345xyz", "output": '{"temperature": 14}'},
    ]
    converted = from_openai_responses(items)
    call, result = converted[1]["parts"][0], converted[2]["parts"][0]
    assert (call["type"], call["input"]) == ("tool-get_weather", {"location": "Paris, France"})
    assert converted[1]["providerMetadata"]["openai"]["id"] == "fc_12345xyz"
    assert (result["type"], result["output"]) == ("tool-get_weather", '{"temperature": 14}')
    assert to_openai_responses(converted) == items


def test_golden_reasoning_with_encrypted_content() -> None:
    items = [{"type": "reasoning", "id": "rs_abc", "summary": [{"type": "summary_text", "text": "Compared both options."}], "encrypted_content": "gAAAAB..."}]
    [message] = from_openai_responses(items)
    assert message["parts"] == [{"type": "reasoning", "text": "Compared both options.", "providerMetadata": {"openai": {"type": "summary_text"}}}]
    assert to_openai_responses([message]) == items
