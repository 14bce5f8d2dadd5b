"""Who a request is: its app (and user, for a user-bound key), from the API key.

One :class:`~threadline.SessionManager` per app, built on first use and handed to the
``configure`` hook. A key reaches only its app; a user-bound key reaches only that user's
sessions — anything else is reported missing (404), never forbidden, so ids do not leak.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from threadline.errors import InvalidArgumentError, SessionNotFoundError
from threadline.manager import SessionManager
from threadline.server._keys import hash_key
from threadline.session import Session
from threadline.store import Store
from threadline.types import SessionInfo

Configure = Callable[[SessionManager], SessionManager | None]


class NotFound(Exception):
    """Something that is not a session, message or block is missing (or not the key's): 404."""


class Unauthorized(Exception):
    """A ``/v1`` request without a valid key (missing, unknown or revoked): 401."""


@dataclass(frozen=True)
class Tenant:
    """The app (and user) a request acts for, with the app's configured manager.

    >>> import threadline
    >>> t = Tenant("travel", None, threadline.SessionManager(":memory:", "travel"))
    >>> t.require("nope")
    Traceback (most recent call last):
    threadline.errors.SessionNotFoundError: session 'nope' not found
    """

    app: str
    user: str | None
    manager: SessionManager

    def require(self, session_id: str) -> SessionInfo:
        """The session's registry row; ``SessionNotFoundError`` if it does not exist or
        belongs to another user than the key's."""
        info = self.manager.get(session_id, user_id=self.user)
        if info is None:
            raise SessionNotFoundError(f"session {session_id!r} not found")
        return info

    def session(self, session_id: str) -> Session:
        """An existing session (404 otherwise), as the app's manager configures it."""
        info = self.require(session_id)
        return self.manager.get_session(session_id, user_id=info.user_id)

    def writable(self, session_id: str) -> Session:
        """A session to write to: created on the first write (owned by the key's user) as
        the library does; another user's session is missing."""
        return self.manager.get_session(session_id, user_id=self.user)

    def user_filter(self, user_id: str | None) -> tuple[bool, str | None]:
        """``(visible, user)`` for a ``user_id`` query: a user-bound key sees only its user
        (another user's listing is empty, not an error)."""
        if self.user is None:
            return True, user_id
        return user_id in (None, self.user), self.user


class Tenants:
    """Resolves keys to tenants; builds and caches one configured manager per app."""

    def __init__(self, store: Store, configure: Configure | None, auth: bool) -> None:
        self.store = store
        self.auth = auth
        self._configure = configure
        self._managers: dict[str, SessionManager] = {}
        self._lock = threading.Lock()

    def manager(self, app: str) -> SessionManager:
        """The app's manager, configured by the hook on first use."""
        with self._lock:
            found = self._managers.get(app)
            if found is None:
                found = SessionManager(self.store, app)
                if self._configure is not None:
                    found = self._configure(found) or found
                self._managers[app] = found
            return found

    def from_key(self, key: str | None) -> Tenant:
        """The tenant of an API key; :class:`Unauthorized` unless it is known and live."""
        if not key:
            raise Unauthorized("missing API key (Authorization: Bearer <key>)")
        found = self.store.find_api_key(hash_key(key))
        if found is None:
            raise Unauthorized("unknown API key")
        if found.revoked:
            raise Unauthorized("this API key was revoked")
        return Tenant(found.app, found.user_id, self.manager(found.app))

    def from_header(self, app: str | None) -> Tenant:
        """``--no-auth``: the app named by ``X-Threadline-App`` (default ``"default"``)."""
        name = app or "default"
        if not name.strip():
            raise InvalidArgumentError("X-Threadline-App must name an app")
        return Tenant(name, None, self.manager(name))
