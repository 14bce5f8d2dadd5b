"""Who a request is: its app (and user, for a user-bound key), from the API key.

One :class:`~threadline.SessionManager` per app, built on first use and handed to the
``configure`` hook. A key reaches only its app; a user-bound key reaches only the sessions
owned by exactly its user (``owned_by``: not the app's owner-less ones, which the library's
in-process rule, ``visible_to``, lets any user see; both in ``threadline._ownership``) —
anything else is reported missing (404), never forbidden, so ids do not leak. A user-bound
key may not write what every user of the app sees (``app:`` state, app-scoped blocks): that
is forbidden (403).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from threadline.errors import InvalidArgumentError, StoreError
from threadline.internal import not_found, owned_by, scope_of
from threadline.manager import SessionManager
from threadline.server._keys import hash_key
from threadline.session import Session
from threadline.store import Store
from threadline.types import SessionInfo

Configure = Callable[[SessionManager], SessionManager | None]


class NotFound(Exception):
    """Something that is not a session, message or block is missing (or not the key's): 404."""


class Forbidden(Exception):
    """A user-bound key writing app-wide data (``app:`` state, an app-scoped block): 403."""


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
        """The session's registry row; ``SessionNotFoundError`` if it does not exist or is
        not owned by the key's user (for a user-bound key: owner-less sessions are missing)."""
        info = self.manager.get(session_id)
        if info is None or not owned_by(info.user_id, self.user):
            raise not_found(session_id)
        return info

    def session(self, session_id: str) -> Session:
        """An existing session (404 otherwise), as the app's manager configures it."""
        info = self.require(session_id)
        return self.manager.get_session(session_id, user_id=info.user_id)

    def writable(self, session_id: str) -> Session:
        """A session to write to: created on the first write (owned by the key's user) as
        the library does; a session the key's user does not own is missing."""
        info = self.manager.get(session_id)
        if info is None:
            return self.manager.get_session(session_id, user_id=self.user)
        if not owned_by(info.user_id, self.user):
            raise not_found(session_id)
        # the owner's Session object, the one reads use (a manager caches one per owner given)
        return self.manager.get_session(session_id, user_id=info.user_id)

    def check_state(self, delta: object) -> None:
        """:class:`Forbidden` if a user-bound key's state delta touches ``app:`` keys.

        >>> import threadline
        >>> t = Tenant("travel", "ana", threadline.SessionManager(":memory:", "travel"))
        >>> t.check_state({"user:lang": "pt", "topic": "hotels"})
        >>> t.check_state({"app:currency": "EUR"})
        Traceback (most recent call last):
        threadline.server._tenancy.Forbidden: a key bound to a user may not write 'app:' state
        """
        if self.user is None or not isinstance(delta, dict):
            return
        if any(isinstance(k, str) and scope_of(k) == "app" for k in delta):
            raise Forbidden("a key bound to a user may not write 'app:' state")

    def check_block(self, session: Session, label: object) -> None:
        """:class:`Forbidden` if a user-bound key would write an app-scoped block.

        >>> import threadline
        >>> m = threadline.SessionManager(":memory:", "travel").with_context("rules", scope="app")
        >>> t = Tenant("travel", "ana", m)
        >>> t.check_block(m.get_session("s1", user_id="ana"), "rules")
        Traceback (most recent call last):
        threadline.server._tenancy.Forbidden: a key bound to a user may not write ... 'rules'
        """
        if self.user is None or not isinstance(label, str):
            return
        block = session.get_context_block(label)
        if block is not None and block.scope == "app":
            raise Forbidden(f"a key bound to a user may not write the app-wide block {label!r}")

    def user_filter(self, user_id: str | None) -> tuple[bool, str | None]:
        """``(visible, user)`` for a ``user_id`` query: a user-bound key sees only its user
        (another user's listing is empty, not an error)."""
        if self.user is None:
            return True, user_id
        return user_id in (None, self.user), self.user


def check_served(*, app: str | None, user: str | None) -> None:
    """``InvalidArgumentError`` unless the app and user a service is narrowed to are
    non-empty names (or ``None``: not narrowed).

    >>> check_served(app="demo", user=None)
    >>> check_served(app=" ", user=None)
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: app must be a non-empty name (or None)
    """
    for name, value in (("app", app), ("user", user)):
        if value is not None and not value.strip():
            raise InvalidArgumentError(f"{name} must be a non-empty name (or None)")


class Tenants:
    """Resolves keys to tenants; builds and caches one configured manager per app.

    A key found live in the store is remembered for ``key_cache_ttl`` seconds (0: never), so
    a request with a recently seen key needs no store lookup; a revoked key is therefore
    refused within ``key_cache_ttl`` seconds on every worker. Unknown and revoked keys are
    never remembered, and at most ``KEY_CACHE_SIZE`` keys are.

    >>> import threadline
    >>> from threadline.server import create_key
    >>> store = threadline.connect(":memory:")
    >>> key = create_key(store, "travel")
    >>> tenants = Tenants(store, None, auth=True, key_cache_ttl=1.0)
    >>> tenants.cached(key) is None, tenants.from_key(key).app, tenants.cached(key).app
    (True, 'travel', 'travel')
    """

    KEY_CACHE_SIZE = 10_000

    def __init__(
        self,
        store: Store,
        configure: Configure | None,
        auth: bool,
        key_cache_ttl: float = 0.0,
        *,
        app: str | None = None,
        user: str | None = None,
        allowed_models: Mapping[str, tuple[str, str | None]] | None = None,
    ) -> None:
        if key_cache_ttl < 0:
            raise InvalidArgumentError("key_cache_ttl must be >= 0")
        check_served(app=app, user=user)
        self.store = store
        self.auth = auth
        self.app = app  # serve this app only (None: every app)
        self.user = user  # serve this user only: every request acts as bound to it
        self.key_cache_ttl = key_cache_ttl
        self._configure = configure
        # name -> (base_url, api_key_env) a tenant's profile may name (serve --allow-model)
        self.allowed_models = dict(allowed_models or {})
        self._managers: dict[str, SessionManager] = {}
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[float, Tenant]] = {}  # key hash -> (expires, tenant)

    def manager(self, app: str) -> SessionManager:
        """The app's manager: its stored profile (followed as it changes), with the
        ``configure`` hook's calls laid over it, built on first use."""
        with self._lock:
            found = self._managers.get(app)
            if found is None:
                found = SessionManager.from_profile(self.store, app)
                if self._configure is not None:
                    found = self._configure(found) or found
                self._managers[app] = found
            return found

    def cached(self, key: str) -> Tenant | None:
        """The tenant of a key found live less than ``key_cache_ttl`` seconds ago, else
        ``None`` (then ask :meth:`from_key`). No store access."""
        if not self.key_cache_ttl:
            return None
        found = self._keys.get(hash_key(key))
        if found is None or found[0] <= time.monotonic():
            return None
        return found[1]

    def from_key(self, key: str | None) -> Tenant:
        """The tenant of an API key, looked up in the store; :class:`Unauthorized` unless it
        is known and live."""
        if not key:
            raise Unauthorized("missing API key (Authorization: Bearer <key>)")
        digest = hash_key(key)
        found = self.store.find_api_key(digest)
        if found is None:
            raise Unauthorized("unknown API key")
        if found.revoked:
            self._keys.pop(digest, None)
            raise Unauthorized("this API key was revoked")
        if self.app is not None and found.app != self.app:
            raise Unauthorized(f"this service serves app {self.app!r} only")
        user = found.user_id
        if self.user is not None:
            if user not in (None, self.user):
                raise Unauthorized(f"this service serves user {self.user!r} only")
            user = self.user
        tenant = Tenant(found.app, user, self.manager(found.app))
        if self.key_cache_ttl:
            self._remember(digest, tenant)
        return tenant

    def live(self, key: str) -> bool:
        """Whether a key is still known and not revoked (from the cache when it holds the key,
        so a revocation shows within ``key_cache_ttl`` seconds). A store error counts as live:
        it is not the key's fault, and the caller asks again later.

        >>> import threadline
        >>> from threadline.server import create_key, key_id_of, revoke_key
        >>> store = threadline.connect(":memory:")
        >>> key = create_key(store, "travel")
        >>> tenants = Tenants(store, None, auth=True)
        >>> tenants.live(key), revoke_key(store, key_id_of(key)), tenants.live(key)
        (True, True, False)
        """
        if self.cached(key) is not None:
            return True
        try:
            self.from_key(key)
        except Unauthorized:
            return False
        except StoreError:
            return True
        return True

    def _remember(self, digest: str, tenant: Tenant) -> None:
        now = time.monotonic()
        with self._lock:
            if len(self._keys) >= self.KEY_CACHE_SIZE:
                live = {k: v for k, v in self._keys.items() if v[0] > now}
                self._keys = live if len(live) < self.KEY_CACHE_SIZE else {}
            self._keys[digest] = (now + self.key_cache_ttl, tenant)

    def from_header(self, app: str | None) -> Tenant:
        """``--no-auth``: the app named by ``X-Threadline-App`` (default: the served app, else
        ``"default"``), acting as the served user if there is one.

        >>> import threadline
        >>> tenants = Tenants(threadline.connect(":memory:"), None, auth=False, app="demo")
        >>> tenants.from_header(None).app
        'demo'
        >>> tenants.from_header("travel")
        Traceback (most recent call last):
        threadline.errors.InvalidArgumentError: this service serves app 'demo' only
        """
        name = app or self.app or "default"
        if not name.strip():
            raise InvalidArgumentError("X-Threadline-App must name an app")
        if self.app is not None and name != self.app:
            raise InvalidArgumentError(f"this service serves app {self.app!r} only")
        return Tenant(name, self.user, self.manager(name))
