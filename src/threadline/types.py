"""Plain value objects shared by every layer (frozen dataclasses with ``to_dict()``).

Timestamps on these objects are timezone-aware UTC datetimes; inside message dicts the
``createdAt`` field stays an ISO 8601 string.

>>> hit = SearchHit(id="m1", role="user", content="hi", created_at=None, session_id="s", score=1.0)
>>> hit.to_dict()["id"]
'm1'
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

Message = dict[str, Any]
"""A message in AI SDK ``UIMessage`` shape (``id``, ``role``, ``parts``, ``createdAt``...)."""

Scope = Literal["session", "user", "app"]


class _Auto(enum.Enum):
    AUTO = "AUTO"

    def __repr__(self) -> str:
        return "AUTO"


AUTO: Final = _Auto.AUTO
"""Default ``parent_id``: attach the new message as a child of the session head."""

AutoType = Literal[_Auto.AUTO]


def _to_dict(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            value = [_to_dict(v) for v in value]
        elif isinstance(value, list):
            value = [v.to_dict() if isinstance(v, SessionListing) else v for v in value]
            value = [_to_dict(v) if dataclasses.is_dataclass(v) else v for v in value]
        elif isinstance(value, dict):
            value = dict(value)
        out[f.name] = value
    return out


class _DictMixin:
    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (datetimes as ISO 8601 strings)."""
        return _to_dict(self)


@dataclass(frozen=True)
class SearchHit(_DictMixin):
    """One full-text search result; ``score`` is higher for more relevant hits.

    >>> import threadline
    >>> s = threadline.Session.create(":memory:")
    >>> _ = s.append_message({"role": "user", "content": "I like green tea"})
    >>> [(hit.role, hit.content) for hit in s.search("tea")]
    [('user', 'I like green tea')]
    """

    id: str
    role: str
    content: str
    created_at: datetime | None
    session_id: str
    score: float


@dataclass(frozen=True)
class RecentHistory(_DictMixin):
    """Result of ``get_recent_history``: the newest messages that fit a byte budget.

    >>> import threadline
    >>> threadline.Session.create(":memory:").get_recent_history(max_bytes=1000)
    RecentHistory(messages=[], truncated=False, total_content_bytes=0)
    """

    messages: list[Message]
    truncated: bool
    total_content_bytes: int


@dataclass(frozen=True)
class Compaction(_DictMixin):
    """A stored summary overlay replacing ``from_message_id``..``to_message_id`` at read time.

    >>> from datetime import datetime, timezone
    >>> c = Compaction("c1", "Tea talk", "m1", "m4", datetime(2024, 1, 1, tzinfo=timezone.utc))
    >>> c.to_dict()["created_at"]
    '2024-01-01T00:00:00+00:00'
    """

    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: datetime


@dataclass(frozen=True)
class CompactResult(_DictMixin):
    """What a compaction function returns: the range it summarised and the summary.

    >>> CompactResult(from_message_id="m1", to_message_id="m4", summary="## Topic").to_dict()
    {'from_message_id': 'm1', 'to_message_id': 'm4', 'summary': '## Topic'}
    """

    from_message_id: str
    to_message_id: str
    summary: str


@dataclass(frozen=True)
class CompactContext(_DictMixin):
    """Passed to compaction functions; ``token_counter`` is the session's counter or ``None``.

    ``summarize_all`` is ``True`` when the caller has already chosen the range (``compact_when``
    offers everything but the messages it keeps): the function should then summarise all of
    the messages it is given, as ``create_compact_function`` does, rather than plan a range.

    >>> from threadline.tokens import default_token_counter
    >>> ctx = CompactContext(token_counter=default_token_counter)
    >>> ctx.token_counter(messages=[], system_prompt="Hello world", blocks=[])
    3
    """

    token_counter: Callable[..., int] | None = None
    summarize_all: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict; the counter is kept as the callable itself.

        >>> CompactContext().to_dict()
        {'token_counter': None, 'summarize_all': False}
        """
        return {"token_counter": self.token_counter, "summarize_all": self.summarize_all}


@dataclass(frozen=True)
class ContextBlock(_DictMixin):
    """A memory block as currently loaded from its provider.

    >>> import threadline
    >>> s = threadline.Session.create(":memory:").with_context("memory", max_tokens=100)
    >>> block = s.replace_context_block("memory", "likes tea")
    >>> block.content, block.tokens, block.writable, block.scope
    ('likes tea', 3, True, 'session')
    """

    label: str
    description: str | None
    content: str
    tokens: int
    max_tokens: int | None
    writable: bool
    is_skill: bool
    is_searchable: bool
    scope: Scope = "session"


@dataclass(frozen=True)
class SessionInfo(_DictMixin):
    """One row of the session registry.

    >>> from threadline import SessionManager
    >>> info = SessionManager(":memory:").create("Trip", session_id="s1")
    >>> info.id, info.name, info.message_count
    ('s1', 'Trip', 0)
    """

    id: str
    app_name: str
    user_id: str | None
    name: str | None
    parent_session_id: str | None
    model: str | None
    source: str | None
    input_tokens: int
    output_tokens: int
    estimated_cost: float
    end_reason: str | None
    metadata: dict[str, Any]
    message_count: int
    created_at: datetime
    updated_at: datetime
    #: Which creation of this (app, id) the row is: distinct for every creation in a store
    #: and never reused, so a session deleted and created again has a new one (0: a store
    #: that keeps no generations). Local to the store (an import into another store makes
    #: another), so not compared: equal infos hold the same recorded fields.
    generation: int = field(default=0, compare=False)


@dataclass(frozen=True)
class SessionPage(_DictMixin):
    """A page of ``SessionManager.list``; ``next_cursor`` is ``None`` on the last page.

    >>> from threadline import SessionManager
    >>> manager = SessionManager(":memory:")
    >>> _ = manager.create(session_id="s1")
    >>> page = manager.list(limit=10)
    >>> [info.id for info in page.sessions], page.next_cursor
    (['s1'], None)
    """

    sessions: list[SessionInfo] = field(default_factory=list)
    next_cursor: str | None = None


class SessionListing:
    """One session as ``Store.list_sessions_with_state`` returns it: its id, owner and head,
    the head message's ``createdAt`` (as stored, ``None`` without messages), its
    session-scoped state (no ``app:``/``user:`` keys) and its registry row as ``info``.

    ``info`` is decoded from the row when first read, so a caller that needs only the id,
    owner, head and state (an adapter listing 10,000 sessions) does not pay for it.
    ``internal`` holds the session's internal keys (the reserved ``__threadline__:`` prefix:
    an adapter's bookkeeping, written with a ``Store`` write's ``state_delta``), for the
    adapter that wrote them; they are in no state, nor in :meth:`to_dict`.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.update_state("default", "s1", "u1", {"topic": "tea", "user:lang": "nb"})
    >>> (listing,) = store.list_sessions_with_state("default").sessions
    >>> listing.id, listing.user_id, listing.state, listing.info.user_id
    ('s1', 'u1', {'topic': 'tea'}, 'u1')
    """

    __slots__ = (
        "_info", "_row", "head_id", "id", "internal", "last_message_at", "state", "user_id"
    )  # fmt: skip

    def __init__(
        self,
        row: tuple[Any, ...],
        state: dict[str, Any],
        head_id: str | None,
        last_message_at: str | None,
        internal: dict[str, Any] | None = None,
    ) -> None:
        self._row = row
        self._info: SessionInfo | None = None
        self.id: str = row[0]
        self.user_id: str | None = row[2]
        self.state = state
        self.head_id = head_id
        self.last_message_at = last_message_at
        self.internal: dict[str, Any] = {} if internal is None else internal

    @property
    def info(self) -> SessionInfo:
        """The session's registry row (decoded on first access, then kept).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> _ = store.create_session("default", "s1", name="Trip")
        >>> store.list_sessions_with_state("default").sessions[0].info.name
        'Trip'
        """
        if self._info is None:
            from threadline.store._sql.rows import row_to_session_info

            self._info = row_to_session_info(self._row)
        return self._info

    def to_dict(self) -> dict[str, Any]:
        """The listing as a plain dict (``info`` as its own ``to_dict()``).

        >>> import threadline
        >>> store = threadline.connect(":memory:")
        >>> store.touch_session("default", "s1")
        >>> sorted(store.list_sessions_with_state("default").sessions[0].to_dict())
        ['head_id', 'info', 'last_message_at', 'state']
        """
        return {
            "info": self.info.to_dict(),
            "state": dict(self.state),
            "head_id": self.head_id,
            "last_message_at": self.last_message_at,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionListing):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable state dict: not hashable

    def __repr__(self) -> str:
        return (
            f"SessionListing(id={self.id!r}, user_id={self.user_id!r}, head_id={self.head_id!r}, "
            f"last_message_at={self.last_message_at!r}, state={self.state!r})"
        )


@dataclass(frozen=True)
class SessionListingPage(_DictMixin):
    """A page of ``Store.list_sessions_with_state``; ``next_cursor`` is ``None`` on the last.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.touch_session("default", "s1")
    >>> page = store.list_sessions_with_state("default", limit=10)
    >>> [entry.id for entry in page.sessions], page.next_cursor
    (['s1'], None)
    """

    sessions: list[SessionListing] = field(default_factory=list)
    next_cursor: str | None = None


SessionState = tuple[str, str | None, str | None, dict[str, Any], dict[str, Any]]
"""One session as ``Store.list_session_states`` returns it: ``(id, user_id, head_id, state,
internal)`` (state: the session-scoped keys; internal: the reserved ``__threadline__:`` keys)."""


@dataclass(frozen=True)
class SessionStatePage(_DictMixin):
    """A page of ``Store.list_session_states``: plain :data:`SessionState` tuples (no object
    per session: for callers that list thousands); ``next_cursor`` is ``None`` on the last.

    >>> import threadline
    >>> store = threadline.connect(":memory:")
    >>> store.update_state("default", "s1", "u1", {"topic": "tea"})
    >>> page = store.list_session_states("default", limit=10)
    >>> page.sessions, page.next_cursor
    ([('s1', 'u1', None, {'topic': 'tea'}, {})], None)
    """

    sessions: list[SessionState] = field(default_factory=list)
    next_cursor: str | None = None


class AppendResult(list[Message]):
    """What ``SessionManager.append_all`` returns: the stored messages (a list, as before)
    whose ``overflow`` holds the messages this append pushed out of the last ``max_messages``
    of the active path — those of the window before and those just appended that are no
    longer in it, oldest first (RadarOS ``appendMessages``; empty without ``max_messages`` or
    while under it). Nothing is deleted: they stay stored, searchable and forkable.

    >>> from threadline import SessionManager
    >>> manager = SessionManager(":memory:", max_messages=2)
    >>> result = manager.append_all("s1", [{"role": "user", "content": c} for c in "abc"])
    >>> len(result), [m["parts"][0]["text"] for m in result.overflow]
    (3, ['a'])
    >>> result = manager.append_all("s1", [{"role": "user", "content": "d"}])
    >>> [m["parts"][0]["text"] for m in result.overflow], len(manager.get_history("s1"))
    (['b'], 2)
    """

    overflow: list[Message]

    def __init__(self, messages: Iterable[Message] = (), overflow: Iterable[Message] = ()):
        super().__init__(messages)
        self.overflow = list(overflow)

    def __repr__(self) -> str:
        return f"AppendResult({list(self)!r}, overflow={self.overflow!r})"


__all__ = [
    "AUTO",
    "AppendResult",
    "AutoType",
    "CompactContext",
    "CompactResult",
    "Compaction",
    "ContextBlock",
    "Message",
    "RecentHistory",
    "Scope",
    "SearchHit",
    "SessionInfo",
    "SessionListing",
    "SessionListingPage",
    "SessionPage",
    "SessionState",
    "SessionStatePage",
]
