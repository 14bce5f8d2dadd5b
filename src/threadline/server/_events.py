"""Server-sent events of a session: message appended, head moved, compaction.

Each worker keeps, per watched session, what its subscribers have seen (last ``seq``, head,
number of overlays) and diffs the store against it: after a write on this worker at once, on a
``NOTIFY`` from another worker (PostgreSQL ``LISTEN/NOTIFY``), and by polling (every
``poll_interval`` seconds: the only cross-worker path on SQLite, a safety net on PostgreSQL).
Every event is read back from the store, so subscribers on every worker see the same events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from threadline.server._keys import iso_z
from threadline.store import Store

_log = logging.getLogger("threadline.server")

CHANNEL = "threadline_events"
_PAGE = 500
Key = tuple[str, str]  # (app, session_id)


@dataclass
class _Watch:
    seq: int
    head_id: str | None
    compactions: int
    queues: set[asyncio.Queue[str]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def sse(event: str, data: dict[str, Any]) -> str:
    """One server-sent event.

    >>> sse("head", {"head_id": "m2"})
    'event: head\\ndata: {"head_id": "m2"}\\n\\n'
    """
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _snapshot(store: Store, app: str, session_id: str) -> _Watch:
    """Where the session is now: its last ``seq`` (paged to the end), head and overlay count."""
    last = 0
    while page := store.get_tree(app, session_id, after_seq=last, limit=_PAGE, attachments="ref"):
        last = page[-1].seq
    head = store.get_head(app, session_id)
    return _Watch(last, head["id"] if head else None, len(store.get_compactions(app, session_id)))


def _changes(store: Store, app: str, session_id: str, watch: _Watch) -> list[str]:
    """The events since ``watch`` (which is moved forward)."""
    events: list[str] = []
    while True:
        page = store.get_tree(app, session_id, after_seq=watch.seq, limit=_PAGE, attachments="ref")
        for node in page:
            data = {"session_id": session_id, "seq": node.seq, "parent_id": node.parent_id}
            events.append(sse("message", {**data, "message": node.message}))
            watch.seq = node.seq
        if len(page) < _PAGE:
            break
    head = store.get_head(app, session_id)
    head_id = head["id"] if head else None
    if head_id != watch.head_id:
        watch.head_id = head_id
        events.append(sse("head", {"session_id": session_id, "head_id": head_id}))
    compactions = store.get_compactions(app, session_id)
    for overlay in compactions[watch.compactions :]:
        payload = {**overlay.to_dict(), "created_at": iso_z(overlay.created_at)}
        events.append(sse("compaction", {"session_id": session_id, "compaction": payload}))
    watch.compactions = max(watch.compactions, len(compactions))
    return events


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
        if key in self._watches:
            self._spawn(self._check(key))
        if self._outbox is not None:
            self._outbox.put_nowait(key)

    async def subscribe(
        self,
        app: str,
        session_id: str,
        gone: Callable[[], Awaitable[bool]],
        keepalive: float = 15.0,
    ) -> AsyncIterator[str]:
        """The session's events as SSE text, from now on, until ``gone()`` (checked every
        second: a closed stream is noticed without waiting for the next write)."""
        key = (app, session_id)
        queue: asyncio.Queue[str] = asyncio.Queue()
        watch = self._watches.get(key)
        if watch is None:
            watch = await asyncio.to_thread(_snapshot, self.store, app, session_id)
            watch = self._watches.setdefault(key, watch)
        watch.queues.add(queue)
        try:
            yield ": subscribed\n\n"
            quiet = 0.0
            while True:
                try:
                    yield await asyncio.wait_for(queue.get(), 1.0)
                    quiet = 0.0
                except TimeoutError:
                    if await gone():
                        return
                    quiet += 1.0
                    if quiet >= keepalive:
                        quiet = 0.0
                        yield ": keepalive\n\n"
        finally:
            watch.queues.discard(queue)
            if not watch.queues and self._watches.get(key) is watch:
                del self._watches[key]

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(self._pending.discard)

    async def _check(self, key: Key) -> None:
        watch = self._watches.get(key)
        if watch is None:
            return
        async with watch.lock:
            try:
                events = await asyncio.to_thread(_changes, self.store, *key, watch)
            except Exception:  # the store may be briefly down: the next check catches up
                _log.warning("threadline: reading events of %r failed", key, exc_info=True)
                return
        for queue in list(watch.queues):
            for event in events:
                queue.put_nowait(event)

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            for key in list(self._watches):
                await self._check(key)

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
                        if (app, session_id) in self._watches:
                            self._spawn(self._check((app, session_id)))
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
