"""Pure helpers shared by the SQL stores: cursors, µs timestamps, registry rows, state undo."""

from __future__ import annotations

import base64
import contextlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from threadline.errors import InvalidArgumentError
from threadline.store._sql.rows import (
    datetime_to_us,
    decode_cursor,
    dumps,
    encode_cursor,
    is_session_key,
    merge_undo,
    row_to_session_info,
    state_owner,
    state_undo,
    stored_delta,
    us_to_datetime,
)

# --------------------------------------------------------------------------- time


@given(st.integers(min_value=0, max_value=2**53))
def test_microseconds_round_trip_exactly(us: int) -> None:
    assert datetime_to_us(us_to_datetime(us)) == us


def test_us_to_datetime_is_aware_utc() -> None:
    value = us_to_datetime(1_700_000_000_123_456)
    assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
    assert value.microsecond == 123_456


def test_naive_datetimes_count_as_utc() -> None:
    naive = datetime(2026, 11, 21, 10, 0, 0, 5)
    aware = naive.replace(tzinfo=UTC)
    assert datetime_to_us(naive) == datetime_to_us(aware)
    offset = datetime(2026, 11, 21, 11, 0, 0, 5, tzinfo=timezone(timedelta(hours=1)))
    assert datetime_to_us(offset) == datetime_to_us(aware)


def test_dumps_is_compact_and_keeps_unicode() -> None:
    assert dumps({"a": [1, "東京"]}) == '{"a":[1,"東京"]}'


# --------------------------------------------------------------------------- cursors


@given(st.integers(min_value=0, max_value=2**62), st.text())
def test_cursor_round_trip(updated_at: int, session_id: str) -> None:
    cursor = encode_cursor(updated_at, session_id)
    assert cursor.isascii() and "=" not in cursor
    assert decode_cursor(cursor) == (updated_at, session_id)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        "not a cursor",
        _b64(b"\xff\xfe"),
        _b64(b"{}"),
        _b64(b"[1]"),
        _b64(b'["a", 1]'),
        _b64(b'[1.5, "a"]'),
        _b64(b'[true, "a"]'),
        _b64(b'[1, "a", 2]'),
        "x" * 5000,
    ],
)
def test_malformed_cursors_raise_invalid_argument(cursor: str) -> None:
    with pytest.raises(InvalidArgumentError):
        decode_cursor(cursor)


@given(st.text(max_size=64))
def test_decode_cursor_never_raises_anything_else(text: str) -> None:
    with contextlib.suppress(InvalidArgumentError):
        decode_cursor(text)


# --------------------------------------------------------------------------- registry rows


def test_row_to_session_info() -> None:
    row = ("s1", "app", "u1", "n", "p", "m", "src", 3, 4, 0.5, "done", '{"k":[1]}', 7, 1, 2, 9)
    info = row_to_session_info(row)
    assert (info.id, info.app_name, info.user_id, info.name) == ("s1", "app", "u1", "n")
    assert (info.parent_session_id, info.model, info.source) == ("p", "m", "src")
    assert (info.input_tokens, info.output_tokens, info.estimated_cost) == (3, 4, 0.5)
    assert info.end_reason == "done" and info.metadata == {"k": [1]} and info.message_count == 7
    assert info.created_at == us_to_datetime(1) and info.updated_at == us_to_datetime(2)
    assert info.generation == 9


def test_row_to_session_info_tolerates_empty_metadata() -> None:
    row = ("s1", "app", None, None, None, None, None, 0, 0, 0, None, "", 0, 0, 0, 1)
    assert row_to_session_info(row).metadata == {}


# --------------------------------------------------------------------------- state


def test_state_owner_by_prefix() -> None:
    assert state_owner("app:theme", "s1", "u1") == ("app", "")
    assert state_owner("user:name", "s1", "u1") == ("user", "u1")
    assert state_owner("topic", "s1", "u1") == ("session", "s1")
    with pytest.raises(InvalidArgumentError):
        state_owner("user:name", "s1", None)


def test_stored_delta_drops_temp_and_checks_user_keys() -> None:
    assert stored_delta({"temp:x": 1, "a": None, "app:b": 2}, None) == {"a": None, "app:b": 2}
    assert stored_delta(None, None) == {}
    with pytest.raises(InvalidArgumentError):
        stored_delta({"user:name": "bob"}, None)
    with pytest.raises(InvalidArgumentError):
        stored_delta({"": 1}, "u1")


def test_is_session_key() -> None:
    assert is_session_key("topic")
    assert not any(is_session_key(k) for k in ("app:a", "user:a", "temp:a"))


def test_state_undo_records_only_session_keys() -> None:
    current = {"a": json.dumps({"x": 1}), "c": "null"}
    undo = state_undo({"a": 2, "b": None, "c": 5, "app:x": 1, "user:y": 2}, current)
    assert undo == {"a": [True, {"x": 1}], "b": [False, None], "c": [True, None]}


def test_merge_undo_earliest_record_wins() -> None:
    records = [None, '{"a":[true,1]}', "", '{"a":[false,null],"b":[true,"x"]}']
    assert merge_undo(records) == {"a": (True, 1), "b": (True, "x")}


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["a", "b", "c"]),
            st.tuples(st.booleans(), st.one_of(st.none(), st.integers(), st.text())),
        )
    )
)
def test_merge_undo_matches_first_occurrence(records: list[dict[str, tuple[bool, object]]]) -> None:
    texts = [dumps({k: list(v) for k, v in r.items()}) for r in records]
    expected: dict[str, tuple[bool, object]] = {}
    for record in records:
        for key, value in record.items():
            expected.setdefault(key, value)
    assert merge_undo(texts) == expected


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(value=_JSON, pad=st.sampled_from(["", " ", "\n", " \t"]))
def test_loads_stored_decodes_what_json_loads_decodes(value: object, pad: str) -> None:
    from threadline.store._sql.rows import loads_stored

    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert loads_stored(text) == json.loads(text)
    assert loads_stored(pad + text + pad) == json.loads(pad + text + pad)


@given(garbage=st.text(max_size=20))
def test_loads_stored_refuses_what_json_loads_refuses(garbage: str) -> None:
    from threadline.store._sql.rows import loads_stored

    try:
        expected: object = json.loads(garbage)
    except ValueError:
        with pytest.raises(ValueError):
            loads_stored(garbage)
    else:  # compared as JSON text: NaN (which json.loads accepts) is never equal to itself
        assert json.dumps(loads_stored(garbage)) == json.dumps(expected)
