"""The four stored roles and the one rule folding other APIs' roles into them.

A stored message's role is ``system``, ``user``, ``assistant`` or ``tool``. Roles of other
APIs (``developer``, ``model``, ``function``...) are folded into one of those, and the
original is kept under ``providerMetadata[provider]["role"]`` so the matching ``to_*``
converter can give it back. Defined here, below both ``threadline.messages`` (which
re-exports it) and ``threadline.formats``, so neither imports the other for it.

>>> stored_role("developer"), stored_role("model"), stored_role("user")
('system', 'assistant', 'user')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
"""The roles a stored message may have; other APIs' roles arrive through the converters
(``threadline.formats``), which keep the original under ``providerMetadata``."""

# Roles of other APIs with an obvious home: the stored role, and the providerMetadata entry
# where a legacy row's original is kept (that provider's to_* gives it back).
_FOLDED: dict[str, tuple[str, str]] = {
    "developer": ("system", "openai"),
    "model": ("assistant", "google"),
    "function": ("tool", "openai"),  # OpenAI's legacy function results
    "ipython": ("tool", "threadline"),  # Llama tool results
    "human": ("user", "threadline"),
    "ai": ("assistant", "threadline"),
    "bot": ("assistant", "threadline"),
    "chatbot": ("assistant", "threadline"),
}
# Where a legacy row's unknown role is kept when no API claims it (no to_* restores it there).
_UNCLAIMED = "threadline"


def stored_role(role: object) -> str:
    """The stored role for ``role``: itself when it is one of :data:`ROLES`, else the role it
    folds into (``developer`` → ``system``, ``model`` → ``assistant``, ``function`` →
    ``tool``...); any other party speaking to the model is a ``user``.

    >>> stored_role("system"), stored_role("function"), stored_role("narrator")
    ('system', 'tool', 'user')
    """
    if isinstance(role, str):
        if role in ROLES:
            return role
        folded = _FOLDED.get(role.lower())
        if folded is not None:
            return folded[0]
    return "user"


def fold_message_role(message: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """``message`` (copied one level) with its role folded by :func:`stored_role`; an
    original role outside :data:`ROLES` is kept as ``providerMetadata[provider]["role"]``.
    What every ``from_*`` converter does with the roles of its API.

    >>> fold_message_role({"role": "developer", "parts": []}, "openai")
    {'role': 'system', 'parts': [], 'providerMetadata': {'openai': {'role': 'developer'}}}
    >>> fold_message_role({"role": "user", "parts": []}, "openai")
    {'role': 'user', 'parts': []}
    """
    out = dict(message)
    role = out.get("role")
    folded = stored_role(role)
    if role == folded:
        return out
    out["role"] = folded
    metadata = out.get("providerMetadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    kept = metadata.get(provider)
    metadata[provider] = {**(kept if isinstance(kept, Mapping) else {}), "role": role}
    out["providerMetadata"] = metadata
    return out


def fold_role(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a role older releases stored as given (any non-empty string outside
    :data:`ROLES`: ``developer``, ``model``, ``function``...) mapped the way the converters
    map it: the role :func:`stored_role` gives it, the original kept under
    ``providerMetadata`` — of the API it comes from, where the matching ``to_*`` restores it,
    else under ``threadline``. Import and ``fork`` copies run it; any other message is
    returned unchanged (the same object).

    >>> folded = fold_role({"id": "m1", "role": "developer", "parts": []})
    >>> folded["role"], folded["providerMetadata"]
    ('system', {'openai': {'role': 'developer'}})
    >>> fold_role({"id": "m2", "role": "function", "parts": []})["role"]
    'tool'
    >>> fold_role({"id": "m3", "role": "data", "parts": []})["providerMetadata"]
    {'threadline': {'role': 'data'}}
    """
    role = message.get("role")
    if not isinstance(role, str) or not role or role in ROLES:
        return message
    folded = _FOLDED.get(role.lower())
    return fold_message_role(message, folded[1] if folded is not None else _UNCLAIMED)


def restore_role(message: Mapping[str, Any], provider: str) -> Any:
    """The role ``message`` had before :func:`fold_message_role` (kept under
    ``providerMetadata[provider]["role"]``), else its stored role.

    >>> restore_role({"role": "system", "providerMetadata": {"openai": {"role": "developer"}}},
    ...              "openai")
    'developer'
    >>> restore_role({"role": "system"}, "openai")
    'system'
    """
    metadata = message.get("providerMetadata")
    if isinstance(metadata, Mapping):
        kept = metadata.get(provider)
        if isinstance(kept, Mapping) and "role" in kept:
            return kept["role"]
    return message.get("role")
