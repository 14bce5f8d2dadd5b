"""Message ids: new time-ordered ids, and the reserved prefix of compaction overlays' ids.

Re-exported by :mod:`threadline.messages`, the public home of these names.

>>> validate_message_id(new_id()) != "", is_overlay_id(OVERLAY_ID_PREFIX + "1")
(True, True)
"""

from __future__ import annotations

import os
import time

from threadline.errors import InvalidMessageError

OVERLAY_ID_PREFIX = "compaction_"
"""Ids with this prefix belong to compaction overlays and are refused for stored messages."""


def new_id() -> str:
    """Return a new unique message id: 32 lowercase hex characters, time-ordered — the first
    12 are the creation time in milliseconds, the other 20 random (80 bits) — so ids made
    later sort later and the stores' id indexes grow at one end instead of splitting pages
    anywhere.

    >>> first, second = new_id(), new_id()
    >>> len(first), first[:12] <= second[:12]
    (32, True)
    """
    return f"{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"


def is_overlay_id(message_id: object) -> bool:
    """True if ``message_id`` is a string using the reserved compaction-overlay prefix.

    >>> is_overlay_id("compaction_abc"), is_overlay_id("m1")
    (True, False)
    """
    return isinstance(message_id, str) and message_id.startswith(OVERLAY_ID_PREFIX)


def validate_message_id(message_id: object) -> str:
    """Return ``message_id`` if it is a usable stored-message id, else raise InvalidMessageError.

    >>> validate_message_id("m1")
    'm1'
    """
    if not isinstance(message_id, str):
        raise InvalidMessageError(f"message id must be a string, got {type(message_id).__name__}")
    if not message_id:
        raise InvalidMessageError("message id must not be empty")
    if is_overlay_id(message_id):
        raise InvalidMessageError(
            f"message id {message_id!r} uses the reserved prefix {OVERLAY_ID_PREFIX!r}"
        )
    return message_id
