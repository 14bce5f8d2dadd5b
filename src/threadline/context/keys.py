"""Keys for keyed entries of skill and search blocks.

Keys are computed over UTF-16 code units so that a key made here equals the key the
JavaScript implementations make for the same text (``"😀"`` counts as two units there).

>>> entry_key("no key")
'no-key-1nprufp'
>>> entry_key("ignored", title="Pirate style")
'pirate-style'
"""

from __future__ import annotations

import re

__all__ = ["SLUG_MAX_UNITS", "entry_key", "fnv1a_base36", "slug"]

SLUG_MAX_UNITS = 60
"""A slug is made from at most this many UTF-16 code units of its input."""

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def _utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of ``text``; lone surrogates pass through as themselves."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _base36(value: int) -> str:
    if value == 0:
        return "0"
    digits: list[str] = []
    while value:
        value, rem = divmod(value, 36)
        digits.append(_DIGITS[rem])
    return "".join(reversed(digits))


def slug(text: str) -> str:
    """Lowercase, dash-separated form of the first 60 UTF-16 code units of ``text``.

    Runs of characters outside ``a-z0-9`` become one ``-``; leading/trailing ``-`` go.

    >>> slug("Hello, World!")
    'hello-world'
    """
    units = _utf16_units(text)[:SLUG_MAX_UNITS]
    # Cutting may split a surrogate pair; "surrogatepass" keeps the half, which then
    # falls outside a-z0-9 like any other non-ASCII character.
    head = b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")
    return _NOT_SLUG.sub("-", head.lower()).strip("-")


def fnv1a_base36(text: str) -> str:
    """32-bit FNV-1a hash of the UTF-16 code units of ``text``, unsigned, in base 36.

    >>> fnv1a_base36("no key")
    '1nprufp'
    """
    value = _FNV_OFFSET
    for unit in _utf16_units(text):
        value ^= unit
        value = (value * _FNV_PRIME) & 0xFFFFFFFF
    return _base36(value)


def entry_key(content: str, title: str | None = None) -> str:
    """Key of a keyed entry: from ``title`` when given, else from ``content``.

    The same title always yields the same key, so writing it again updates that entry. An
    empty title counts as no title.

    >>> entry_key("Hello world")
    'hello-world-os091j'
    """
    if title:
        return slug(title) or f"entry-{fnv1a_base36(title)}"
    return f"{slug(content) or 'entry'}-{fnv1a_base36(content)}"
