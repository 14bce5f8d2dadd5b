"""The wire model shared by ``Client`` and ``AsyncClient``: a request is a :class:`Call` (method,
path, query, body and how to decode the answer); answers decode to the library's own types and
error bodies map back to the library's own exception classes. No I/O here: the two transports
(sync and async httpx) only send a ``Call`` and hand the response back to :func:`finish`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import typing
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from threadline import errors
from threadline.errors import InvalidArgumentError, StoreError, ThreadlineError
from threadline.internal import check_id
from threadline.types import AUTO, CompactResult, Message, SessionInfo, SessionPage

T = TypeVar("T")
R = TypeVar("R")


class AuthenticationError(ThreadlineError):
    """The server refused the API key (HTTP 401: missing, unknown or revoked).

    >>> issubclass(AuthenticationError, ThreadlineError)
    True
    """


class RemoteError(ThreadlineError):
    """An answer the client cannot map to a threadline error: a status the library never
    raises for (a 5xx, an unknown route) or no answer at all (``status_code`` is ``None``).

    >>> err = RemoteError("boom", status_code=500, error_type="Internal Server Error")
    >>> str(err), err.status_code, err.error_type
    ('boom', 500, 'Internal Server Error')
    """

    def __init__(
        self, message: str, *, status_code: int | None = None, error_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_type = error_type


# The server names the threadline class in ``error.type``; the client raises that class.
_ERROR_CLASSES: dict[str, type[ThreadlineError]] = {
    name: cls
    for name in errors.__all__
    if isinstance(cls := getattr(errors, name), type) and issubclass(cls, ThreadlineError)
}
_ERROR_CLASSES["AuthenticationError"] = AuthenticationError


def error_from(response: httpx.Response) -> ThreadlineError:
    """The exception an error response stands for; ``status_code`` is set on it."""
    error_type: str | None = None
    message = response.reason_phrase or f"HTTP {response.status_code}"
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error_type = body["error"].get("type")
        message = str(body["error"].get("message") or message)
    status = response.status_code
    cls = _ERROR_CLASSES.get(error_type) if isinstance(error_type, str) else None
    exc: ThreadlineError
    if status == 401:
        exc = AuthenticationError(message)
    elif cls is StoreError:
        exc = StoreError("remote")
        exc.args = (message,)
    elif cls is not None:
        exc = cls(message)
    elif status in (400, 422):
        exc = InvalidArgumentError(message)
    else:
        exc = RemoteError(message, status_code=status, error_type=error_type)
    exc.status_code = status  # type: ignore[attr-defined]
    return exc


@contextlib.contextmanager
def transport_errors(call: Call[Any]) -> Iterator[None]:
    """A transport failure (refused, timed out...) as a ``RemoteError`` naming the request."""
    try:
        yield
    except httpx.TransportError as exc:
        detail = str(exc) or type(exc).__name__
        raise RemoteError(f"{call.method} {call.path} failed: {detail}") from exc


@dataclasses.dataclass(frozen=True)
class RawBody:
    """A request body sent as is (JSON Lines for an import)."""

    content: bytes
    content_type: str


# -- calls ---------------------------------------------------------------------------------------
NO_BODY: Any = object()


@dataclasses.dataclass(frozen=True)
class Call(Generic[R]):
    """One request and how to read its answer (pure data; sent by either transport)."""

    method: str
    path: str
    decode: Callable[[httpx.Response], R]
    params: Mapping[str, Any] | None = None
    body: Any = NO_BODY
    none_if_missing: bool = False  # a 404 reads as ``None`` (``get``, ``get_message``...)

    def request_options(self) -> dict[str, Any]:
        """Keyword arguments for ``httpx.Client.request`` / ``AsyncClient.request``."""
        options: dict[str, Any] = {}
        if self.params:
            options["params"] = {
                k: _query_value(v) for k, v in self.params.items() if v is not None
            }
        if isinstance(self.body, RawBody):
            options["content"] = self.body.content
            options["headers"] = {"content-type": self.body.content_type}
        elif self.body is not NO_BODY:
            try:
                options["content"] = json.dumps(self.body, allow_nan=False).encode()
            except (TypeError, ValueError) as exc:
                raise InvalidArgumentError(f"not JSON-serialisable: {exc}") from None
            options["headers"] = {"content-type": "application/json"}
        return options


def finish(call: Call[R], response: httpx.Response) -> R:
    """Decode a response to ``call``, or raise the threadline error it carries."""
    if response.status_code == 404 and call.none_if_missing:
        return None  # type: ignore[return-value]  # R includes None for such calls
    if response.status_code >= 400:
        raise error_from(response)
    return call.decode(response)


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def segment(value: str, what: str = "an id") -> str:
    """One URL path segment (ids may hold any character, ``/`` included), checked as the
    library checks an id: an empty one would make another route's path.

    >>> segment("a/b"), segment("..")
    ('a%2Fb', '%2E%2E')
    >>> segment("")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: an id must be a non-empty string, got ''
    """
    quoted = quote(check_id(what, value), safe="")
    # "." and ".." would be dot-segments, removed from the path by URL normalisation.
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


def body_without(values: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON body without the arguments left at ``None`` (the server's defaults apply)."""
    return {k: v for k, v in values.items() if v is not None}


def parent_field(parent_id: Any) -> dict[str, Any]:
    """``parent_id`` as sent: omitted for AUTO (the head), ``null`` for a new root."""
    return {} if parent_id is AUTO else {"parent_id": parent_id}


# -- decoders ------------------------------------------------------------------------------------
def nothing(response: httpx.Response) -> None:
    """Decoder for answers without a result (204)."""
    return None


def message(response: httpx.Response) -> Message:
    """Decoder of one message (a JSON object)."""
    return _object(response.json())


def json_of_object(response: httpx.Response) -> dict[str, Any]:
    """Decoder of a JSON object kept as a dict."""
    return _object(response.json())


def messages(key: str) -> Callable[[httpx.Response], list[Message]]:
    """Decoder of ``{key: [message, ...]}``."""
    return field(key, lambda items: [_object(item) for item in items])


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise RemoteError(f"expected a JSON object, got {type(value).__name__}")
    return value


def field(name: str, then: Callable[[Any], T]) -> Callable[[httpx.Response], T]:
    """Decoder taking one field of a JSON object (``{"messages": [...]}`` → the list)."""

    def decode(response: httpx.Response) -> T:
        return then(response.json()[name])

    return decode


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def parse_datetime(value: Any) -> datetime | None:
    """An ISO 8601 string (``Z`` accepted) as an aware datetime; ``None`` stays ``None``."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def as_type(cls: type[T], data: Mapping[str, Any]) -> T:
    """A library dataclass from its ``to_dict()`` JSON form (datetimes parsed, unknown keys
    ignored, so a newer server adding fields does not break an older client)."""
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        if "datetime" in str(hints.get(f.name)):
            value = parse_datetime(value)
        values[f.name] = value
    return cls(**values)


def decoder(cls: type[T]) -> Callable[[httpx.Response], T]:
    """Decoder of one library dataclass."""
    return lambda response: as_type(cls, response.json())


def list_of(cls: type[T], key: str) -> Callable[[httpx.Response], list[T]]:
    """Decoder of ``{key: [...]}`` into a list of library dataclasses."""
    return lambda response: [as_type(cls, item) for item in response.json()[key]]


def session_page(response: httpx.Response) -> SessionPage:
    """Decoder of ``GET /v1/sessions``."""
    data = response.json()
    return SessionPage(
        [as_type(SessionInfo, item) for item in data["sessions"]], data.get("next_cursor")
    )


def str_or_none(value: Any) -> str | None:
    """A JSON value as an optional string (``head_id``)."""
    return None if value is None else str(value)


def tool_list(value: Any) -> list[dict[str, Any]]:
    """The tool definitions of ``GET .../tools`` as dicts."""
    return [dict(item) for item in value]


def true(response: httpx.Response) -> bool:
    """Decoder of an answer that only says the thing was there (a delete of a message)."""
    return True


def attachment(response: httpx.Response) -> bytes | str:
    """Decoder of an attachment: ``str`` for a text type, else ``bytes``."""
    if response.headers.get("content-type", "").startswith("text/"):
        return response.text
    return response.content


def compact_result(response: httpx.Response) -> CompactResult | None:
    """Decoder of ``POST .../compact``: a ``CompactResult``, or ``None`` when declined."""
    data = response.json()
    result = data.get("result") if isinstance(data, dict) and "result" in data else data
    return None if result is None else as_type(CompactResult, result)


def tool_result(response: httpx.Response) -> str:
    """Decoder of a tool run: its result text."""
    return str(response.json()["result"])


def json_lines(response: httpx.Response) -> list[dict[str, Any]]:
    """Decoder of a JSON Lines answer (``GET /v1/export``)."""
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]
