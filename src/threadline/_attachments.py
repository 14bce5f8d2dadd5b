"""Out-of-row attachments, the pure half: which values leave the row, and putting them back.

With the ``"attach"`` size policy (the default), every string of a message at least
:data:`ATTACH_MIN_BYTES` long (inline file and image data, long text, long tool output) is
stored out of row, content-addressed by SHA-256 and deduplicated within the app; the row keeps
a reference in its place::

    {"$threadline.attachment": "<sha256 hex>", "kind": "bytes" | "text", "bytes": N,
     "prefix": "data:image/png;base64,"}          # prefix only for a data URL

The content is stored exactly as written, so a read is always byte-identical: for a
``data:...;base64,`` URL (``kind`` ``"bytes"``) the base64 payload after the prefix, for any
other string (``kind`` ``"text"``) its UTF-8. Nothing is decoded on the write path; the file's
bytes are decoded only when ``read_attachment`` is asked for them.

>>> blob = "data:image/png;base64," + "QUJD" * 70_000
>>> row, parts, _ = extract({"id": "m", "role": "user", "parts": [{"type": "file", "url": blob}]})
>>> ref = row["parts"][0]["url"]
>>> ref["kind"], ref["bytes"], ref["prefix"], len(parts)
('bytes', 280000, 'data:image/png;base64,', 1)
>>> restore(row, {parts[0].sha256: parts[0].data})["parts"][0]["url"] == blob
True
"""

from __future__ import annotations

import binascii
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from threadline.errors import InvalidArgumentError, InvalidMessageError

__all__ = [
    "ATTACH_MIN_BYTES",
    "CHUNK_BYTES",
    "MARKER",
    "MARKER_JSON",
    "Blob",
    "Extracted",
    "SizePolicy",
    "content_of",
    "extract",
    "file_bytes",
    "has_refs",
    "is_ref",
    "ref_sha",
    "refuse_marker",
    "restore",
    "restore_json",
    "shas_of",
]

SizePolicy = Literal["attach", "truncate", "error"]

MARKER = "$threadline.attachment"
"""The key of a reference dict; reserved: a message that holds it as a key is refused."""

ATTACH_MIN_BYTES = 256 * 1024
"""Strings at least this many UTF-8 bytes long are stored out of row (``"attach"`` policy)."""

CHUNK_BYTES = 1024 * 1024
"""Attachments are stored in chunks of at most this many bytes."""

MARKER_JSON = '"' + MARKER + '"'
"""The reference key as it appears in stored JSON."""
_DATA_URL = re.compile(r"data:[^,;]{0,200}(?:;[^,;]{0,200}){0,8};base64,", re.I)


@dataclass(frozen=True)
class Blob:
    """One attachment's content: ``kind`` ``"bytes"`` (decoded base64) or ``"text"`` (UTF-8)."""

    sha256: str
    kind: str
    data: bytes


class Extracted(NamedTuple):
    """What :func:`extract` returns: the row message (references in place of long strings),
    the attachments, and how many more UTF-8 bytes the message's JSON takes than the row's
    (so that sizes count the message as written)."""

    row: dict[str, Any]
    blobs: list[Blob]
    extra_bytes: int


def _blob_of(text: str) -> tuple[dict[str, Any], Blob, int]:
    prefix = ""
    match = _DATA_URL.match(text)
    if match is not None and text.isascii():
        kind, prefix = "bytes", match.group(0)
        data = text[match.end() :].encode("ascii")
        json_size = len(json.dumps(prefix)) + len(text) - len(prefix)  # the payload: no escapes
        if b'"' in data or b"\\" in data:  # not base64 after all: measure it exactly
            json_size = len(json.dumps(text))
    else:
        kind = "text"
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidMessageError(f"message text is not valid UTF-8: {exc}") from None
        json_size = len(json.dumps(text, ensure_ascii=False).encode("utf-8"))
    sha = hashlib.sha256(data).hexdigest()
    ref: dict[str, Any] = {MARKER: sha, "kind": kind, "bytes": len(data)}
    if prefix:
        ref["prefix"] = prefix
    ref_size = len(json.dumps(ref, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return ref, Blob(sha, kind, data), json_size - ref_size


def extract(message: Mapping[str, Any]) -> Extracted:
    """``(row message, blobs)``: long strings replaced by references (see the module doc).

    The message is not changed; containers on the way to a replaced string are copied.
    ``InvalidMessageError`` if the message holds the reserved reference key, or a long text
    that is not valid UTF-8. A string used twice becomes one blob.

    >>> extract({"id": "m", "role": "user", "parts": []}).blobs
    []
    """
    blobs: dict[str, Blob] = {}
    extra = 0
    short = ATTACH_MIN_BYTES // 4  # fewer characters than this: cannot be long enough

    def walk(value: Any) -> Any:
        nonlocal extra
        if isinstance(value, str):
            if len(value) < short:  # skip the count
                return value
            size = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
            if size < ATTACH_MIN_BYTES:
                return value
            ref, blob, more = _blob_of(value)
            blobs.setdefault(blob.sha256, blob)
            extra += more
            return ref
        # Containers are copied only on the way to a replaced string; short strings and
        # scalars (nearly everything) are passed over without a call.
        if isinstance(value, dict):
            if MARKER in value:
                raise _reserved()
            copied: dict[str, Any] | None = None
            for key, item in value.items():
                if isinstance(item, str) and len(item) < short:
                    continue
                if isinstance(item, (str, dict, list)):
                    new = walk(item)
                    if new is not item:
                        if copied is None:
                            copied = dict(value)
                        copied[key] = new
            return value if copied is None else copied
        if isinstance(value, list):
            listed: list[Any] | None = None
            for index, item in enumerate(value):
                if isinstance(item, str) and len(item) < short:
                    continue
                if isinstance(item, (str, dict, list)):
                    new = walk(item)
                    if new is not item:
                        if listed is None:
                            listed = list(value)
                        listed[index] = new
            return value if listed is None else listed
        return value

    row = walk(dict(message))
    return Extracted(row, list(blobs.values()), extra)


def _reserved() -> InvalidMessageError:
    return InvalidMessageError(f"the key {MARKER!r} is reserved for attachments")


def refuse_marker(message: Mapping[str, Any], data: str) -> None:
    """``InvalidMessageError`` if ``message`` (encoded as ``data``) holds the reserved
    reference key anywhere: what :func:`extract` refuses under ``"attach"``, for the size
    policies that store the message whole (a forged reference would otherwise be resolved
    on read, to whatever attachment of the app it names). Walks only when ``data`` holds
    the key's JSON.

    >>> refuse_marker({"text": MARKER}, '{"text":"' + MARKER + '"}')  # a value, not a key
    >>> forged = {"x": {MARKER: "0" * 64}}
    >>> refuse_marker(forged, '{"x":{"' + MARKER + '":"' + "0" * 64 + '"}}')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    threadline.errors.InvalidMessageError: the key '$threadline.attachment' is reserved ...
    """
    if MARKER_JSON not in data:
        return
    pending: list[Any] = [message]
    while pending:  # iterative: the message was encoded, so it is finite, but may be deep
        value = pending.pop()
        if isinstance(value, dict):
            if MARKER in value:
                raise _reserved()
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)


def has_refs(data: str) -> bool:
    """Whether stored JSON may hold references (a cheap test before decoding).

    >>> has_refs('{"id":"m"}')
    False
    """
    return MARKER_JSON in data


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
    # Never repr() the argument itself: a hostile one may nest without bound.
    shown = repr(value[:80]) if isinstance(value, str) else type(ref).__name__
    raise InvalidArgumentError(f"not an attachment reference: {shown}")


def content_of(kind: str, data: bytes, prefix: str = "") -> str:
    """The original string of an attachment (its prefix, then the stored content).

    >>> content_of("bytes", b"QUJD", "data:text/plain;base64,")
    'data:text/plain;base64,QUJD'
    """
    return prefix + data.decode("ascii" if kind == "bytes" else "utf-8")


def file_bytes(data: bytes) -> bytes:
    """The file a stored base64 payload encodes, read as leniently as browsers read data URLs
    (line breaks skipped); its stored text if it cannot be read as base64 at all.

    >>> file_bytes(b"QUJD\\nQUJD")
    b'ABCABC'
    """
    try:
        return binascii.a2b_base64(data)
    except (binascii.Error, ValueError):
        return data


_REF_JSON = re.compile(
    r'\{"' + re.escape(MARKER) + r'":"([0-9a-f]{64})","kind":"(bytes|text)","bytes":\d+'
    r'(?:,"prefix":("(?:[^"\\]|\\.)*"))?\}'
)


def restore_json(data: str, fetch: Callable[[str], bytes]) -> str:
    """Stored row JSON with every reference replaced by the JSON of its original string, as
    text: the message is neither decoded nor encoded again (a reference is written by
    :func:`extract` in exactly this form, and the key is refused in messages).

    >>> ref = '{"' + MARKER + '":"' + "a" * 64 + '","kind":"text","bytes":2}'
    >>> restore_json('{"t":' + ref + '}', lambda sha: b"hi")
    '{"t":"hi"}'
    """

    def put_back(match: re.Match[str]) -> str:
        prefix = json.loads(match.group(3)) if match.group(3) else ""
        content = content_of(match.group(2), fetch(match.group(1)), prefix)
        return json.dumps(content, ensure_ascii=False)

    return _REF_JSON.sub(put_back, data)


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
