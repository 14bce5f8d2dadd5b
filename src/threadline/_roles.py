"""The four stored roles and the one rule folding other APIs' roles into them.

A stored message's role is ``system``, ``user``, ``assistant`` or ``tool``. Roles of other
APIs (``developer``, ``model``, ``function``...) are folded into one of those, and the
original is kept under ``providerMetadata[provider]["role"]`` so the matching ``to_*``
converter (or an export) can give it back. Defined here, below both ``threadline.messages``
(which re-exports it) and ``threadline.formats``, so neither imports the other for it.

>>> fold_role("developer"), fold_role("model"), fold_role("user")
('system', 'assistant', 'user')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
"""The roles a stored message may have."""

# Roles of other APIs and older stores with an obvious home; any other role is a party
# speaking to the model, so a user turn (its name kept, see fold_message_role).
_FOLDED = {
    "developer": "system",  # OpenAI
    "model": "assistant",  # Google GenAI / ADK
    "function": "tool",  # OpenAI's legacy function results, GenAI's old function role
    "ipython": "tool",  # Llama tool results
    "human": "user",
    "ai": "assistant",
    "bot": "assistant",
    "chatbot": "assistant",
}


def fold_role(role: object) -> str:
    """The stored role for ``role``: itself when it is one of :data:`ROLES`, else the role it
    folds into (``developer`` → ``system``, ``model`` → ``assistant``, ``function`` →
    ``tool``, anything else → ``user``).

    >>> fold_role("system"), fold_role("function"), fold_role("narrator")
    ('system', 'tool', 'user')
    """
    if isinstance(role, str):
        if role in ROLES:
            return role
        return _FOLDED.get(role.lower(), "user")
    return "user"


def fold_message_role(message: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """``message`` (copied one level) with its role folded by :func:`fold_role`; an original
    role outside :data:`ROLES` is kept as ``providerMetadata[provider]["role"]``.

    >>> fold_message_role({"role": "developer", "parts": []}, "openai")
    {'role': 'system', 'parts': [], 'providerMetadata': {'openai': {'role': 'developer'}}}
    >>> fold_message_role({"role": "user", "parts": []}, "openai")
    {'role': 'user', 'parts': []}
    """
    out = dict(message)
    role = out.get("role")
    folded = fold_role(role)
    if role == folded:
        return out
    out["role"] = folded
    metadata = out.get("providerMetadata")
    metadata = dict(metadata) if isinstance(metadata, Mapping) else {}
    kept = metadata.get(provider)
    metadata[provider] = {**(kept if isinstance(kept, Mapping) else {}), "role": role}
    out["providerMetadata"] = metadata
    return out


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
