"""API keys of the HTTP service: made here, stored by the store as a hash only.

A key reads ``tl_<id>_<secret>``: the id (also the store's row id, shown by ``list_keys``)
names it for revocation; the secret makes it unguessable. The store keeps the SHA-256 of the
whole key, so a stolen database yields no usable key.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from threadline.errors import InvalidArgumentError
from threadline.store import Store, connect

T = TypeVar("T")

PREFIX = "tl_"


def hash_key(key: str) -> str:
    """The SHA-256 (hex) of a key: what the store holds and looks keys up by.

    >>> len(hash_key("tl_abc_secret"))
    64
    """
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def key_id_of(key: str) -> str:
    """The id inside a key made by :func:`create_key` (what ``revoke_key`` takes).

    >>> key_id_of("tl_0123456789ab_s3cr3t")
    '0123456789ab'
    """
    if not key.startswith(PREFIX) or "_" not in key[len(PREFIX) :]:
        raise InvalidArgumentError("not a threadline API key (expected tl_<id>_<secret>)")
    return key[len(PREFIX) :].split("_", 1)[0]


def iso_z(value: datetime) -> str:
    """An aware datetime as ISO-8601 UTC with ``Z`` (the HTTP service's datetime format).

    >>> iso_z(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    '2026-01-02T03:04:05Z'
    """
    text = value.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def _with_store(store: Store | str, fn: Callable[[Store], T]) -> T:
    if isinstance(store, str):
        with connect(store) as opened:
            return fn(opened)
    return fn(store)


def create_key(store: Store | str, app: str, user: str | None = None) -> str:
    """Make an API key for ``app`` (bound to ``user`` when given); only its hash is stored.
    The key is returned once: keep it, it cannot be shown again.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> key = create_key(store, "travel", user="ana")
    >>> key.startswith("tl_"), list_keys(store)[0]["app"], list_keys(store)[0]["user"]
    (True, 'travel', 'ana')
    """
    key_id = secrets.token_hex(6)
    key = f"{PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    _with_store(store, lambda s: s.add_api_key(key_id, app, user, hash_key(key)))
    return key


def list_keys(store: Store | str) -> list[dict[str, Any]]:
    """Every key of the store (never the key itself): ``id``, ``app``, ``user``,
    ``created_at`` (ISO-8601 UTC ``Z``) and ``revoked``, oldest first.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> _ = create_key(store, "travel")
    >>> sorted(list_keys(store)[0])
    ['app', 'created_at', 'id', 'revoked', 'user']
    """
    return [
        {
            "id": key.id,
            "app": key.app,
            "user": key.user_id,
            "created_at": iso_z(key.created_at),
            "revoked": key.revoked,
        }
        for key in _with_store(store, lambda s: s.list_api_keys())
    ]


def revoke_key(store: Store | str, key_id: str) -> bool:
    """Revoke a key by id (requests with it get 401 at once, on every worker); ``False`` if
    there is no such key or it was already revoked.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> key = create_key(store, "travel")
    >>> revoke_key(store, key_id_of(key)), revoke_key(store, key_id_of(key))
    (True, False)
    """
    return _with_store(store, lambda s: s.revoke_api_key(key_id))
