"""Conformance: usage counters that would overflow are refused (a typed error, counters kept),
on every backend — PostgreSQL raised a driver error, SQLite stored a float or ``inf``.
Found by the HTTP schema fuzzing (``POST .../usage`` with a huge cost, twice)."""

from __future__ import annotations

import pytest

from threadline.errors import InvalidArgumentError
from threadline.store import Store

INT64_MAX = 2**63 - 1


def test_token_counters_never_pass_int64(store: Store) -> None:
    store.add_usage("a", "s", INT64_MAX, 0, 0.0)
    with pytest.raises(InvalidArgumentError, match="input_tokens"):
        store.add_usage("a", "s", 1, 0, 0.0)
    store.add_usage("a", "s", 0, INT64_MAX, 0.0)
    with pytest.raises(InvalidArgumentError, match="output_tokens"):
        store.add_usage("a", "s", 0, 1, 0.0)
    info = store.get_session("a", "s")
    assert info is not None
    assert (info.input_tokens, info.output_tokens) == (INT64_MAX, INT64_MAX)
    assert isinstance(info.input_tokens, int)


def test_cost_never_becomes_infinite(store: Store) -> None:
    store.add_usage("a", "s", 0, 0, 1.5e308)
    with pytest.raises(InvalidArgumentError, match="estimated_cost"):
        store.add_usage("a", "s", 0, 0, 1.5e308)
    info = store.get_session("a", "s")
    assert info is not None and info.estimated_cost == 1.5e308
