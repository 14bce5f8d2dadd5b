# ruff: noqa: E501  (content shapes read best on one line)
"""Google GenAI / ADK ``Content`` ⇄ threadline messages: lossless round trips (hypothesis, both
key spellings) and goldens written from the shapes in the Gemini API reference."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline.formats import from_genai, to_genai
from threadline.messages import normalize_messages

TEXT = st.text(max_size=40)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())


@st.composite
def _part(draw: Any, camel: bool) -> dict[str, Any]:
    def k(camel_name: str, snake_name: str) -> str:
        return camel_name if camel else snake_name

    kind = draw(st.sampled_from(["text", "thought", "inline", "file", "call", "response", "code"]))
    if kind == "text":
        return {"text": draw(TEXT)}
    if kind == "thought":
        return {"text": draw(TEXT), "thought": True, k("thoughtSignature", "thought_signature"): draw(B64)}
    if kind == "inline":
        return {k("inlineData", "inline_data"): {k("mimeType", "mime_type"): draw(st.sampled_from(["image/png", "audio/wav"])), "data": draw(B64)}}
    if kind == "file":
        return {k("fileData", "file_data"): {k("mimeType", "mime_type"): "application/pdf", k("fileUri", "file_uri"): "gs://bucket/doc.pdf"}}
    name = draw(st.sampled_from(["get_weather", "search"]))
    if kind == "call":
        call: dict[str, Any] = {"name": name, "args": draw(st.dictionaries(st.sampled_from(["city", "q"]), JSON_VALUE, max_size=2))}
        if draw(st.booleans()):
            call["id"] = "adk-" + draw(st.text("abc123", min_size=3, max_size=6))
        return {k("functionCall", "function_call"): call}
    if kind == "response":
        response: dict[str, Any] = {"name": name, "response": {"result": draw(JSON_VALUE)}}
        if draw(st.booleans()):
            response["id"] = "adk-1"
        return {k("functionResponse", "function_response"): response}
    return {k("executableCode", "executable_code"): {"language": "PYTHON", "code": "print(1)"}}


@st.composite
def _contents(draw: Any) -> list[dict[str, Any]]:
    camel = draw(st.booleans())
    out = []
    for _ in range(draw(st.integers(0, 4))):
        content: dict[str, Any] = {"parts": draw(st.lists(_part(camel), max_size=3))}
        role = draw(st.sampled_from(["user", "model", None]))
        if role is not None:
            content["role"] = role
        out.append(content)
    return out


@settings(max_examples=500, deadline=None)
@given(_contents())
def test_round_trip_is_lossless(contents: list[dict[str, Any]]) -> None:
    converted = from_genai(contents)
    assert to_genai(converted) == contents
    for message in converted:
        assert "id" not in message and "createdAt" not in message


@settings(max_examples=100, deadline=None)
@given(_contents())
def test_round_trip_through_normalisation(contents: list[dict[str, Any]]) -> None:
    assert to_genai(normalize_messages(from_genai(contents))) == contents


def test_golden_function_calling() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "What's the temperature in London?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_current_temperature", "args": {"location": "London"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_current_temperature", "response": {"temperature": 12}}}]},
    ]
    converted = from_genai(contents)
    call, response = converted[1]["parts"][0], converted[2]["parts"][0]
    assert converted[1]["role"] == "assistant"
    assert (call["type"], call["state"], call["input"]) == ("tool-get_current_temperature", "input-available", {"location": "London"})
    assert (response["state"], response["output"]) == ("output-available", {"temperature": 12})
    assert to_genai(converted) == contents


def test_golden_inline_image_snake_case() -> None:
    contents = [{"role": "user", "parts": [{"text": "Caption this."}, {"inline_data": {"mime_type": "image/jpeg", "data": "/9j/4AAQ"}}]}]
    [message] = from_genai(contents)
    assert message["parts"][1]["type"] == "file" and message["parts"][1]["url"] == "data:image/jpeg;base64,/9j/4AAQ"
    assert to_genai([message]) == contents
