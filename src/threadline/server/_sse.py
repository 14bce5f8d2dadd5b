"""The server-sent-event plumbing both event feeds share (a session's, ``_events``; an
app's session list, ``_list_events``): event ids, the SSE text, a subscriber's byte-bounded
buffer, the replay history for ``Last-Event-ID``, the stream each subscriber reads, fan-out,
idle expiry of watches, and the response that drops a client who stops reading.

>>> sse("gone", {"session_id": "s1"}, "7:12")
'id: 7:12\\nevent: gone\\ndata: {"session_id": "s1"}\\n\\n'
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    MutableMapping,
    Sized,
)
from typing import Any, Protocol, TypeVar

from starlette.responses import StreamingResponse
from starlette.types import Send

from threadline.internal import datetime_to_us, owned_by
from threadline.types import SessionInfo

BUFFER_BYTES = 4 * 1024 * 1024
"""Bytes of events one subscriber may have waiting; past it the subscriber lags (is closed).
Also the size of a watch's replay history (for ``Last-Event-ID``)."""
LINGER_SECONDS = 30.0
"""How long a watch outlives its last subscriber, so a reconnecting client can resume."""
_SEND_GRACE = 10.0  # seconds an ended stream waits for a client to take its last event


def generation_of(info: SessionInfo) -> int:
    """Which creation of its ``(app, session_id)`` a session row is: never the same for a
    session deleted and created again.

    >>> from threadline import SessionManager
    >>> generation_of(SessionManager(":memory:").create(session_id="s1")) > 0
    True
    """
    if info.generation:
        return info.generation
    return datetime_to_us(info.created_at)  # a store that keeps no generations


def stamp_of(info: SessionInfo) -> int:
    """The session's change stamp: its ``updated_at`` in microseconds, which every write to
    the session moves forward (strictly increasing per session).

    >>> from threadline import SessionManager
    >>> manager = SessionManager(":memory:")
    >>> first = stamp_of(manager.create(session_id="s1"))
    >>> manager.get_session("s1").append_message({"role": "user", "content": "hi"})["role"]
    'user'
    >>> stamp_of(manager.get("s1")) > first
    True
    """
    return datetime_to_us(info.updated_at)


def sse(event: str, data: dict[str, Any], event_id: str | None = None) -> str:
    """One server-sent event (with its ``id:`` line when given).

    >>> sse("head", {"head_id": "m2"})
    'event: head\\ndata: {"head_id": "m2"}\\n\\n'
    >>> sse("gone", {}, "7:12")
    'id: 7:12\\nevent: gone\\ndata: {}\\n\\n'
    """
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def parse_event_id(text: str | None) -> tuple[int, int] | None:
    """``(generation, stamp)`` of a ``Last-Event-ID``, or ``None`` if it is not one of ours.

    >>> parse_event_id("12:345"), parse_event_id("junk"), parse_event_id(None)
    ((12, 345), None, None)
    """
    if not text:
        return None
    generation, sep, stamp = text.strip().partition(":")
    if not sep or not generation.isdigit() or not stamp.isdigit():
        return None
    return int(generation), int(stamp)


class Subscriber:
    """One stream's buffer: bounded in bytes; past the bound it ends with ``lagged``.

    >>> sub = Subscriber(limit=10)
    >>> sub.put(b"12345678"); sub.put(b"abc")  # the second would pass the bound
    >>> sub.take(), sub.final[:13]
    (None, b'event: lagged')
    """

    def __init__(self, limit: int = BUFFER_BYTES) -> None:
        self.limit = limit
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.final: bytes | None = None  # the last event, then the stream closes
        self.wake = asyncio.Event()
        self.ended = asyncio.Event()  # set with ``final``: a sender stuck on the client quits

    def put(self, chunk: bytes) -> None:
        if self.final is not None:
            return
        if self.size and self.size + len(chunk) > self.limit:
            self.finish(sse("lagged", {"buffer_bytes": self.limit}).encode())
            return
        self.chunks.append(chunk)
        self.size += len(chunk)
        self.wake.set()

    def finish(self, final: bytes) -> None:
        """End the stream with ``final``; what is still waiting is dropped only on a lag."""
        if self.final is None:
            if final.startswith(b"event: lagged"):
                self.chunks.clear()
                self.size = 0
            self.final = final
            self.wake.set()
            self.ended.set()

    def take(self) -> bytes | None:
        if self.chunks:
            chunk = self.chunks.popleft()
            self.size -= len(chunk)
            return chunk
        return None


class History:
    """The batches a watch sent lately, for a ``Last-Event-ID`` to resume from: numbered
    ``n`` (increasing), each with the owner of its session, bounded by :data:`BUFFER_BYTES`.

    >>> history = History(base=1)
    >>> history.record(2, [b"a", b"b"], owner="u1"); history.record(3, [b"c"])
    >>> history.after(2), history.after(1, user="u2"), history.after(0)
    ([b'c'], [], None)
    """

    def __init__(self, base: int = 0) -> None:
        self.entries: deque[tuple[int, str | None, list[bytes]]] = deque()
        self.bytes = 0
        self.base = base  # it holds every batch numbered above this

    def record(self, n: int, chunks: list[bytes], owner: str | None = None) -> None:
        self.entries.append((n, owner, chunks))
        self.bytes += sum(map(len, chunks))
        while self.entries and self.bytes > BUFFER_BYTES:
            old, _, dropped = self.entries.popleft()
            self.bytes -= sum(map(len, dropped))
            self.base = old

    def after(self, n: int, user: str | None = None) -> list[bytes] | None:
        """The chunks numbered after ``n`` that ``user`` may see (``None``: some were
        dropped already, not replayable)."""
        if n < self.base:
            return None
        return [
            chunk
            for at, owner, chunks in self.entries
            if at > n and owned_by(owner, user)
            for chunk in chunks
        ]


async def pump(
    sub: Subscriber, start: str, gone: Callable[[], Awaitable[bool]], keepalive: float
) -> AsyncGenerator[bytes, None]:
    """A subscriber's stream: the ``subscribed`` comment, then its chunks as they come (with
    keepalive comments when quiet), until its final event or ``gone()`` (checked every
    second: a closed stream is noticed without waiting for the next write)."""
    # the id sets the client's Last-Event-ID before any event (no data: no event fired)
    yield f": subscribed\nid: {start}\n\n".encode()
    quiet = 0.0
    while True:
        chunk = sub.take()
        if chunk is not None:
            yield chunk
            quiet = 0.0
            continue
        if sub.final is not None:
            yield sub.final
            return
        sub.wake.clear()
        try:
            await asyncio.wait_for(sub.wake.wait(), 1.0)
        except TimeoutError:
            if await gone():
                return
            quiet += 1.0
            if quiet >= keepalive:
                quiet = 0.0
                yield b": keepalive\n\n"


def fan_out(
    subs: Iterable[Subscriber],
    chunks: list[bytes],
    remove: Callable[[Subscriber], object],
    sees: Callable[[Subscriber], bool] | None = None,
) -> None:
    """Put ``chunks`` to each subscriber (that ``sees`` them); one that lagged is removed."""
    for sub in list(subs):
        if sees is None or sees(sub):
            for chunk in chunks:
                sub.put(chunk)
        if sub.final is not None:  # lagged: it leaves the watch now
            remove(sub)


class _Lingering(Protocol):
    @property
    def idle_since(self) -> float | None: ...
    @property
    def subscribers(self) -> Sized: ...


_K = TypeVar("_K")
_W = TypeVar("_W", bound=_Lingering)


def expire_idle(watches: MutableMapping[_K, _W]) -> list[_K]:
    """Drop the watches without subscribers for :data:`LINGER_SECONDS`; the keys of the
    others (to check)."""
    now = time.monotonic()
    live: list[_K] = []
    for key, watch in list(watches.items()):
        if watch.idle_since is not None and now - watch.idle_since > LINGER_SECONDS:
            if not watch.subscribers:
                del watches[key]
            continue
        live.append(key)
    return live


class EventStreamResponse(StreamingResponse):
    """A stream that stops waiting for a client that does not read once its subscriber has
    ended (lagged, gone): the connection is closed instead of holding the server's memory."""

    def __init__(self, content: AsyncIterator[bytes], sub: Subscriber, **kwargs: Any) -> None:
        super().__init__(content, media_type="text/event-stream", **kwargs)
        self.sub = sub

    async def stream_response(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        ended = asyncio.ensure_future(self.sub.ended.wait())
        try:
            async for chunk in self.body_iterator:
                body = {"type": "http.response.body", "body": chunk, "more_body": True}
                sending = asyncio.ensure_future(send(body))
                await asyncio.wait({sending, ended}, return_when=asyncio.FIRST_COMPLETED)
                if not sending.done():  # the stream is over: a moment for a client that reads
                    await asyncio.wait({sending}, timeout=_SEND_GRACE)
                if not sending.done():  # ... and none for one that does not
                    sending.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await sending
                    return
                sending.result()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            ended.cancel()
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()
