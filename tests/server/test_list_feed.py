"""The session-list feed in process (server/_list_events.py): a subscriber whose byte-bounded
buffer overflows gets ``lagged`` and leaves the watch; ids resume; a user-bound subscriber
never gets another user's events, not even from the replay history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import threadline
from threadline.server._list_events import ListFeed
from threadline.server._sse import Subscriber


async def _never_gone() -> bool:
    return False


async def _take(stream: object, count: int) -> list[bytes]:
    out: list[bytes] = []
    async for chunk in stream:  # type: ignore[attr-defined]
        out.append(chunk)
        if len(out) == count:
            break
    return out


def test_a_list_subscriber_that_falls_behind_gets_lagged(tmp_path: Path) -> None:
    store = threadline.connect(f"sqlite:///{tmp_path / 'feed.db'}")

    async def run() -> None:
        feed = ListFeed(store)
        small = Subscriber(limit=600)  # about two events
        stream = feed.subscribe("a", None, small, _never_gone)
        (subscribed,) = await _take(stream, 1)
        assert subscribed.startswith(b": subscribed\nid: ")
        for i in range(6):
            store.create_session("a", f"s{i}", user_id="u1")
        await feed.check("a")
        assert small.final is not None and small.final.startswith(b"event: lagged")
        watch = feed._watches["a"]
        assert small not in watch.subscribers
        # a user-bound key resumes from the first event: only its own sessions come again
        first = watch.history.entries[0][2][0].split(b"\n")[0].decode()[len("id: ") :]
        store.create_session("a", "other", user_id="u2")
        await feed.check("a")
        mine = Subscriber()
        chunks = await _take(feed.subscribe("a", "u1", mine, _never_gone, first), 6)
        body = b"".join(chunks[1:])
        assert body.count(b"event: created") == 5 and b'"other"' not in body
        theirs = Subscriber()
        chunks = await _take(feed.subscribe("a", "u2", theirs, _never_gone, first), 2)
        assert b'"other"' in chunks[1] and b'"s1"' not in chunks[1]
        stranger = Subscriber()
        chunks = await _take(feed.subscribe("a", "u1", stranger, _never_gone, "1:1"), 2)
        assert b"\nevent: reset\n" in chunks[1]

    asyncio.run(run())
    store.close()
