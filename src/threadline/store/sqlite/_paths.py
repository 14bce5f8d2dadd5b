"""SQLite: what a path or ``file:`` URI opens (in-memory, read-only) and its read-only form."""

from __future__ import annotations

import os
import urllib.parse

from threadline.errors import InvalidArgumentError

__all__ = ["is_memory", "opens_read_only", "read_only_path"]


def is_memory(path: str) -> bool:
    """True if ``path`` names an in-memory database (no file behind it)."""
    return path in ("", ":memory:") or path.startswith("file::memory:") or "mode=memory" in path


def _uri_options(path: str) -> dict[str, str]:
    """The query parameters of a ``file:`` URI (the last one of a name wins), else ``{}``."""
    if not path.startswith("file:"):
        return {}
    query = path.partition("?")[2].partition("#")[0]
    return dict(urllib.parse.parse_qsl(query, keep_blank_values=True))


def opens_read_only(path: str) -> bool:
    """True if ``path`` is a ``file:`` URI that SQLite opens without write access."""
    options = _uri_options(path)
    immutable = options.get("immutable", "").lower() in ("1", "yes", "true", "on")
    return options.get("mode") == "ro" or immutable


def read_only_path(path: str) -> str:
    """``path`` (a file path or a ``file:`` URI) as a URI that opens the file read-only.

    >>> read_only_path("file:/tmp/a.db?cache=private")
    'file:/tmp/a.db?cache=private&mode=ro'
    >>> read_only_path("file:/tmp/a.db?mode=rw")
    Traceback (most recent call last):
    ...
    threadline.errors.InvalidArgumentError: read_only=True contradicts mode=rw in 'file:...?mode=rw'
    """
    if is_memory(path):
        raise InvalidArgumentError("an in-memory store cannot be opened read-only")
    if not path.startswith("file:"):
        return f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    mode = _uri_options(path).get("mode")
    if mode == "ro":
        return path
    if mode is not None:
        raise InvalidArgumentError(f"read_only=True contradicts mode={mode} in {path!r}")
    base, _, fragment = path.partition("#")
    joined = f"{base}{'&' if '?' in base else '?'}mode=ro"
    return f"{joined}#{fragment}" if fragment else joined
