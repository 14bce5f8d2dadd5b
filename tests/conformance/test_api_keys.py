"""Conformance: HTTP API keys in the store (schema version 3), on every backend.

The store holds hashes only; ``threadline.server`` makes the keys (tests/server/ covers them).
"""

from __future__ import annotations

import pytest

from threadline.errors import InvalidArgumentError
from threadline.store import Store

HASH_A = "a" * 64
HASH_B = "b" * 64


def test_a_key_is_found_by_its_hash_with_its_app_and_user(store: Store) -> None:
    added = store.add_api_key("k1", "travel", "ana", HASH_A)
    assert (added.id, added.app, added.user_id, added.revoked) == ("k1", "travel", "ana", False)
    assert added.created_at.tzinfo is not None
    assert store.find_api_key(HASH_A) == added
    assert store.find_api_key(HASH_B) is None


def test_ids_and_hashes_are_unique(store: Store) -> None:
    store.add_api_key("k1", "travel", None, HASH_A)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        store.add_api_key("k1", "travel", None, HASH_B)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        store.add_api_key("k2", "other", None, HASH_A)
    assert [key.id for key in store.list_api_keys()] == ["k1"]


def test_revoked_keys_stay_listed_and_found_but_marked(store: Store) -> None:
    store.add_api_key("k1", "travel", None, HASH_A)
    store.add_api_key("k2", "shop", "bob", HASH_B)
    assert store.revoke_api_key("k1") is True
    assert store.revoke_api_key("k1") is False  # already revoked
    assert store.revoke_api_key("nope") is False
    listed = {key.id: key.revoked for key in store.list_api_keys()}
    assert listed == {"k1": True, "k2": False}
    found = store.find_api_key(HASH_A)
    assert found is not None and found.revoked


def test_bad_arguments_are_typed_errors(store: Store) -> None:
    with pytest.raises(InvalidArgumentError):
        store.add_api_key("", "travel", None, HASH_A)
    with pytest.raises(InvalidArgumentError):
        store.add_api_key("k1", "", None, HASH_A)
    with pytest.raises(InvalidArgumentError):
        store.find_api_key(42)  # type: ignore[arg-type]
