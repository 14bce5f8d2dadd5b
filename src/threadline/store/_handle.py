"""One session's view of a store: ``store.session(app, session_id)``.

Every ``Store`` method that starts with ``(app, session_id)`` is available on the handle with
those two bound, so code that works on one session (``Session``, the async twin, adapters)
never repeats them. Binding is declared once per method (:class:`_Bound`), typed from the
store's own signature; the few methods whose session arguments sit elsewhere are written out.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> s1 = store.session("default", "s1")
>>> [m["id"] for m in s1.append_messages([{"id": "m1", "role": "user", "parts": []}])]
['m1']
>>> s1.get_head()["id"], s1.get_path_length()
('m1', 1)

Messages written through a handle are normalised and validated as ``Session.append_message``
does it (``threadline.messages.normalize_message``: ``content`` becomes a text part, a missing
``createdAt`` is set, a role outside ``system``/``user``/``assistant``/``tool`` is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from threadline.messages import normalize_message, normalize_messages
from threadline.store._contract.rooms import StoreRooms
from threadline.store._generation import OBSERVED, takes_generation
from threadline.types import AUTO, AutoType, Message, SearchHit, SessionInfo

__all__ = ["SessionStore"]

P = ParamSpec("P")
R = TypeVar("R")


class _Bound(Generic[P, R]):
    """``handle.<name>(...)`` calls ``store.<name>(app, session_id, ...)``.

    The bound callable is cached on the handle at first use (a non-data descriptor), so later
    calls cost one attribute lookup."""

    def __init__(self, method: Callable[Concatenate[Any, str, str, P], R]) -> None:
        self._name = method.__name__

    @overload
    def __get__(self, handle: None, owner: type) -> _Bound[P, R]: ...

    @overload
    def __get__(self, handle: SessionStore, owner: type) -> Callable[P, R]: ...

    def __get__(self, handle: SessionStore | None, owner: type) -> Any:
        if handle is None:
            return self
        method = getattr(handle.store, self._name)
        if takes_generation(method):
            bound = partial(handle._call, method, self._name in _WRITES)
        else:  # a store without generations: called as before, without the guarantee
            bound = partial(method, handle.app, handle.session_id)
        setattr(handle, self._name, bound)
        return bound


# The bound methods that may create the session (its first write binds the handle to it).
_WRITES = frozenset(
    {"delete_messages", "clear_messages", "set_head", "add_compaction", "set_prompt", "rewind"}
)


class SessionStore:
    """The store seen from one session (``app``, ``session_id`` and the writer's ``user_id``).

    The handle binds to the session's generation (``SessionInfo.generation``) at its first
    read or write that finds the session, or at the write that creates it: from then on
    every call passes ``generation=``, so once that session is deleted (and perhaps created
    again) the handle's calls raise ``SessionNotFoundError`` instead of acting on another
    session. A store whose methods do not take ``generation=`` is called without it.

    >>> import threadline
    >>> handle = threadline.connect(":memory:").session("default", "s1", user_id="u1")
    >>> handle.app, handle.session_id, handle.user_id, handle.generation
    ('default', 's1', 'u1', None)
    >>> _ = handle.append_messages([{"id": "a", "role": "user", "parts": []}])
    >>> handle.generation
    1
    """

    def __init__(
        self,
        store: StoreRooms,  # the contract's rooms: base.Store returns this class, so not it
        app: str,
        session_id: str,
        *,
        user_id: str | None = None,
        size_policy: str | None = None,
        max_message_bytes: int | None = None,
        generation: int | None = None,
    ) -> None:
        self.store = store
        self.app = app
        self.session_id = session_id
        self.user_id = user_id
        #: Override the store's size policy and cap for this session's writes (None: keep).
        self.size_policy = size_policy
        self.max_message_bytes = max_message_bytes
        #: The generation this handle acts on (``None`` until its first use finds one).
        self.generation = generation
        self._takes: dict[str, bool] = {}

    def _bind(self) -> bool:
        """Bind to the session's current generation if it exists; True if bound."""
        info = self.store.get_session(self.app, self.session_id)
        if info is not None and info.generation:
            self._bind_to(info.generation)
        return self.generation is not None

    def _bind_to(self, generation: int) -> None:
        """Bind to ``generation``; provisionally inside the store's ``transaction``: if it
        rolls back (the creation seen or made in it with it), the handle is unbound again."""
        previous, self.generation = self.generation, generation
        on_rollback = getattr(self.store, "_on_rollback", None)  # a third-party store: none
        if on_rollback is not None and previous != generation:
            on_rollback(partial(self._unbind, generation, previous))

    def _unbind(self, generation: int, previous: int | None) -> None:
        if self.generation == generation:  # not bound to another one since
            self.generation = previous

    def _call(self, method: Callable[..., R], write: bool, *args: Any, **kwargs: Any) -> R:
        """``method(app, session_id, ...)`` on this handle's generation (bound first)."""
        if self.generation is None and not self._bind():
            if not write:
                return method(self.app, self.session_id, *args, **kwargs)
            # The write may create the session: bind to the creation it wrote to, as the
            # store notes it in the write's transaction (else read back after it).
            noted: list[int] = []
            token = OBSERVED.set((self.app, self.session_id, noted))
            try:
                result = method(self.app, self.session_id, *args, **kwargs)
            finally:
                OBSERVED.reset(token)
            if noted:
                self._bind_to(noted[0])
            else:
                self._bind()
            return result
        return method(self.app, self.session_id, *args, generation=self.generation, **kwargs)

    def _run(self, name: str, write: bool, *args: Any, **kwargs: Any) -> Any:
        """The store's ``name`` through :meth:`_call` when it takes ``generation=``."""
        method = getattr(self.store, name)
        if self._takes_generation(name):
            return self._call(method, write, *args, **kwargs)
        return method(self.app, self.session_id, *args, **kwargs)

    def _takes_generation(self, name: str) -> bool:
        takes = self._takes.get(name)
        if takes is None:
            takes = self._takes[name] = takes_generation(getattr(self.store, name))
        return takes

    #: Set by ``Session``, which normalises every message itself before it gets here.
    _takes_normalised = False

    def __repr__(self) -> str:
        return f"SessionStore(app={self.app!r}, session_id={self.session_id!r})"

    delete_messages = _Bound(StoreRooms.delete_messages)
    clear_messages = _Bound(StoreRooms.clear_messages)
    get_message = _Bound(StoreRooms.get_message)
    get_head = _Bound(StoreRooms.get_head)
    set_head = _Bound(StoreRooms.set_head)
    get_path = _Bound(StoreRooms.get_path)
    get_path_encoded = _Bound(StoreRooms.get_path_encoded)
    get_history_encoded = _Bound(StoreRooms.get_history_encoded)
    get_path_tail = _Bound(StoreRooms.get_path_tail)
    get_history_tail_encoded = _Bound(StoreRooms.get_history_tail_encoded)
    get_path_ids = _Bound(StoreRooms.get_path_ids)
    get_recent_path = _Bound(StoreRooms.get_recent_path)
    get_path_length = _Bound(StoreRooms.get_path_length)
    get_children = _Bound(StoreRooms.get_children)
    add_compaction = _Bound(StoreRooms.add_compaction)
    get_compactions = _Bound(StoreRooms.get_compactions)
    get_skill_loads = _Bound(StoreRooms.get_skill_loads)
    get_prompt = _Bound(StoreRooms.get_prompt)
    set_prompt = _Bound(StoreRooms.set_prompt)
    rewind = _Bound(StoreRooms.rewind)

    def append_messages(
        self,
        messages: Sequence[Message],
        parent_id: str | AutoType | None = AUTO,
        state_delta: Mapping[str, Any] | None = None,
    ) -> list[Message]:
        """``Store.append_messages`` as this session's user, of the messages normalised as
        ``Session.append_messages`` does (``normalize_messages``).

        >>> import threadline
        >>> h = threadline.connect(":memory:").session("default", "s1")
        >>> [m["parts"] for m in h.append_messages([{"id": "a", "role": "user", "content": "hi"}])]
        [[{'type': 'text', 'text': 'hi'}]]
        """
        return self._run(  # type: ignore[no-any-return]
            "append_messages",
            True,
            messages if self._takes_normalised else normalize_messages(messages),
            parent_id,
            user_id=self.user_id,
            state_delta=state_delta,
            size_policy=self.size_policy,
            max_message_bytes=self.max_message_bytes,
        )

    def update_message(self, message: Message) -> Message:
        """``Store.update_message`` under this session's size policy, of the message
        normalised as ``Session.update_message`` does (``createdAt`` kept when not given).

        >>> import threadline
        >>> h = threadline.connect(":memory:").session("default", "s1")
        >>> _ = h.append_messages([{"id": "a", "role": "user", "parts": []}])
        >>> edited = {"id": "a", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        >>> h.update_message(edited)["parts"][0]["text"]
        'x'
        """
        if not self._takes_normalised:
            message = self._normalised(message)
        return self._run(  # type: ignore[no-any-return]
            "update_message",
            True,
            message,
            size_policy=self.size_policy,
            max_message_bytes=self.max_message_bytes,
        )

    def _normalised(self, message: Message) -> Message:
        created = message.get("createdAt") if isinstance(message, dict) else None
        if created is None and isinstance(message, dict) and isinstance(message.get("id"), str):
            current = self.store.get_message(self.app, self.session_id, message["id"])
            created = current.get("createdAt") if current is not None else None
        return normalize_message(message, now=created if isinstance(created, str) else None)

    def read_attachment(self, ref: object) -> bytes | str:
        """An attachment of this session's app (``Store.read_attachment``).

        >>> import threadline
        >>> h = threadline.connect(":memory:").session("default", "s1")
        >>> h.read_attachment("sha256:" + "0" * 64)
        Traceback (most recent call last):
        threadline.errors.AttachmentNotFoundError: app 'default' has no attachment ...
        """
        return self.store.read_attachment(self.app, ref)

    def search(self, query: str, limit: int = 20) -> list[SearchHit]:
        """Full-text search within this session.

        >>> import threadline
        >>> h = threadline.connect(":memory:").session("default", "s1")
        >>> h.search("anything")
        []
        """
        search = self.store.search_messages
        if self._takes_generation("search_messages") and (
            self.generation is not None or self._bind()
        ):
            return search(
                self.app, query, session_id=self.session_id, limit=limit, generation=self.generation
            )
        return search(self.app, query, session_id=self.session_id, limit=limit)

    def get_state(self) -> dict[str, Any]:
        """Stored state merged for this session and its user (``Store.get_state``).

        >>> import threadline
        >>> threadline.connect(":memory:").session("default", "s1").get_state()
        {}
        """
        return self._run("get_state", False, self.user_id)  # type: ignore[no-any-return]

    def update_state(self, delta: Mapping[str, Any]) -> None:
        """Apply a state delta as this session's user (``Store.update_state``).

        >>> import threadline
        >>> h = threadline.connect(":memory:").session("default", "s1")
        >>> h.update_state({"k": 1}); h.get_state()
        {'k': 1}
        """
        self._run("update_state", True, self.user_id, delta)

    def info(self) -> SessionInfo | None:
        """The session's registry row, or ``None`` before its first write (and once the
        generation this handle is bound to is gone).

        >>> import threadline
        >>> threadline.connect(":memory:").session("default", "s1").info() is None
        True
        """
        info = self.store.get_session(self.app, self.session_id)
        if info is None or self.generation is None or not info.generation:
            return info
        return info if info.generation == self.generation else None
