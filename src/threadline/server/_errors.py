"""Every error of the HTTP service as ``{"error": {"type", "message"}}`` with its status.

``type`` is the ``ThreadlineError`` subclass name for library errors, else the HTTP name of the
status (``NotFound``, ``Unauthorized``, ``PayloadTooLarge``, ...). A 500 is a defect: it is
logged with its traceback and answered without internals.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from threadline import errors

_log = logging.getLogger("threadline.server")

# Most specific first: the first matching class decides the status.
_STATUS: tuple[tuple[type[errors.ThreadlineError], int], ...] = (
    (errors.SessionNotFoundError, 404),
    (errors.MessageNotFoundError, 404),
    (errors.BlockNotFoundError, 404),
    (errors.AttachmentNotFoundError, 404),
    (errors.SessionExistsError, 409),
    (errors.HeadMovedError, 409),
    (errors.StoreError, 503),
    (errors.ModelError, 502),  # the model endpoint behind a turn failed, not the request
)

_HTTP_NAMES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "ValidationError",
    500: "InternalServerError",
    502: "BadGateway",
    503: "ServiceUnavailable",
}


def http_name(status: int) -> str:
    """The ``type`` of an error that is not a library error: the status's name.

    >>> http_name(404), http_name(418)
    ('NotFound', 'ImATeapot')
    """
    if status in _HTTP_NAMES:
        return _HTTP_NAMES[status]
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return "HTTPError"
    return "".join(word[:1].upper() + word[1:] for word in phrase.replace("'", "").split())


def body(kind: str, message: str) -> dict[str, Any]:
    """The JSON body of an error.

    >>> body("NotFound", "no such route")
    {'error': {'type': 'NotFound', 'message': 'no such route'}}
    """
    return {"error": {"type": kind, "message": message}}


def status_of(exc: errors.ThreadlineError) -> int:
    """The HTTP status of a library error: 404 missing, 409 exists, 503 storage down, 502 model
    endpoint failed, 400 for every other bad input.

    >>> status_of(errors.SessionNotFoundError("gone")), status_of(errors.InvalidArgumentError("x"))
    (404, 400)
    """
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 400


def message_of(exc: BaseException) -> str:
    """The readable message of an exception (``KeyError`` subclasses without their quotes).

    >>> message_of(errors.SessionNotFoundError("session 's1' not found"))
    "session 's1' not found"
    """
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc)
