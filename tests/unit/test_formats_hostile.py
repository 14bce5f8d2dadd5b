"""Amendment 15 and clarification 25, proven by hypothesis: every converter answers any
JSON-ish input with a result or ``InvalidMessageError`` (never another exception), converts
out everything ``append_message`` stored, and folds other APIs' roles into the four stored
ones, giving them back on the way out."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadline
from threadline.errors import InvalidMessageError, ThreadlineError
from threadline.formats import (
    from_anthropic,
    from_genai,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_genai,
    to_openai_chat,
    to_openai_responses,
)
from threadline.messages import ROLES

FROM = [from_openai_chat, from_openai_responses, from_anthropic, from_genai]
TO = [to_openai_chat, to_openai_responses, to_anthropic, to_genai]

# Keys and values the converters look at, so random input reaches their inner branches.
KEYS = [
    "role", "content", "parts", "type", "text", "tool_calls", "tool_call_id", "function",
    "name", "arguments", "id", "call_id", "output", "input", "state", "toolCallId",
    "toolName", "providerMetadata", "openai", "anthropic", "google", "shape", "key", "inner",
    "present", "part", "source", "media_type", "data", "url", "mediaType", "image_url",
    "input_audio", "file", "file_data", "format", "summary", "item", "call", "errorText",
    "inlineData", "functionCall", "functionResponse", "args", "response", "tool_use_id",
    "is_error", "thought", "refusal", "mime", "payload", "detail", "filename",
]  # fmt: skip
WORDS = [
    "user", "assistant", "system", "tool", "developer", "model", "function", "robot",
    "text", "refusal", "image_url", "input_audio", "file", "function_call",
    "function_call_output", "reasoning", "message", "raw", "tool_use", "tool_result",
    "thinking", "redacted_thinking", "image", "document", "base64", "list", "absent",
    "tool-f", "dynamic-tool", "data-openai", "data-google", "output-available",
    "output-error", "input-available", "inlineData", "functionCall", "data:image/png;base64,AA",
    "c1", "{}", "{\"a\": 1}",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WORDS),
    st.text(max_size=4),
)
json_ish = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    ),
    max_leaves=30,
)


def _call(fn: Any, value: Any) -> None:
    with contextlib.suppress(InvalidMessageError):
        fn(value)


@pytest.mark.parametrize("fn", FROM + TO, ids=lambda f: f.__name__)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.one_of(json_ish, st.lists(json_ish, max_size=4)))
def test_any_input_gives_a_result_or_invalid_message_error(fn: Any, value: Any) -> None:
    _call(fn, value)


@pytest.mark.parametrize("fn", FROM + TO, ids=lambda f: f.__name__)
def test_none_and_hostile_nesting_are_invalid_message_errors(fn: Any) -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    nested: Any = {"role": "user", "content": "x"}
    for _ in range(5000):
        nested = {"role": "user", "content": [nested], "parts": [{"type": "text", "text": nested}]}
    for value in (None, "text", 5, {"role": "user"}, [None], [deep], [nested]):
        _call(fn, value)


PART_TYPES = [
    "text", "reasoning", "file", "tool-f", "dynamic-tool", "data-openai", "data-google",
    "data-anthropic", "step-start", "source-url",
]  # fmt: skip
part_types = st.sampled_from(PART_TYPES)
meta_values = st.dictionaries(
    st.sampled_from(["openai", "anthropic", "google"]),
    st.dictionaries(st.sampled_from(KEYS), json_ish, max_size=4),
    max_size=3,
)
stored_parts = st.lists(
    st.builds(
        lambda kind, extra, meta: {"type": kind, **extra, "providerMetadata": meta},
        part_types,
        st.dictionaries(st.sampled_from(KEYS).filter(lambda k: k != "type"), json_ish, max_size=5),
        meta_values,
    ),
    max_size=4,
)
stored_messages = st.lists(
    st.builds(
        lambda role, parts, meta: {"role": role, "parts": parts, "providerMetadata": meta},
        st.sampled_from(["user", "assistant", "system", "tool", "developer", "model", "x"]),
        stored_parts,
        meta_values,
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=stored_messages)
def test_whatever_append_message_stored_converts_out(messages: list[dict[str, Any]]) -> None:
    session = threadline.Session.create(":memory:").for_session("s")
    for message in messages:
        try:
            session.append_message(message)
        except ThreadlineError:
            continue  # refused at the door: not stored, nothing to convert
    history = session.get_history()
    for fn in TO:
        fn(history)  # never raises, not even InvalidMessageError


ROUND_TRIPS = [
    (from_openai_chat, to_openai_chat, lambda role: [{"role": role, "content": "hi"}]),
    (
        from_openai_responses,
        to_openai_responses,
        lambda role: [{"role": role, "content": "hi"}],
    ),
    (
        lambda m: from_anthropic(m),
        lambda m: to_anthropic(m)[1],
        lambda role: [{"role": role, "content": "hi"}],
    ),
    (from_genai, to_genai, lambda role: [{"role": role, "parts": [{"text": "hi"}]}]),
]


@pytest.mark.parametrize(("into", "out", "make"), ROUND_TRIPS)
@settings(max_examples=60, deadline=None)
@given(role=st.one_of(st.sampled_from(["developer", "model", "function", "critic"]), st.text()))
def test_other_roles_fold_into_the_four_and_come_back(
    into: Any, out: Any, make: Any, role: str
) -> None:
    payload = make(role)
    converted = into(payload)
    assert converted[0]["role"] in ROLES
    assert out(converted) == payload
    stored = threadline.Session.create(":memory:").for_session("s").append_messages(converted)
    assert out(stored) == payload


def test_developer_and_model_are_kept_in_provider_metadata() -> None:
    dev = from_openai_chat([{"role": "developer", "content": "Be brief."}])[0]
    assert dev["role"] == "system" and dev["providerMetadata"]["openai"]["role"] == "developer"
    model = from_genai([{"role": "model", "parts": [{"text": "Hi"}]}])[0]
    assert model["role"] == "assistant" and model["providerMetadata"]["google"]["role"] == "model"


MISSING_KEYS = [
    (from_openai_chat, to_openai_chat,
     [{"role": "assistant", "content": None, "tool_calls": [{"type": "function",
       "function": {"name": "f"}}]}, {"role": "tool", "content": "r"}]),
    (from_openai_responses, to_openai_responses,
     [{"type": "function_call", "name": "f"}, {"type": "function_call_output"}]),
    (lambda m: from_anthropic(m), lambda m: to_anthropic(m)[1],
     [{"role": "assistant", "content": [{"type": "tool_use", "name": "f"}]},
      {"role": "user", "content": [{"type": "tool_result", "content": "r"}]}]),
]  # fmt: skip


@pytest.mark.parametrize(("into", "out", "payload"), MISSING_KEYS)
def test_missing_call_ids_and_arguments_stay_missing(into: Any, out: Any, payload: Any) -> None:
    converted = into(payload)
    assert out(converted) == payload
    stored = threadline.Session.create(":memory:").for_session("s").append_messages(converted)
    assert out(stored) == payload
