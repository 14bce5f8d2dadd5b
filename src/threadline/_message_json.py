"""The one stored JSON form (compact, non-ASCII kept, no NaN) and its lenient twin.

Re-exported by :mod:`threadline.messages`, the public home of these names.

>>> decode_message(encode_message({"id": "m1", "role": "user", "parts": []}))["id"]
'm1'
"""

from __future__ import annotations

import json
from typing import Any

from threadline.errors import InvalidMessageError
from threadline.types import Message

_COMPACT: dict[str, Any] = {"separators": (",", ":"), "ensure_ascii": False}
# Built once: json.dumps with any option builds a new encoder per call, which costs about as
# much as encoding a small message. An encoder keeps no state between calls (thread-safe).
_STORED_ENCODER = json.JSONEncoder(allow_nan=False, **_COMPACT)
_LENIENT_ENCODER = json.JSONEncoder(default=str, **_COMPACT)


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept: the one stored form (messages, metadata, state). NaN and
    infinities are refused (``ValueError``): they are not JSON.

    >>> dumps({"a": [1, "é"]})
    '{"a":[1,"é"]}'
    """
    return _STORED_ENCODER.encode(value)


def compact_json(value: Any) -> str:
    """:func:`dumps`, except that non-JSON values become ``str`` instead of raising.

    The encoding used to measure and render structured values (tool inputs and outputs,
    micro-compaction sizes, token estimates).

    >>> compact_json({"a": [1, "é"], "b": {1, 2}})
    '{"a":[1,"é"],"b":"{1, 2}"}'
    """
    return _LENIENT_ENCODER.encode(value)


def encode_message(message: Message) -> str:
    """Encode a message in the stored form (UTF-8 size = stored byte size).

    >>> encode_message({"id": "m1", "role": "user", "parts": []})
    '{"id":"m1","role":"user","parts":[]}'
    """
    return dumps(message)


def decode_message(text: str) -> Message:
    """Decode JSON produced by :func:`encode_message`.

    >>> decode_message('{"id":"m1","role":"user","parts":[]}')["id"]
    'm1'
    """
    value = json.loads(text)
    if not isinstance(value, dict):
        raise InvalidMessageError("stored message JSON is not an object")
    return value
