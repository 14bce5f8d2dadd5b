"""ADK's session service over a threadline store: ``ThreadlineSessionService``.

Exported by :mod:`threadline.integrations.adk` (its public home, with the whole mapping).

>>> import asyncio
>>> from threadline.integrations.adk import ThreadlineSessionService
>>> service = ThreadlineSessionService(":memory:")
>>> asyncio.run(service.create_session(app_name="a", user_id="u", session_id="s")).id
's'
"""

from __future__ import annotations

import asyncio
import os
import uuid
import weakref
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, TypeVar

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from threadline.errors import HeadMovedError, SessionExistsError
from threadline.errors import SessionNotFoundError as ThreadlineSessionNotFoundError
from threadline.integrations._adk_events import (
    KEY,
    event_of_json,
    event_to_message,
    message_to_event,
)
from threadline.integrations._adk_mapping import (
    LAST,
    LEGACY_LAST,
    NONE_VALUE,
    adk_user,
    check_delta,
    decode_state,
    encode_delta,
    marker_of,
    normal_id,
    owner_of,
    read_marker,
    registry_entry,
    threadline_session_id,
)
from threadline.internal import lazily
from threadline.store import UNSET, Store

__all__ = ["ThreadlineSessionService"]

_T = TypeVar("_T")
# Sessions per page of list_session_states. A page's rows (a tuple, the internal keys' dict
# and list per session) live until the page is mapped: small pages keep few of them alive
# when the cyclic GC runs, so few are promoted to its oldest generation (promotions are what
# bring on a full collection); 250 costs SQLite nothing measurable, PostgreSQL ~6 ms per
# 10,000 sessions in round trips.
_PAGE = 250
_NOBODY = object()  # equal to no owner of a listed session (not even None)

# The fields set of a listed Session: each session gets a copy (pydantic adds to it when a
# field is assigned); copying a set costs less than half of building one from a tuple.
_LISTED_FIELDS = frozenset(("id", "app_name", "user_id", "state", "last_update_time"))
_listed_fields = set(_LISTED_FIELDS).copy
_new_session = Session.__new__
_set = object.__setattr__


def _construct_session(
    session_id: str, app_name: str, user_id: str, state: dict[str, Any], last: float
) -> Session:
    """What ``Session(...)`` builds, without validating values that are of the right types by
    construction (``list_sessions`` builds thousands): pydantic's ``model_construct``, cut
    down to these fields. :data:`_listed_session` checks it against ``Session(...)`` once.

    The fields are set one by one rather than as a new ``__dict__``: the instance then keeps
    them in its own slots (CPython's inline attribute values), one container fewer per
    listed session for the cyclic garbage collector to track and walk."""
    session = _new_session(Session)
    _set(session, "id", session_id)
    _set(session, "app_name", app_name)
    _set(session, "user_id", user_id)
    _set(session, "state", state)
    _set(session, "events", [])
    _set(session, "last_update_time", last)
    _set(session, "__pydantic_fields_set__", _listed_fields())
    _set(session, "__pydantic_extra__", None)
    _set(session, "__pydantic_private__", {"_storage_update_marker": None})
    return session


def _validated_session(
    session_id: str, app_name: str, user_id: str, state: dict[str, Any], last: float
) -> Session:
    return Session(
        id=session_id, app_name=app_name, user_id=user_id, state=state, last_update_time=last
    )


def _pick_session_builder() -> Callable[[str, str, str, dict[str, Any], float], Session]:
    """The fast builder if it makes exactly what validation makes on this pydantic/ADK."""
    args = ("s", "a", "u", {"k": [1]}, 1.5)
    fast, slow = _construct_session(*args), _validated_session(*args)
    same = (
        fast == slow
        and vars(fast) == vars(slow)
        and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
        and fast.__pydantic_private__ == slow.__pydantic_private__
        and fast.__pydantic_extra__ == slow.__pydantic_extra__
        and fast.model_dump() == slow.model_dump()
    )
    return _construct_session if same else _validated_session


_listed_session = _pick_session_builder()
_by_id = attrgetter("id")
_by_user = attrgetter("user_id")
_by_last_update = attrgetter("last_update_time")


class ThreadlineSessionService(BaseSessionService):
    """ADK's ``BaseSessionService`` over a threadline store (SQLite or PostgreSQL).

    ``store`` is a threadline URL or path (opened here and closed by :meth:`close`) or an open
    ``threadline.Store`` (left open). See the module docstring for the mapping.

    >>> import asyncio
    >>> service = ThreadlineSessionService(":memory:")
    >>> session = asyncio.run(service.create_session(app_name="app", user_id="u1"))
    >>> len(session.id) > 0, session.state
    (True, {})
    """

    def __init__(self, store: str | os.PathLike[str] | Store) -> None:
        self.store, self._owns_store = lazily(store)
        # One lock per ADK session serialises this process's appends to it; a lock lives as
        # long as a task holds or awaits it.
        self._locks: weakref.WeakValueDictionary[tuple[str, str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        # (app, threadline id) of sessions seen holding the bookkeeping key where earlier
        # versions kept it (a plain session key): their next append deletes it.
        self._legacy: set[tuple[str, str]] = set()

    async def _run(self, function: Callable[..., _T], /, *args: Any) -> _T:
        """Run a storage call off the event loop, in a worker thread of the loop's default
        executor (``asyncio.to_thread``): the way every ``threadline.aio`` call on a store
        runs. Appends to one session are kept in order by that session's lock, not by the
        thread they run in."""
        return await asyncio.to_thread(function, *args)

    async def close(self) -> None:
        """Close the store if this service opened it (from a URL). Idempotent.

        >>> import asyncio
        >>> asyncio.run(ThreadlineSessionService(":memory:").close())
        """
        if self._owns_store:
            await self._run(self.store.close)

    # -- reads -------------------------------------------------------------------------------
    def _state(self, app_name: str, tl_id: str, user_id: str) -> dict[str, Any]:
        stored = self.store.get_state(app_name, tl_id, owner_of(user_id))
        if LEGACY_LAST in stored:
            self._legacy.add((app_name, tl_id))
        return decode_state(stored)

    def _last_update(self, head: Mapping[str, Any] | None, entry: Mapping[str, Any]) -> float:
        if head is not None:
            return message_to_event(head).timestamp
        return float(entry.get("created", 0.0))

    def _get_sync(
        self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None
    ) -> Session | None:
        tl_id = threadline_session_id(user_id, session_id)
        info = self.store.get_session(app_name, tl_id)
        entry = registry_entry(info, user_id)
        if info is None or entry is None:
            return None
        recent = config.num_recent_events if config else None
        after = config.after_timestamp if config else None
        head_id: str | None
        if recent == 0:
            head = self.store.get_head(app_name, tl_id)
            events: list[Event] = []
            head_id = None if head is None else str(head["id"])
            last = self._last_update(head, entry)
        else:
            if recent is not None:
                rows = [
                    (row[0], row[1]) for row in self.store.get_path_tail(app_name, tl_id, recent)
                ]
            else:
                rows = self.store.get_path_encoded(app_name, tl_id)
            events = [event_of_json(encoded) for _, encoded in rows]
            head_id = rows[-1][0] if rows else None
            last = events[-1].timestamp if events else float(entry.get("created", 0.0))
            if after is not None:
                # As InMemorySessionService: drop everything up to the newest event before it.
                index = len(events) - 1
                while index >= 0 and events[index].timestamp >= after:
                    index -= 1
                events = events[index + 1 :]
        session = Session(
            id=str(entry["id"]),
            app_name=app_name,
            user_id=user_id,
            state=self._state(app_name, tl_id, user_id),
            events=events,
            last_update_time=last,
        )
        session._storage_update_marker = marker_of(info.generation, head_id)
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its events (all, or those ``config`` selects), or ``None``.

        >>> import asyncio
        >>> service = ThreadlineSessionService(":memory:")
        >>> _ = asyncio.run(service.create_session(app_name="app", user_id="u1", session_id="s1"))
        >>> asyncio.run(service.get_session(app_name="app", user_id="u1", session_id="s1")).id
        's1'
        >>> asyncio.run(service.get_session(app_name="app", user_id="u2", session_id="s1"))
        """
        normal = normal_id(session_id)
        if normal is None:
            return None
        return await self._run(self._get_sync, app_name, user_id, normal, config)

    def _list_sync(self, app_name: str, user_id: str | None) -> list[Session]:
        # One query per _PAGE sessions (id, owner, head, session state: plain tuples) and one
        # state read per distinct user (app:/user: keys); no read per session.
        shared: dict[str, tuple[str, dict[str, Any]]] = {}  # user -> (id prefix, state)
        found: list[Session] = []
        add = found.append
        cursor: str | None = None
        owners = None if user_id is None else owner_of(user_id)
        # The owner of the row before (rows come grouped by owner when one user is listed)
        # and what goes with it; no owner yet: a value no owner equals.
        current: str = ""
        seen: object = _NOBODY
        prefix, cut = "", 0
        common: dict[str, Any] = {}
        while True:
            page = self.store.list_session_states(
                app_name, user_id=owners, limit=_PAGE, cursor=cursor
            )
            for tl_id, owner, head_id, state, internal in page.sessions:
                if owner != seen:
                    if owner is None:
                        continue
                    known = shared.get(owner)
                    if known is None:
                        user = adk_user(owner)
                        start = threadline_session_id(user, "")
                        known = shared[owner] = start, self._state(app_name, start, user)
                    (prefix, common), cut, seen = known, len(known[0]), owner
                    current = adk_user(owner)
                if not tl_id.startswith(prefix):
                    continue
                last = internal.get(LAST)
                if (  # the common case, inline: bookkeeping of the current head
                    type(last) is list
                    and len(last) == 2
                    and last[0] == head_id
                    and LEGACY_LAST not in state
                ):
                    last = float(last[1])
                else:
                    last = self._listed_update(app_name, tl_id, current, head_id, state, internal)
                    if last is None:
                        continue
                if NONE_VALUE in state.values():
                    state = decode_state(state)
                if common:
                    state = {**common, **state}
                add(_listed_session(tl_id[cut:], app_name, current, state, last))
            cursor = page.next_cursor
            del page  # before the next page is read: one page of rows alive at a time
            if cursor is None:
                break
        # ADK's order: last update, then user, then id; stable sorts by one plain key each,
        # least significant first, rather than one sort by a tuple per session: a tuple is one
        # more container per session for the cyclic garbage collector to walk.
        found.sort(key=_by_id)
        if user_id is None:
            found.sort(key=_by_user)
        found.sort(key=_by_last_update)
        return found

    def _listed_update(
        self,
        app_name: str,
        tl_id: str,
        owner: str,
        head_id: str | None,
        state: dict[str, Any],
        internal: Mapping[str, Any],
    ) -> float | None:
        """``last_update_time`` of a listed ADK session (the legacy bookkeeping key is popped
        from ``state``); ``None`` for a session not made through this service."""
        last = internal.get(LAST)
        legacy = state.pop(LEGACY_LAST, None)
        if legacy is not None:
            self._legacy.add((app_name, tl_id))
            last = last or legacy
        if isinstance(last, list) and len(last) == 2 and last[0] == head_id:
            return float(last[1])
        # No bookkeeping key, or messages written around this service: read the registry.
        entry = registry_entry(self.store.get_session(app_name, tl_id), owner)
        if entry is None:
            return None
        head = None if head_id is None else self.store.get_head(app_name, tl_id)
        return self._last_update(head, entry)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's sessions (one user's, or every user's), least recently updated first,
        without their events, with merged ``app:``/``user:``/session state.

        >>> import asyncio
        >>> service = ThreadlineSessionService(":memory:")
        >>> for user, sid in (("u1", "a"), ("u2", "b")):
        ...     new = service.create_session(app_name="app", user_id=user, session_id=sid)
        ...     _ = asyncio.run(new)
        >>> [s.id for s in asyncio.run(service.list_sessions(app_name="app")).sessions]
        ['a', 'b']
        >>> listed = asyncio.run(service.list_sessions(app_name="app", user_id="u2"))
        >>> [s.id for s in listed.sessions]
        ['b']
        """
        sessions = await self._run(self._list_sync, app_name, user_id)
        return ListSessionsResponse(sessions=sessions)

    def _user_state_sync(self, app_name: str, user_id: str) -> dict[str, Any]:
        # The "<user>/" session never exists (ADK ids are never empty): only app: and user: keys.
        state = self._state(app_name, threadline_session_id(user_id, ""), user_id)
        prefix = State.USER_PREFIX
        return {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's ``user:`` state of the app, keys without the prefix (``{}`` if none).

        >>> import asyncio
        >>> service = ThreadlineSessionService(":memory:")
        >>> _ = asyncio.run(service.create_session(app_name="app", user_id="u1",
        ...                                        state={"user:lang": "nb", "topic": "tea"}))
        >>> asyncio.run(service.get_user_state(app_name="app", user_id="u1"))
        {'lang': 'nb'}
        """
        return await self._run(self._user_state_sync, app_name, user_id)

    # -- writes ------------------------------------------------------------------------------
    def _create_sync(
        self, app_name: str, user_id: str, state: Mapping[str, Any], session_id: str
    ) -> Session:
        tl_id = threadline_session_id(user_id, session_id)
        created = platform_time.get_time()
        entry = {"id": session_id, "created": created}
        try:
            info = self.store.create_session(
                app_name, tl_id, user_id=owner_of(user_id), metadata={KEY: entry}
            )
        except SessionExistsError:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        delta = {**encode_delta(state), LAST: [None, created]}
        try:
            self.store.update_state(app_name, tl_id, owner_of(user_id), delta)
        except BaseException:
            self.store.delete_session(app_name, tl_id)
            raise
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=self._state(app_name, tl_id, user_id),
            last_update_time=created,
        )
        session._storage_update_marker = marker_of(info.generation, None)
        return session

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session (a new UUID id when ``session_id`` is missing or blank); initial
        ``state`` keys go to their scope. ``AlreadyExistsError`` if the user has that id.

        >>> import asyncio
        >>> service = ThreadlineSessionService(":memory:")
        >>> session = asyncio.run(service.create_session(
        ...     app_name="app", user_id="u1", session_id=" s1 ", state={"app:theme": "dark"}))
        >>> session.id, session.state
        ('s1', {'app:theme': 'dark'})
        """
        check_delta(state)
        normal = normal_id(session_id) or platform_uuid.new_uuid()
        return await self._run(self._create_sync, app_name, user_id, dict(state or {}), normal)

    def _delete_sync(self, app_name: str, user_id: str, session_id: str) -> None:
        tl_id = threadline_session_id(user_id, session_id)
        if registry_entry(self.store.get_session(app_name, tl_id), user_id) is not None:
            self.store.delete_session(app_name, tl_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete the session and its events (nothing happens if it does not exist).

        >>> import asyncio
        >>> service = ThreadlineSessionService(":memory:")
        >>> _ = asyncio.run(service.create_session(app_name="app", user_id="u1", session_id="s1"))
        >>> asyncio.run(service.delete_session(app_name="app", user_id="u1", session_id="s1"))
        >>> asyncio.run(service.get_session(app_name="app", user_id="u1", session_id="s1"))
        """
        normal = normal_id(session_id)
        if normal is not None:
            await self._run(self._delete_sync, app_name, user_id, normal)

    def _append_sync(self, session: Session, event: Event) -> str | None:
        """Write the event; the session's new marker (``marker_of``), or ``None`` for an
        equal event already stored.

        One store call, one transaction: the append is conditional on the head the session
        object was read at (``if_head``), so a writer that appended since (in any process)
        makes it fail as stale with nothing written, and a message id already stored comes
        back instead of being written (a re-delivery, or an id to write under a new one)."""
        app_name, user_id = session.app_name, session.user_id
        tl_id = threadline_session_id(user_id, session.id)
        marker = session._storage_update_marker
        head: Any = UNSET  # a Session this service did not hand out: no head to expect
        generation: int | None = None
        if marker is None:
            info = self.store.get_session(app_name, tl_id)
            if registry_entry(info, user_id) is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            generation = info.generation if info is not None else None
        else:
            # Bound to the session it was read from (clarification 23): one deleted and
            # created again since is another session, refused as not found.
            generation, head = read_marker(marker)
        delta = encode_delta(event.actions.state_delta) if event.actions else {}
        legacy = (app_name, tl_id) in self._legacy
        if legacy:
            delta[LEGACY_LAST] = None
        message = event_to_message(event, message_id=event.id or None)
        while True:
            delta[LAST] = [message["id"], event.timestamp]
            try:
                (stored,) = self.store.append_messages(
                    app_name,
                    tl_id,
                    [message],
                    user_id=owner_of(user_id),
                    state_delta=delta,
                    if_head=head,
                    # Only when known: a third-party store may not take the keyword.
                    **({"generation": generation} if generation else {}),
                )
            except ThreadlineSessionNotFoundError:
                raise SessionNotFoundError(f"Session {session.id} not found.") from None
            except HeadMovedError:
                raise StaleSessionError(
                    "The session has been modified in storage since it was loaded. "
                    "Please reload the session before appending more events."
                ) from None
            if stored is message:  # written
                break
            if message_to_event(stored) == event:
                return None  # a re-delivery: not written, state not applied again
            # Another event under this id: store this one under an id of its own.
            message = {**message, "id": f"{event.id}~{uuid.uuid4().hex[:12]}"}
        if legacy:
            self._legacy.discard((app_name, tl_id))
        return marker_of(generation or 0, str(message["id"]))

    async def append_event(self, session: Session, event: Event) -> Event:
        """Persist ``event`` (not a ``partial`` one) with its state delta in one transaction and
        add it to ``session``. ``SessionNotFoundError`` for a session not stored;
        ``StaleSessionError`` if another writer appended since ``session`` was read.

        >>> import asyncio
        >>> from google.adk.events.event import Event
        >>> from google.adk.events.event_actions import EventActions
        >>> service = ThreadlineSessionService(":memory:")
        >>> session = asyncio.run(service.create_session(app_name="app", user_id="u1"))
        >>> event = Event(author="user", actions=EventActions(state_delta={"step": 1}))
        >>> _ = asyncio.run(service.append_event(session, event))
        >>> session.state, len(session.events)
        ({'step': 1}, 1)
        """
        if event.partial:
            return event
        check_delta(event.actions.state_delta if event.actions else None)
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        key = (session.app_name, session.user_id, session.id)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            marker = await self._run(self._append_sync, session, event)
        if marker is None:
            return event
        session.last_update_time = event.timestamp
        session._storage_update_marker = marker
        return self._commit_event_to_session(session, event)
