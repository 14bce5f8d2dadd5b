"""Server-sent events of an app's session list (``GET /v1/events``).

Each worker keeps one :class:`ListWatch` per watched app. It reads the sessions whose
``updated_at`` moved past its mark (the listing index, newest first, stopping at the mark)
and the sessions deleted since (the store's ``gone`` rows, ``Store.get_session_deletions``),
whichever process wrote them, when the per-session hub checks (a write on this worker, a
``NOTIFY``, the poll). Writes commit in another order than their stamps, so each read looks
:data:`LOOKBACK_US` behind the mark and skips what it already sent.

Events: ``created``, ``updated`` (the session's registry row: name, message count, times...)
and ``gone``; each subscriber gets only those of the sessions its key may see (a user-bound
key: that user's sessions). Buffers are bounded as for a session's stream (``lagged``).
Ids are ``<watch>:<n>``: a ``Last-Event-ID`` of another watch (another worker, an expired
watch) or of events already dropped from the history gets ``reset``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from threadline.internal import datetime_to_us, on_primary, owned_by
from threadline.server._keys import iso_z
from threadline.server._sse import (
    History,
    Subscriber,
    expire_idle,
    fan_out,
    generation_of,
    parse_event_id,
    pump,
    sse,
    stamp_of,
)
from threadline.store import Store
from threadline.types import SessionInfo

_log = logging.getLogger("threadline.server")

LOOKBACK_US = 2_000_000
"""How far behind its mark a read looks (µs): longer than a write takes to commit."""
_PAGE = 100


def session_data(info: SessionInfo) -> dict[str, Any]:
    """A session's registry row as an event's data.

    >>> from threadline import SessionManager
    >>> data = session_data(SessionManager(":memory:").create(session_id="s1", name="Trip"))
    >>> data["session_id"], data["name"], data["message_count"], data["user_id"]
    ('s1', 'Trip', 0, None)
    """
    return {
        "session_id": info.id,
        "generation": generation_of(info),
        "user_id": info.user_id,
        "name": info.name,
        "message_count": info.message_count,
        "created_at": iso_z(info.created_at),
        "updated_at": iso_z(info.updated_at),
    }


@on_primary()  # event read-back (api.md clarification 30), beside the deletions' log
def _read(store: Store, app: str, since: int) -> tuple[list[SessionInfo], list[Any]]:
    """Sessions updated after ``since`` (newest first) and sessions deleted after it."""
    found: list[SessionInfo] = []
    cursor = None
    while True:
        page = store.list_sessions(app, limit=_PAGE, cursor=cursor)
        for info in page.sessions:
            if stamp_of(info) <= since:
                cursor = None
                break
            found.append(info)
        else:
            cursor = page.next_cursor
        if cursor is None:
            break
    deletions = getattr(store, "get_session_deletions", None)
    return found, (deletions(app, since) if deletions is not None else [])


Entry = tuple[int, str | None, bytes]  # (n, owner of the session, the event as sent)


@dataclass
class ListWatch:
    """What one app's list subscribers on this worker have been told."""

    app: str
    mark: int
    epoch: int = field(default_factory=lambda: time.time_ns() // 1000)
    counter: int = 0
    sent: dict[tuple[str, int, str], int] = field(default_factory=dict)  # -> stamp
    subscribers: dict[Subscriber, str | None] = field(default_factory=dict)  # -> user filter
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    history: History = field(default_factory=History)  # numbered by ``n``
    idle_since: float | None = field(default_factory=time.monotonic)

    def event_id(self) -> str:
        return f"{self.epoch}:{self.counter}"

    def absorb(self, found: list[SessionInfo], gone: list[Any]) -> list[Entry]:
        """The events of what was read, not sent before: ``(n, owner, event)`` oldest
        first; the mark moves to the newest stamp read."""
        since = self.mark - LOOKBACK_US
        items: list[tuple[int, str | None, str, dict[str, Any]]] = []
        for info in found:
            generation = generation_of(info)
            key = (info.id, generation, "session")
            stamp = stamp_of(info)
            if self.sent.get(key) == stamp:
                continue
            created = datetime_to_us(info.created_at)
            kind = "updated" if key in self.sent or created <= since else "created"
            self.sent[key] = stamp
            items.append((stamp, info.user_id, kind, session_data(info)))
        for change in gone:
            payload = change.payload
            key = (payload["session_id"], payload["generation"], "gone")
            if key in self.sent:
                continue
            self.sent[key] = change.stamp
            items.append((change.stamp, payload["user_id"], "gone", dict(payload)))
        stamps = [stamp for stamp, *_ in items]
        self.mark = max([self.mark, *stamps])
        floor = self.mark - 2 * LOOKBACK_US  # older entries can no longer be read again
        self.sent = {k: v for k, v in self.sent.items() if v >= floor}
        items.sort(key=lambda item: item[0])
        out: list[Entry] = []
        for _, owner, kind, data in items:
            self.counter += 1
            out.append((self.counter, owner, sse(kind, data, self.event_id()).encode()))
        return out

    def record(self, entry: Entry) -> None:
        n, owner, chunk = entry
        self.history.record(n, [chunk], owner)

    def replay(self, last: tuple[int, int], user: str | None) -> list[bytes] | None:
        """The events after ``last`` this user may see (``None``: not replayable)."""
        epoch, n = last
        if epoch != self.epoch or n > self.counter:
            return None
        return self.history.after(n, user)


def _seen_by(
    users: dict[Subscriber, str | None], owner: str | None
) -> Callable[[Subscriber], bool]:
    """Whether a subscriber (of the user it filters on) sees a session of ``owner``."""
    return lambda sub: owned_by(owner, users[sub])


class ListFeed:
    """The session-list watches of one worker (owned by the ``EventHub``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._watches: dict[str, ListWatch] = {}

    def watched(self, app: str) -> bool:
        return app in self._watches

    async def _watch(self, app: str) -> ListWatch:
        watch = self._watches.get(app)
        if watch is None:
            now = await asyncio.to_thread(lambda: datetime_to_us(self.store.now()))
            fresh = ListWatch(app, now)
            # what was written just before is not news: remembered as sent, not sent
            found, gone = await asyncio.to_thread(_read, self.store, app, now - LOOKBACK_US)
            fresh.absorb(found, gone)
            fresh.counter = 0
            watch = self._watches.setdefault(app, fresh)
        watch.idle_since = None
        return watch

    async def check(self, app: str) -> None:
        watch = self._watches.get(app)
        if watch is None:
            return
        async with watch.lock:
            since = watch.mark - LOOKBACK_US
            try:
                found, gone = await asyncio.to_thread(_read, self.store, app, since)
            except Exception:  # the store may be briefly down: the next check catches up
                _log.warning(
                    "threadline: reading the session list of %r failed", app, exc_info=True
                )
                return
            users = watch.subscribers
            for entry in watch.absorb(found, gone):
                watch.record(entry)
                _, owner, chunk = entry
                fan_out(
                    users,
                    [chunk],
                    lambda sub: users.pop(sub, None),
                    _seen_by(users, owner),
                )

    async def poll(self) -> None:
        """One round over the watches (called by the hub's poll loop)."""
        for app in expire_idle(self._watches):
            await self.check(app)

    async def subscribe(
        self,
        app: str,
        user: str | None,
        sub: Subscriber,
        gone: Callable[[], Awaitable[bool]],
        last_event_id: str | None = None,
        keepalive: float = 15.0,
    ) -> AsyncIterator[bytes]:
        """The list's events this key may see, from now on (or after ``last_event_id``)."""
        watch = await self._watch(app)
        try:
            async with watch.lock:
                last = parse_event_id(last_event_id)
                replay = watch.replay(last, user) if last is not None else []
                if replay is None:
                    data = {"reason": "not replayable; reload the list"}
                    sub.put(sse("reset", data, watch.event_id()).encode())
                for old in replay or []:
                    sub.put(old)
                watch.subscribers[sub] = user
                start = watch.event_id()
            async with contextlib.aclosing(pump(sub, start, gone, keepalive)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            watch.subscribers.pop(sub, None)
            if not watch.subscribers:
                watch.idle_since = time.monotonic()
