"""The registry verbs of a ``SessionManager``: create, get, list, rename, delete, and the
removals (``forget_user``, ``purge``) — what a manager does to sessions as rows, before
any of their messages. ``SessionManager`` (``threadline.manager``) builds on it.

>>> from threadline import SessionManager
>>> [c.__name__ for c in SessionManager.__mro__][:4]
['SessionManager', 'ManagerRegistry', 'ManagerProfile', 'ManagerBase']
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from threadline._manager_profile import ManagerProfile
from threadline._manager_steps import (
    cutoff,
    purged_by,
)
from threadline._ownership import not_found
from threadline.errors import InvalidArgumentError, SessionExistsError
from threadline.types import (
    SessionInfo,
    SessionPage,
)

__all__ = ["ManagerRegistry"]


class ManagerRegistry(ManagerProfile):
    """A manager's sessions as registry rows (see ``SessionManager``).

    >>> from threadline import SessionManager
    >>> SessionManager(":memory:").get_or_create("s1").id
    's1'
    """

    # -- registry ----------------------------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Create a session (id generated unless given; an existing id: SessionExistsError).

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:", app_name="travel")
        >>> info = m.create("Lisbon trip", user_id="ana", state={"topic": "hotels"})
        >>> info.name, info.user_id, m.get_state(info.id)
        ('Lisbon trip', 'ana', {'topic': 'hotels'})
        >>> m.create(session_id="s1").id
        's1'
        """
        return self._create(
            name,
            session_id=session_id,
            user_id=user_id,
            parent_session_id=parent_session_id,
            model=model,
            source=source,
            state=state,
            metadata=metadata,
        )

    def get(self, session_id: str, *, user_id: str | None = None) -> SessionInfo | None:
        """The registry row of a session, or ``None`` (also when ``user_id`` is given and
        another user owns it).

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> _ = m.create("Trip", session_id="s1", user_id="ana")
        >>> m.get("s1").name, m.get("s1", user_id="bob"), m.get("nope")
        ('Trip', None, None)
        """
        return self._visible(session_id, user_id)

    def get_or_create(
        self,
        session_id: str,
        *,
        user_id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Return the session if it exists (unchanged), else create it with these fields.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> m.get_or_create("s1", name="Trip").name
        'Trip'
        >>> m.get_or_create("s1", name="Other").name  # exists: returned unchanged
        'Trip'
        """
        existing = self.store.get_session(self.app_name, session_id)
        if existing is not None:
            return self._check_visible(existing, user_id)
        try:
            return self.create(
                name,
                session_id=session_id,
                user_id=user_id,
                parent_session_id=parent_session_id,
                model=model,
                source=source,
                state=state,
                metadata=metadata,
            )
        except SessionExistsError:
            again = self.get(session_id, user_id=user_id)  # another process created it first
            if again is None:
                raise
            return again

    def list(
        self, *, user_id: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> SessionPage:
        """Newest ``updated_at`` first; pass ``next_cursor`` back for the following page.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> for sid in ("a", "b", "c"):
        ...     _ = m.create(session_id=sid, user_id="ana")
        >>> page = m.list(user_id="ana", limit=2)
        >>> len(page.sessions), len(m.list(user_id="ana", cursor=page.next_cursor).sessions)
        (2, 1)
        """
        return self.store.list_sessions(self.app_name, user_id=user_id, limit=limit, cursor=cursor)

    def rename(self, session_id: str, name: str, *, user_id: str | None = None) -> SessionInfo:
        """Rename a session (``SessionNotFoundError`` if unknown).

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> _ = m.create("Draft", session_id="s1")
        >>> m.rename("s1", "Lisbon trip").name
        'Lisbon trip'
        """
        self._require(session_id, user_id)
        return self.store.update_session(self.app_name, session_id, name=name)

    def delete(self, session_id: str, *, user_id: str | None = None) -> None:
        """Delete a session and everything of it (messages, overlays, blocks, prompt, state).

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"})
        >>> m.delete("s1")
        >>> m.get("s1") is None
        True
        """
        self._require(session_id, user_id)
        if not self.store.delete_session(self.app_name, session_id):
            raise not_found(session_id, self.app_name)
        self._forget_cached(lambda sid, _: sid == session_id)

    def forget_user(self, user_id: str) -> int:
        """Delete everything of a user in this app, in one transaction: their sessions (with
        messages, overlays, blocks, prompts and state), user-scoped blocks and ``user:`` state.
        Returns the number of sessions deleted.

        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> _ = m.append("s1", {"role": "user", "content": "hi"}, user_id="ana")
        >>> m.forget_user("ana"), m.get("s1")
        (1, None)
        """
        if not isinstance(user_id, str) or not user_id:
            raise InvalidArgumentError("user_id must be a non-empty string")
        count = self.store.forget_user(self.app_name, user_id)
        self._forget_cached(lambda _, session: session.user_id == user_id)
        return count

    def purge(self, *, older_than: datetime | timedelta, user_id: str | None = None) -> int:
        """Delete this app's sessions not updated since ``older_than``; returns how many.

        >>> from datetime import UTC, datetime, timedelta
        >>> from threadline import SessionManager
        >>> m = SessionManager(":memory:")
        >>> _ = m.create(session_id="s1")
        >>> m.purge(older_than=timedelta(days=90))  # s1 was just updated: kept
        0
        >>> m.purge(older_than=datetime(2100, 1, 1, tzinfo=UTC)), m.get("s1")
        (1, None)
        """
        before = cutoff(self.store.now, older_than)
        with self._lock:
            cached = {key[0] for key in self._sessions}
        # Forget only the purged sessions: the others keep their live temp: state.
        doomed = {sid for sid in cached if purged_by(self.get(sid), before, user_id)}
        count = self.store.purge_sessions(self.app_name, before=before, user_id=user_id)
        self._forget_cached(lambda sid, _: sid in doomed)
        return count
