"""The storage contract every backend meets (SQLite, PostgreSQL).

A :class:`Store` holds everything threadline persists, keyed by ``(app, session_id)``:
messages (one row each, a tree via ``parent_id``), the persisted head, summary overlays,
memory blocks, the cached system prompt, keyed entries for search/skill providers, scoped
state and the session registry. Nothing above the store writes SQL; nothing in the store
knows about builders or providers.

Rules every implementation follows (the conformance suite checks them):

* Each public write is one transaction; concurrent writers (threads or processes) never lose
  or fork a message.
* Every write to a session (messages, head, overlays, session-scoped blocks, state, usage)
  creates its registry row if missing (owned by ``user_id`` when given) and moves ``updated_at``
  (microsecond resolution, strictly increasing per session). Reads never write.
* A session's owner is the ``user_id`` it was created with and never changes: a write that
  names another user raises ``SessionNotFoundError``; a write naming a user to a session
  without one leaves it without one.
* Messages are stored already normalised (``threadline.messages.normalize_message``) and
  returned exactly as written, as compact JSON, under the store's size policy
  (docs/attachments.md: long strings out of row, or ``enforce_row_size``, or an error).
* Per session, every message gets a monotonically increasing ``seq``; all "oldest/newest"
  decisions use it.
* Every creation of an (app, session id) gets a ``generation`` (``SessionInfo.generation``),
  distinct in the store and never reused. Every method that acts on one session takes an
  optional ``generation=``: given, it acts only on that creation of the session, else raises
  ``SessionNotFoundError`` and stores nothing (store/_generation.py). Callers check that a
  store's method declares it before passing it: a store that does not keeps working,
  without the guarantee.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> msg = {"id": "m1", "role": "user", "parts": []}
>>> store.append_messages("default", "s1", [msg], AUTO)[0]["id"]
'm1'
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from threadline.store._contract import values as _values
from threadline.store._contract.rooms import StoreRooms
from threadline.store._contract.values import *  # noqa: F403  (the contract's value types)
from threadline.store._handle import SessionStore
from threadline.types import AUTO

__all__ = ["AUTO", "Store", *_values.__all__]

T = TypeVar("T")


@runtime_checkable
class Store(StoreRooms, Protocol):
    """Storage contract. ``app`` and ``session_id`` scope every session-level call.

    The methods are declared by room, next to each other in the private package
    ``store/_contract/``: ``registry`` (sessions), ``tree`` (messages, search, attachments),
    ``content`` (overlays, skills, blocks, prompt, entries, state), ``keys`` (HTTP API keys,
    by hash) and ``transfer`` (a whole session dumped and loaded verbatim), joined in
    ``rooms.StoreRooms``; this class adds the lifecycle and the session view.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> isinstance(store, Store)
    True
    """

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        """Release connections. Idempotent.

        >>> import threadline
        >>> with threadline.connect(":memory:") as store:
        ...     store.count_sessions("default")
        0
        >>> store.close()  # already closed by ``with``; closing again is fine
        """

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...

    def transaction(self, fn: Callable[[], T]) -> T:
        """Call ``fn()`` inside one transaction: the writes this thread makes on this store
        while it runs commit together when it returns, or not at all if it raises, and its
        reads see them; a block it reads (``get_block``) stays locked until it ends. A nested
        call joins the open one. ``fn`` may be called again after a rolled-back deadlock
        (PostgreSQL): keep it free of other side effects.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.transaction(lambda: store.update_state("default", "s1", None, {"k": 1}))
        >>> store.get_state("default", "s1", None)
        {'k': 1}
        """
        ...

    def session(self, app: str, session_id: str, *, user_id: str | None = None) -> SessionStore:
        """One session's view of the store: every method taking ``(app, session_id)`` with
        those bound (``user_id`` is the writer for appends and the reader for state).

        >>> import threadline
        >>> threadline.connect(":memory:").session("default", "s1").get_path()
        []
        """

    def now(self) -> datetime:
        """The store's current time (aware UTC): what it records in ``updated_at`` and what
        relative cutoffs (``purge(older_than=timedelta)``) count from.

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1")
        >>> store.get_session("default", "s1").updated_at <= store.now()
        True
        >>> store.now().tzinfo
        datetime.timezone.utc
        """
