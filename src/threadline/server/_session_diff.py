"""What changed in one session since its subscribers were last told, read back from the
store as SSE events (blocking store reads: the hub runs them in a worker thread).

A watch remembers a :class:`Seen` (generation, change stamp, last ``seq``, head, overlays,
name, state digest); :func:`changes` reads the messages above that ``seq``, the logged edits,
deletes and block writes, the head, new overlays, the name and the state, and moves it on.
A generation that is no longer the session's raises :class:`Gone`.

>>> from threadline import SessionManager
>>> manager = SessionManager(":memory:", app_name="travel")
>>> info = manager.create(session_id="s1")
>>> seen = snapshot(manager.store, "travel", "s1", generation_of(info))
>>> _ = manager.append("s1", {"role": "user", "content": "hi"})
>>> [event.split("\\n")[0] for event in changes(manager.store, "travel", "s1", seen)]
['event: message', 'event: head']
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from threadline.internal import on_primary
from threadline.server._keys import iso_z
from threadline.server._sse import generation_of, sse, stamp_of
from threadline.store import Store
from threadline.types import SessionInfo

INLINE_BYTES = 64 * 1024
"""A ``message`` event larger than this carries a reference to the message, not its body."""
_PAGE = 4  # messages read per query: bodies are read whole before being trimmed


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class Seen:
    """What the subscribers of one generation have been told."""

    generation: int
    stamp: int
    seq: int
    head_id: str | None
    compactions: int
    name: str | None
    state: str


class Gone(Exception):
    """The watched generation no longer exists."""


def _info(store: Store, app: str, session_id: str, generation: int) -> SessionInfo:
    info = store.get_session(app, session_id)
    if info is None or generation_of(info) != generation:
        raise Gone
    return info


def _last_seq(store: Store, app: str, session_id: str, after: int = 0) -> int:
    """The highest ``seq`` above ``after`` (``after`` itself if there is none)."""
    last = after
    while page := store.get_tree(app, session_id, after_seq=last, limit=_PAGE, attachments="ref"):
        last = page[-1].seq
        del page
    return last


@on_primary()  # read back what the change log says happened, not a replica's past
def snapshot(store: Store, app: str, session_id: str, generation: int) -> Seen:
    """Where the session of ``generation`` is now; ``Gone`` if that generation is not there."""
    info = _info(store, app, session_id, generation)
    # seqs are distinct and positive, so the last is at least the count: skip the bodies below
    start = max(info.message_count - 1, 0)
    last = _last_seq(store, app, session_id, after=start)
    if last == start:  # nothing above: fewer seqs than the count says (deleted meanwhile)
        last = _last_seq(store, app, session_id)
    head = store.get_head(app, session_id)
    seen = Seen(
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


@on_primary()
def changes(store: Store, app: str, session_id: str, seen: Seen) -> list[str]:
    """The events since ``seen`` (moved forward only once all were read from ``seen``'s
    generation); ``Gone`` if that generation was deleted."""
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


def with_ids(events: list[str], event_id: str) -> list[bytes]:
    """A batch of events as sent: only the last carries the id, so a client cut off inside
    the batch resumes from the one before and gets the whole batch again."""
    out = [event.encode() for event in events]
    if out:
        out[-1] = f"id: {event_id}\n".encode() + out[-1]
    return out
