"""Out-of-row attachments, the pure half: which values leave the row, and putting them back.

With the ``"attach"`` size policy (the default), every string of a message at least
:data:`ATTACH_MIN_BYTES` long (inline file and image data, long text, long tool output) is
stored out of row, content-addressed by SHA-256 and deduplicated within the app; the row keeps
a reference in its place::

    {"$threadline.attachment": "<sha256 hex>", "kind": "bytes" | "text", "bytes": N,
     "prefix": "data:image/png;base64,"}          # prefix only for a data URL

Base64 payloads (a ``data:...;base64,`` URL or a bare base64 string) are stored as the bytes
they encode — a quarter smaller, and what ``read_attachment`` returns — but only when encoding
those bytes again gives back exactly the same string, so a read is always byte-identical.

>>> blob = "data:image/png;base64," + "QUJD" * 70_000
>>> row, parts = extract({"id": "m", "role": "user", "parts": [{"type": "file", "url": blob}]})
>>> ref = row["parts"][0]["url"]
>>> ref["kind"], ref["bytes"], ref["prefix"], len(parts)
('bytes', 210000, 'data:image/png;base64,', 1)
>>> restore(row, {parts[0].sha256: parts[0].data})["parts"][0]["url"] == blob
True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from threadline.errors import InvalidMessageError

__all__ = [
    "ATTACH_MIN_BYTES",
    "CHUNK_BYTES",
    "MARKER",
    "Blob",
    "SizePolicy",
    "content_of",
    "extract",
    "has_refs",
    "is_ref",
    "ref_sha",
    "restore",
    "shas_of",
]

SizePolicy = Literal["attach", "truncate", "error"]

MARKER = "$threadline.attachment"
"""The key of a reference dict; reserved: a message that holds it as a key is refused."""

ATTACH_MIN_BYTES = 256 * 1024
"""Strings at least this many UTF-8 bytes long are stored out of row (``"attach"`` policy)."""

CHUNK_BYTES = 1024 * 1024
"""Attachments are stored in chunks of at most this many bytes."""

_MARKER_JSON = '"' + MARKER + '"'
_DATA_URL = re.compile(r"data:[^,;]{0,200}(?:;[^,;]{0,200}){0,8};base64,", re.I)
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*={0,2}")


@dataclass(frozen=True)
class Blob:
    """One attachment's content: ``kind`` ``"bytes"`` (decoded base64) or ``"text"`` (UTF-8)."""

    sha256: str
    kind: str
    data: bytes


def _canonical_base64(payload: str) -> bytes | None:
    """The bytes ``payload`` encodes, if encoding them again gives exactly ``payload``."""
    if len(payload) % 4 or not payload.isascii():
        return None
    raw = payload.encode("ascii")
    if _BASE64.fullmatch(raw) is None:
        return None
    try:
        decoded = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
    return decoded if base64.b64encode(decoded) == raw else None


def _blob_of(text: str) -> tuple[dict[str, Any], Blob]:
    prefix = ""
    match = _DATA_URL.match(text)
    decoded = _canonical_base64(text[match.end() :] if match else text)
    if decoded is not None:
        kind, data, prefix = "bytes", decoded, match.group(0) if match else ""
    else:
        kind, data = "text", text.encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    ref: dict[str, Any] = {MARKER: sha, "kind": kind, "bytes": len(data)}
    if prefix:
        ref["prefix"] = prefix
    return ref, Blob(sha, kind, data)


def extract(message: Mapping[str, Any]) -> tuple[dict[str, Any], list[Blob]]:
    """``(row message, blobs)``: long strings replaced by references (see the module doc).

    The message is not changed; containers on the way to a replaced string are copied.
    ``InvalidMessageError`` if the message holds the reserved reference key.

    >>> row, blobs = extract({"id": "m", "role": "user", "parts": [{"type": "text", "text": "hi"}]})
    >>> blobs
    []
    """
    blobs: dict[str, Blob] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if len(value) < ATTACH_MIN_BYTES // 4 or len(value.encode("utf-8")) < ATTACH_MIN_BYTES:
                return value
            ref, blob = _blob_of(value)
            blobs.setdefault(blob.sha256, blob)
            return ref
        if isinstance(value, dict):
            if MARKER in value:
                raise InvalidMessageError(f"the key {MARKER!r} is reserved for attachments")
            changed = {k: walk(v) for k, v in value.items()}
            return changed if any(changed[k] is not value[k] for k in value) else value
        if isinstance(value, list):
            items = [walk(v) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    row = walk(dict(message))
    return row, list(blobs.values())


def has_refs(data: str) -> bool:
    """Whether stored JSON may hold references (a cheap test before decoding).

    >>> has_refs('{"id":"m"}')
    False
    """
    return _MARKER_JSON in data


def is_ref(value: object) -> bool:
    """Whether ``value`` is a reference dict.

    >>> is_ref({MARKER: "ab" * 32, "kind": "text", "bytes": 1})
    True
    """
    return isinstance(value, dict) and isinstance(value.get(MARKER), str)


def ref_sha(ref: object) -> str:
    """The SHA-256 of a reference dict or of a ``"sha256:<hex>"``/``"<hex>"`` string.

    >>> ref_sha("sha256:" + "0" * 64) == "0" * 64
    True
    """
    value = ref.get(MARKER) if isinstance(ref, dict) else ref
    if isinstance(value, str):
        sha = value.removeprefix("sha256:").lower()
        if len(sha) == 64 and all(c in "0123456789abcdef" for c in sha):
            return sha
    raise InvalidMessageError(f"not an attachment reference: {str(ref)[:80]!r}")


def content_of(kind: str, data: bytes, prefix: str = "") -> str:
    """The original string of an attachment: base64 again for bytes, else the text.

    >>> content_of("bytes", b"ABC", "data:text/plain;base64,")
    'data:text/plain;base64,QUJD'
    """
    if kind == "bytes":
        return prefix + base64.b64encode(data).decode("ascii")
    return data.decode("utf-8")


def restore(message: Any, contents: Mapping[str, bytes] | Callable[[str], bytes]) -> Any:
    """The message with every reference replaced by its original string.

    ``contents`` maps a SHA-256 to the stored bytes (or is a function doing so).

    >>> restore({"a": [{MARKER: "x", "kind": "text", "bytes": 2}]}, {"x": b"hi"})
    {'a': ['hi']}
    """
    fetch = contents.__getitem__ if isinstance(contents, Mapping) else contents

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            if is_ref(value):
                data = fetch(value[MARKER])
                return content_of(str(value.get("kind")), data, str(value.get("prefix", "")))
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(message)


def shas_of(message: Any) -> set[str]:
    """The SHA-256 of every reference in a row message.

    >>> sorted(shas_of({"p": [{MARKER: "b", "kind": "text", "bytes": 1}]}))
    ['b']
    """
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if is_ref(value):
                found.add(value[MARKER])
                return
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(message)
    return found
