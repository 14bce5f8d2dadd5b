"""The storage contract, part one: the session registry (see ``threadline.store.base``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from threadline.store._contract.values import UNSET
from threadline.types import (
    SessionInfo,
    SessionListingPage,
    SessionPage,
    SessionStatePage,
)


@runtime_checkable
class RegistryContract(Protocol):
    """Sessions of an app: create, read, list, update, delete, purge, usage, forget."""

    # -- session registry --------------------------------------------------------------------
    def create_session(
        self,
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Insert a registry row; raises ``SessionExistsError`` if ``(app, session_id)`` exists.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.create_session("default", "s1", user_id="u1", name="Trip").user_id
        'u1'
        >>> store.create_session("default", "s1")
        Traceback (most recent call last):
        threadline.errors.SessionExistsError: session 's1' already exists in app 'default'
        """

    def get_session(self, app: str, session_id: str) -> SessionInfo | None:
        """The registry row, or ``None``. ``message_count`` counts all stored messages.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.get_session("default", "s1").message_count
        1
        >>> store.get_session("other", "s1") is None  # sessions are per app
        True
        """

    def list_sessions(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest ``updated_at`` first, ties by ``id`` descending; keyset pagination.

        ``cursor`` is the opaque ``next_cursor`` of the previous page; ``next_cursor`` is
        ``None`` exactly when no session follows. Uses an index, never sorts the table.
        A malformed cursor raises ``InvalidArgumentError``; ``limit`` < 1 too.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> for sid in ("s1", "s2", "s3"):
        ...     store.touch_session("default", sid)
        >>> page = store.list_sessions("default", limit=2)
        >>> [s.id for s in page.sessions]
        ['s3', 's2']
        >>> [s.id for s in store.list_sessions("default", cursor=page.next_cursor).sessions]
        ['s1']
        """

    def list_sessions_with_state(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionListingPage:
        """``list_sessions`` in bulk form: each session with its session-scoped state, its
        head id and the head message's ``createdAt``, all from ONE query per page (the state
        aggregated by the database), in the same order and with the same cursors as
        ``list_sessions``. For callers that list many sessions at once (an adapter building
        its own session objects): no read per session.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user",
        ...     "parts": [], "createdAt": "2026-01-01T00:00:00.000Z"}], state_delta={"k": 1})
        >>> store.touch_session("default", "s2")
        >>> page = store.list_sessions_with_state("default", limit=1)
        >>> [(s.id, s.state, s.head_id) for s in page.sessions]
        [('s2', {}, None)]
        >>> (s1,) = store.list_sessions_with_state("default", cursor=page.next_cursor).sessions
        >>> s1.id, s1.state, s1.head_id, s1.last_message_at
        ('s1', {'k': 1}, 'm1', '2026-01-01T00:00:00.000Z')
        """

    def list_session_states(
        self, app: str, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionStatePage:
        """The lean form of ``list_sessions_with_state``: per session only the tuple
        ``(id, user_id, head_id, state, internal)``, from ONE query per page (the state rows
        aggregated by the database into one JSON object per session), without the registry
        row or the head's ``createdAt``. Same sessions, order, pages and cursors as
        ``list_sessions`` (a cursor of either works in the other). ``state`` holds the
        session-scoped keys, ``internal`` the session's internal keys (an adapter's
        bookkeeping, in no state read). For an adapter building thousands of its own session
        objects at once.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user",
        ...     "parts": []}], user_id="u1", state_delta={"k": 1, "user:lang": "nb"})
        >>> store.touch_session("default", "s2")
        >>> page = store.list_session_states("default", limit=1)
        >>> page.sessions
        [('s2', None, None, {}, {})]
        >>> store.list_session_states("default", cursor=page.next_cursor).sessions
        [('s1', 'u1', 'm1', {'k': 1}, {})]
        """

    def update_session(
        self,
        app: str,
        session_id: str,
        *,
        name: Any = UNSET,
        end_reason: Any = UNSET,
        model: Any = UNSET,
        source: Any = UNSET,
        metadata: Any = UNSET,
        generation: int | None = None,
    ) -> SessionInfo:
        """Set the given fields (``UNSET`` leaves one alone) and touch ``updated_at``.

        Raises ``SessionNotFoundError`` if the row does not exist.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.create_session("default", "s1", name="Draft")
        >>> info = store.update_session("default", "s1", end_reason="done")
        >>> info.name, info.end_reason  # name was left UNSET: unchanged
        ('Draft', 'done')
        """

    def touch_session(
        self,
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        generation: int | None = None,
    ) -> None:
        """Create the registry row if missing and move ``updated_at``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1")  # creates the row
        >>> before = store.get_session("default", "s1").updated_at
        >>> store.touch_session("default", "s1")
        >>> store.get_session("default", "s1").updated_at > before
        True
        """

    def delete_session(self, app: str, session_id: str, *, generation: int | None = None) -> bool:
        """Delete the row and everything of the session: messages, search rows, overlays,
        session-scoped blocks, prompt, session state, skill loads, the session's stored files
        (``put_artifact``). ``False`` if nothing existed.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])
        >>> store.delete_session("default", "s1"), store.get_message("default", "s1", "m1")
        (True, None)
        >>> store.delete_session("default", "s1")
        False
        """

    def purge_sessions(self, app: str, *, before: datetime, user_id: str | None = None) -> int:
        """Delete (as ``delete_session``) every session of ``app`` with ``updated_at < before``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> from datetime import timedelta
        >>> store.touch_session("default", "s1")
        >>> store.purge_sessions("default", before=store.now() - timedelta(days=30))  # s1 is newer
        0
        >>> store.purge_sessions("default", before=store.now() + timedelta(seconds=1))
        1
        """

    def add_usage(
        self,
        app: str,
        session_id: str,
        input_tokens: int,
        output_tokens: int,
        cost: float,
        *,
        generation: int | None = None,
    ) -> None:
        """Atomically increment the usage counters (creating the row if missing).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.add_usage("default", "s1", 100, 20, 0.5)  # creates the row
        >>> store.add_usage("default", "s1", 50, 10, 0.25)
        >>> info = store.get_session("default", "s1")
        >>> info.input_tokens, info.output_tokens, info.estimated_cost
        (150, 30, 0.75)
        """

    def count_sessions(
        self, app: str, *, user_id: str | None = None, without_user: bool = False
    ) -> int:
        """Number of registry rows of ``app``; only ``user_id``'s sessions when given, only
        sessions without a user with ``without_user=True``.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1", user_id="u1")
        >>> store.touch_session("default", "s2")
        >>> store.count_sessions("default"), store.count_sessions("default", user_id="u1")
        (2, 1)
        >>> store.count_sessions("default", without_user=True), store.count_sessions("other")
        (1, 0)
        """

    def list_apps(self) -> dict[str, int]:
        """Every app that has sessions in the store, with its number of sessions, by name.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> for app, sid in (("travel", "s1"), ("travel", "s2"), ("demo", "s1")):
        ...     store.touch_session(app, sid)
        >>> store.list_apps()
        {'demo': 1, 'travel': 2}
        """

    def forget_user(self, app: str, user_id: str) -> int:
        """Delete, in one transaction, every session of ``user_id`` in ``app`` (with all that
        hangs off it), the user's user-scoped blocks and ``user:`` state and their stored files
        (``put_artifact``). Returns the number of sessions deleted.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.update_state("default", "s1", "u1", {"user:lang": "nb"})  # s1 is now u1's
        >>> store.forget_user("default", "u1")
        1
        >>> store.get_session("default", "s1"), store.get_state("default", "s2", "u1")
        (None, {})
        """
