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
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from threadline.server._list_events import ListFeed
from threadline.server._session_diff import Gone, Seen, changes, snapshot, with_ids
from threadline.server._sse import (
    History,
    Subscriber,
    expire_idle,
    fan_out,
    parse_event_id,
    pump,
    sse,
)
from threadline.store import Store

_log = logging.getLogger("threadline.server")

CHANNEL = "threadline_events"
Key = tuple[str, str]  # (app, session_id)


@dataclass
class _Watch:
    seen: Seen
    subscribers: set[Subscriber] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    history: History = field(init=False)
    ended: bool = False
    idle_since: float | None = field(default_factory=time.monotonic)  # None: subscribed

    def __post_init__(self) -> None:
        self.history = History(base=self.seen.stamp)  # numbered by stamp

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
                seen = await asyncio.to_thread(snapshot, self.store, *key, generation)
            except Gone:
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
                events = await asyncio.to_thread(changes, self.store, *key, watch.seen)
            except Gone:
                watch.end(sse("gone", {"session_id": key[1]}, watch.event_id()).encode())
                if self._watches.get(key) is watch:
                    del self._watches[key]
                return
            except Exception:  # the store may be briefly down: the next check catches up
                _log.warning("threadline: reading events of %r failed", key, exc_info=True)
                return
            if not events:
                return
            batch = with_ids(events, watch.event_id())
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
