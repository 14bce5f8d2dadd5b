"""Server-sent events of a session, bound to one generation of it.

Each worker keeps, per watched session, a :class:`_Watch`: the generation its subscribers
follow and what they have seen (change stamp, last ``seq``, head, overlays, name, state).
It diffs the store against it after a write on this worker at once, on a ``NOTIFY`` from
another worker (PostgreSQL ``LISTEN/NOTIFY``), and by polling (every ``poll_interval`` seconds:
the only cross-worker path on SQLite, a safety net on PostgreSQL). Every event is read back
from the store, so subscribers on every worker see the same events, with the same ids.

A session deleted (and maybe created again, by any worker) ends its watch: subscribers get
``event: gone`` and the stream closes; the next subscriber gets a fresh watch of the new
generation, from its first message. Each subscriber's buffer is bounded in bytes
(:data:`BUFFER_BYTES`): one that falls behind gets ``event: lagged`` and is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    MutableMapping,
    Sized,
)
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

from starlette.responses import StreamingResponse
from starlette.types import Send

from threadline.internal import datetime_to_us
from threadline.server._keys import iso_z
from threadline.store import Store
from threadline.types import SessionInfo

_log = logging.getLogger("threadline.server")

CHANNEL = "threadline_events"
BUFFER_BYTES = 4 * 1024 * 1024
"""Bytes of events one subscriber may have waiting; past it the subscriber lags (is closed).
Also the size of a watch's replay history (for ``Last-Event-ID``)."""
INLINE_BYTES = 64 * 1024
"""A ``message`` event larger than this carries a reference to the message, not its body."""
LINGER_SECONDS = 30.0
"""How long a watch outlives its last subscriber, so a reconnecting client can resume."""
_SEND_GRACE = 10.0  # seconds an ended stream waits for a client to take its last event
_PAGE = 4  # messages read per query: bodies are read whole before being trimmed
Key = tuple[str, str]  # (app, session_id)


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


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class _Seen:
    """What the subscribers of one generation have been told."""

    generation: int
    stamp: int
    seq: int
    head_id: str | None
    compactions: int
    name: str | None
    state: str


class _Gone(Exception):
    """The watched generation no longer exists."""


def _info(store: Store, app: str, session_id: str, generation: int) -> SessionInfo:
    info = store.get_session(app, session_id)
    if info is None or generation_of(info) != generation:
        raise _Gone
    return info


def _last_seq(store: Store, app: str, session_id: str, after: int = 0) -> int:
    """The highest ``seq`` above ``after`` (``after`` itself if there is none)."""
    last = after
    while page := store.get_tree(app, session_id, after_seq=last, limit=_PAGE, attachments="ref"):
        last = page[-1].seq
        del page
    return last


def _snapshot(store: Store, app: str, session_id: str, generation: int) -> _Seen:
    """Where the session of ``generation`` is now; ``_Gone`` if that generation is not there."""
    info = _info(store, app, session_id, generation)
    # seqs are distinct and positive, so the last is at least the count: skip the bodies below
    start = max(info.message_count - 1, 0)
    last = _last_seq(store, app, session_id, after=start)
    if last == start:  # nothing above: fewer seqs than the count says (deleted meanwhile)
        last = _last_seq(store, app, session_id)
    head = store.get_head(app, session_id)
    seen = _Seen(
        generation,
        stamp_of(info),
        last,
        head["id"] if head else None,
        len(store.get_compactions(app, session_id)),
        info.name,
        _digest(store.get_state(app, session_id, info.user_id)),
    )
    _info(store, app, session_id, generation)  # read after: all of it was that generation's
    return seen


def _size(value: Any) -> int:
    """About how many bytes ``value`` takes as JSON (strings and keys counted by length),
    without building the JSON: the body may be megabytes."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, dict):
        return sum(len(k) + 4 + _size(v) for k, v in value.items()) + 2
    if isinstance(value, list):
        return sum(_size(v) + 1 for v in value) + 2
    return 8


def _message_event(
    session_id: str, seq: int | None, parent_id: str | None, message: Any, kind: str = "message"
) -> str:
    data: dict[str, Any] = {"session_id": session_id, "message": message}
    if kind == "message":
        data.update(seq=seq, parent_id=parent_id)
    size = _size(message)
    if size > INLINE_BYTES:  # a big body would fill subscribers' buffers: say where it is
        data["message"] = {k: message[k] for k in ("id", "role", "createdAt") if k in message}
        path = f"{quote(session_id, safe='')}/messages/{quote(message['id'], safe='')}"
        data["message_ref"] = {"href": f"/v1/sessions/{path}", "bytes": size}
    return sse(kind, data)


def _logged(store: Store, app: str, session_id: str, after: int, upto: int) -> list[str]:
    """Events of the logged changes (edits, deletes, session blocks) in ``(after, upto]``:
    each read back now (a message edited, then deleted, is told only as deleted)."""
    get_changes = getattr(store, "get_changes", None)
    if get_changes is None:  # a store that keeps no change log
        return []
    events: list[str] = []
    for change in get_changes(app, session_id, after):
        if change.stamp > upto:
            break
        payload = change.payload
        if change.kind == "message_updated":
            message = store.get_message(app, session_id, payload["id"])
            if message is not None:
                events.append(_message_event(session_id, None, None, message, change.kind))
        elif change.kind == "messages_deleted":
            events.append(sse(change.kind, {"session_id": session_id, **payload}))
        elif change.kind == "block":
            content = store.get_block(app, "session", session_id, payload["label"])
            data = {"session_id": session_id, "label": payload["label"], "content": content}
            if content is not None and len(content) > INLINE_BYTES:
                path = f"{quote(session_id, safe='')}/blocks/{quote(payload['label'], safe='')}"
                data["content"] = None
                data["content_ref"] = {"href": f"/v1/sessions/{path}", "bytes": len(content)}
            events.append(sse("block", data))
    return events


def _changes(store: Store, app: str, session_id: str, seen: _Seen) -> list[str]:
    """The events since ``seen`` (moved forward only once all were read from ``seen``'s
    generation); ``_Gone`` if that generation was deleted."""
    info = _info(store, app, session_id, seen.generation)
    stamp = stamp_of(info)
    if stamp == seen.stamp:
        return []
    events: list[str] = []
    seq = seen.seq
    while True:
        page = store.get_tree(app, session_id, after_seq=seq, limit=_PAGE, attachments="ref")
        full = len(page) == _PAGE
        while page:
            node = page.pop(0)  # each body is let go as soon as its event is made
            events.append(_message_event(session_id, node.seq, node.parent_id, node.message))
            seq = node.seq
        if not full:
            break
    events += _logged(store, app, session_id, seen.stamp, stamp)
    head = store.get_head(app, session_id)
    head_id = head["id"] if head else None
    if head_id != seen.head_id:
        events.append(sse("head", {"session_id": session_id, "head_id": head_id}))
    compactions = store.get_compactions(app, session_id)
    for overlay in compactions[seen.compactions :]:
        payload = {**overlay.to_dict(), "created_at": iso_z(overlay.created_at)}
        events.append(sse("compaction", {"session_id": session_id, "compaction": payload}))
    if info.name != seen.name:
        events.append(sse("renamed", {"session_id": session_id, "name": info.name}))
    state = store.get_state(app, session_id, info.user_id)
    digest = _digest(state)
    if digest != seen.state:
        events.append(sse("state", {"session_id": session_id, "state": state}))
    _info(store, app, session_id, seen.generation)  # none of it is a newer generation's
    seen.stamp, seen.seq, seen.head_id = stamp, seq, head_id
    seen.compactions = max(seen.compactions, len(compactions))
    seen.name, seen.state = info.name, digest
    return events


def _with_ids(events: list[str], event_id: str) -> list[bytes]:
    """A batch of events as sent: only the last carries the id, so a client cut off inside
    the batch resumes from the one before and gets the whole batch again."""
    out = [event.encode() for event in events]
    if out:
        out[-1] = f"id: {event_id}\n".encode() + out[-1]
    return out


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


def visible(owner: str | None, user: str | None) -> bool:
    """Whether a key bound to ``user`` (``None``: an app key) sees a session of ``owner``.

    >>> visible("u1", None), visible("u1", "u1"), visible("u2", "u1"), visible(None, "u1")
    (True, True, False, False)
    """
    return user is None or owner == user


class _History:
    """The batches a watch sent lately, for a ``Last-Event-ID`` to resume from: numbered
    ``n`` (increasing), each with the owner of its session, bounded by :data:`BUFFER_BYTES`.

    >>> history = _History(base=1)
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
            if at > n and visible(owner, user)
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


@dataclass
class _Watch:
    seen: _Seen
    subscribers: set[Subscriber] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    history: _History = field(init=False)
    ended: bool = False
    idle_since: float | None = field(default_factory=time.monotonic)  # None: subscribed

    def __post_init__(self) -> None:
        self.history = _History(base=self.seen.stamp)  # numbered by stamp

    def event_id(self) -> str:
        return f"{self.seen.generation}:{self.seen.stamp}"

    def replay(self, last: tuple[int, int]) -> list[bytes] | None:
        """The batches after ``last`` (``None``: not replayable, the client must reload)."""
        generation, stamp = last
        if generation != self.seen.generation:
            return None
        return self.history.after(stamp)

    def end(self, final: bytes) -> None:
        self.ended = True
        for sub in self.subscribers:
            sub.finish(final)
        self.subscribers.clear()


class EventHub:
    """Fans a session's changes out to its subscribers on this worker."""

    def __init__(self, store: Store, pg_dsn: str | None, poll_interval: float) -> None:
        self.store = store
        self.pg_dsn = pg_dsn
        self.poll_interval = poll_interval
        self._watches: dict[Key, _Watch] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: asyncio.Queue[Key] | None = None
        self._pending: set[asyncio.Future[None]] = set()
        from threadline.server._list_events import ListFeed  # it builds on this module

        self.lists = ListFeed(store)
        """The session-list watches (``GET /v1/events``), told of the same changes."""

    async def start(self) -> None:
        """Start polling (and, on PostgreSQL, listening and notifying)."""
        self._loop = asyncio.get_running_loop()
        self._tasks.append(asyncio.create_task(self._poll()))
        if self.pg_dsn is not None:
            self._outbox = asyncio.Queue()
            self._tasks.append(asyncio.create_task(self._listen()))
            self._tasks.append(asyncio.create_task(self._notify()))

    async def stop(self) -> None:
        """Stop the background tasks."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()

    def changed(self, app: str, session_id: str) -> None:
        """A write to the session happened on this worker (callable from any thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._changed_here, (app, session_id))

    def _changed_here(self, key: Key) -> None:
        self._wake(key)
        if self._outbox is not None:
            self._outbox.put_nowait(key)

    def _wake(self, key: Key) -> None:
        """The session changed (here or on another worker): check its watch and its app's
        list watch, if there are."""
        if key in self._watches:
            self._spawn(self._check(key))
        if self.lists.watched(key[0]):
            self._spawn(self.lists.check(key[0]))

    async def _watch(self, key: Key, generation: int) -> _Watch | None:
        """The live watch of ``generation`` (made if needed); ``None`` if it is gone."""
        for _ in range(3):
            watch = self._watches.get(key)
            if watch is not None and watch.seen.generation == generation:
                watch.idle_since = None  # not dropped by the poll before the caller attaches
                return watch
            if watch is not None:  # another generation's: it ends if that one is gone
                await self._check(key)
                if self._watches.get(key) is watch:
                    return None  # the old generation is still there: ours is not
                continue
            try:
                seen = await asyncio.to_thread(_snapshot, self.store, *key, generation)
            except _Gone:
                return None
            self._watches.setdefault(key, _Watch(seen))
        return None

    async def subscribe(
        self,
        app: str,
        session_id: str,
        generation: int,
        sub: Subscriber,
        gone: Callable[[], Awaitable[bool]],
        last_event_id: str | None = None,
        keepalive: float = 15.0,
    ) -> AsyncIterator[bytes]:
        """The events of ``generation`` of the session as SSE bytes, from now on (or after
        ``last_event_id``), until ``gone()`` (checked every second: a closed stream is noticed
        without waiting for the next write) or the generation is deleted (``gone`` event)."""
        key = (app, session_id)
        watch = await self._watch(key, generation)
        if watch is None:
            yield sse("gone", {"session_id": session_id}).encode()
            return
        try:
            async with watch.lock:
                if watch.ended:
                    sub.finish(sse("gone", {"session_id": session_id}).encode())
                else:
                    last = parse_event_id(last_event_id)
                    replay = watch.replay(last) if last is not None else []
                    if replay is None:
                        data = {"session_id": session_id, "reason": "not replayable; reload"}
                        sub.put(sse("reset", data, watch.event_id()).encode())
                    for old in replay or []:
                        sub.put(old)
                    watch.subscribers.add(sub)
                start = watch.event_id()
            async with contextlib.aclosing(pump(sub, start, gone, keepalive)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            watch.subscribers.discard(sub)
            if not watch.subscribers:
                watch.idle_since = time.monotonic()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._pending.discard)

    async def _check(self, key: Key) -> None:
        watch = self._watches.get(key)
        if watch is None:
            return
        async with watch.lock:
            if watch.ended:
                return
            try:
                events = await asyncio.to_thread(_changes, self.store, *key, watch.seen)
            except _Gone:
                watch.end(sse("gone", {"session_id": key[1]}, watch.event_id()).encode())
                if self._watches.get(key) is watch:
                    del self._watches[key]
                return
            except Exception:  # the store may be briefly down: the next check catches up
                _log.warning("threadline: reading events of %r failed", key, exc_info=True)
                return
            if not events:
                return
            batch = _with_ids(events, watch.event_id())
            watch.history.record(watch.seen.stamp, batch)
            fan_out(watch.subscribers, batch, watch.subscribers.discard)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            for key in expire_idle(self._watches):
                await self._check(key)
            await self.lists.poll()  # after the loop over the session watches

    async def _listen(self) -> None:
        import psycopg

        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.pg_dsn or "", autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    async for note in conn.notifies():
                        app, session_id = json.loads(note.payload)
                        self._wake((app, session_id))
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("threadline: LISTEN connection lost; retrying", exc_info=True)
                await asyncio.sleep(1.0)

    async def _notify(self) -> None:
        import psycopg

        assert self._outbox is not None
        while True:
            key = await self._outbox.get()
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.pg_dsn or "", autocommit=True
                ) as conn:
                    while True:
                        payload = json.dumps(list(key))
                        await conn.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])
                        key = await self._outbox.get()
            except asyncio.CancelledError:
                raise
            except Exception:  # other workers still poll: nothing is lost, only later
                _log.warning("threadline: NOTIFY failed; reconnecting", exc_info=True)
                await asyncio.sleep(1.0)


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
