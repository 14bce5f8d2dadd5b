"""``extract`` (long strings out of a message, as references) on arbitrary JSON: ``restore``
gives the message back, the input is never changed, containers holding no long string are
kept as they are (not copied), and each long string becomes exactly one blob."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline._attachments import ATTACH_MIN_BYTES, extract, restore

LONG = st.sampled_from(["x" * ATTACH_MIN_BYTES, "é" * (ATTACH_MIN_BYTES // 2), "a" * 70_000])
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON = st.recursive(
    SCALARS | LONG,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def _has_long(value: Any) -> bool:
    if isinstance(value, str):
        return len(value.encode("utf-8")) >= ATTACH_MIN_BYTES
    if isinstance(value, dict):
        return any(_has_long(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_long(v) for v in value)
    return False


def _shared_where_untouched(before: Any, after: Any) -> bool:
    if isinstance(before, (dict, list)) and not _has_long(before):
        return after is before
    if isinstance(before, dict):
        return all(_shared_where_untouched(before[k], after[k]) for k in before)
    if isinstance(before, list):
        return all(_shared_where_untouched(b, a) for b, a in zip(before, after, strict=True))
    return True


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(), JSON, max_size=5))
def test_extract_is_undone_by_restore_and_copies_only_what_it_changes(message: Any) -> None:
    original = copy.deepcopy(message)
    row, blobs, _ = extract(message)
    assert message == original
    assert restore(row, {b.sha256: b.data for b in blobs}) == message
    assert all(_shared_where_untouched(message[k], row[k]) for k in message)
    assert _has_long(row) is False and (not blobs) == (not _has_long(message))
