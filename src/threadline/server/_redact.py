"""Keep API keys out of the server's logs.

uvicorn's access log prints each request's path with its raw query string, and the event
stream accepts the key as ``?access_token=`` (``EventSource`` cannot send headers). The key
is accepted however the parameter name is spelled once decoded (``access%5Ftoken``), so
matching one spelling is not enough. :func:`redact_target` rewrites a logged target:

* a query parameter whose decoded name is not a plain word, or names a secret (``token``,
  ``key``, ``auth``, ``secret``, ``password``, ``signature``, in any case), keeps at most
  its name: ``access%5Ftoken=tl_...`` becomes ``access_token=***``; a piece that is not a
  plain ``name=value`` becomes ``***``;
* anything shaped like a threadline key (``tl_<id>_<secret>``, decoded), in the path or in
  any value, is replaced by ``tl_***``.

Headers are never logged (uvicorn's access line has none), so ``Authorization`` cannot
appear; :class:`RedactKeys` still applies the key-shape rule to every string argument of
the records it filters.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

_PLAIN_NAME = re.compile(r"[a-z0-9_.\-\[\]]{1,64}")
_SECRET_NAME = re.compile(r"token|key|auth|secret|passw|signature|credential")
_KEY_SHAPE = re.compile(r"tl_[0-9a-z]+_[0-9a-z_\-]+", re.IGNORECASE)
_LOGGERS = ("uvicorn.access", "uvicorn.error")


def _decoded(text: str) -> str:
    """``text`` percent-decoded until it no longer changes (double encoding included)."""
    for _ in range(4):
        once = unquote_plus(text)
        if once == text:
            break
        text = once
    return text


def _redact_piece(piece: str) -> str:
    name, sep, value = piece.partition("=")
    plain = _decoded(name).strip().lower()
    if not sep or not _PLAIN_NAME.fullmatch(plain):
        return "***" if piece else piece
    if _SECRET_NAME.search(plain):
        return f"{plain}=***"
    if _KEY_SHAPE.search(_decoded(value)):
        return f"{plain}=tl_***"
    return piece


def redact_target(target: str) -> str:
    """``target`` (a path with its query string) with keys and secret parameters hidden.

    >>> redact_target("/v1/e?access%5Ftoken=tl_ab12_secret&limit=5")
    '/v1/e?access_token=***&limit=5'
    >>> redact_target("/v1/e?ACCESS_TOKEN=x&access_token=y;x=tl_0a_s")
    '/v1/e?access_token=***&access_token=***;x=tl_***'
    >>> redact_target("/v1/e?access_token%3Dtl_ab12_secret")
    '/v1/e?***'
    """
    path, sep, query = target.partition("?")
    if _KEY_SHAPE.search(_decoded(path)):
        path = _KEY_SHAPE.sub("tl_***", _decoded(path))
    if not sep:
        return path
    pieces = re.split(r"([&;])", query)  # keeps the separators as they were
    return path + "?" + "".join(p if p in "&;" else _redact_piece(p) for p in pieces)


class RedactKeys(logging.Filter):
    """Hides keys in the string arguments of uvicorn's access and error records.

    >>> args = ("127.0.0.1:1", "GET", "/e?access%5Ftoken=tl_x_y", "1.1", 200)
    >>> record = logging.LogRecord("uvicorn.access", 20, "", 0, "%s %s %s %s %d", args, None)
    >>> RedactKeys().filter(record), record.args[2]
    (True, '/e?access_token=***')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        # Access lines: every string argument is a target (or an address, method, version).
        clean = redact_target if record.name == "uvicorn.access" else _hide_keys
        if isinstance(record.args, tuple):
            record.args = tuple(clean(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = _hide_keys(record.msg)
        return True


def _hide_keys(text: str) -> str:
    return _KEY_SHAPE.sub("tl_***", text) if "tl_" in text.lower() else text


def redact_server_logs() -> None:
    """Install :class:`RedactKeys` on uvicorn's loggers (once each)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactKeys) for f in logger.filters):
            logger.addFilter(RedactKeys())
