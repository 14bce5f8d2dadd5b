"""The storage contract, part four: HTTP API keys (see ``threadline.store.base``).

Only a hash of each key is stored (``threadline.server`` hashes; the store never sees a key).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from threadline.store._contract.values import ApiKey


@runtime_checkable
class KeysContract(Protocol):
    """API keys: add one (by hash), find one by hash, list them, revoke one."""

    def add_api_key(self, key_id: str, app: str, user_id: str | None, key_hash: str) -> ApiKey:
        """Record a key (bound to ``app``, and to ``user_id`` when given) by its hash.
        An id or hash that exists raises ``InvalidArgumentError``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.add_api_key("k1", "travel", "ana", "ab" * 32).user_id
        'ana'
        >>> store.add_api_key("k1", "travel", None, "cd" * 32)
        Traceback (most recent call last):
        threadline.errors.InvalidArgumentError: API key 'k1' already exists
        """

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        """The key with this hash (revoked ones too: check ``revoked``), or ``None``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.add_api_key("k1", "travel", None, "ab" * 32)
        >>> store.find_api_key("ab" * 32).id, store.find_api_key("00" * 32)
        ('k1', None)
        """

    def list_api_keys(self) -> list[ApiKey]:
        """Every key of the store (all apps), oldest first.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.add_api_key("k1", "travel", None, "ab" * 32)
        >>> [key.id for key in store.list_api_keys()]
        ['k1']
        """

    def revoke_api_key(self, key_id: str) -> bool:
        """Mark a key revoked (it stays listed); ``False`` if no such key or already revoked.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.add_api_key("k1", "travel", None, "ab" * 32)
        >>> store.revoke_api_key("k1"), store.revoke_api_key("k1"), store.revoke_api_key("k9")
        (True, False, False)
        >>> store.find_api_key("ab" * 32).revoked
        True
        """
