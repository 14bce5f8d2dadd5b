"""threadline as the session backend of the OpenAI Agents SDK (extra ``openai-agents``).

``ThreadlineSession`` implements the SDK's ``Session`` protocol, so it replaces
``SQLiteSession`` in one line::

    from agents import Agent, Runner
    from threadline.integrations.openai_agents import ThreadlineSession

    session = ThreadlineSession("user-42", "sqlite:///agents.db")   # was SQLiteSession(...)
    await Runner.run(agent, "Hello", session=session)

Items are stored as threadline messages (``threadline.formats``: one message per item, lossless),
so threadline's search, branches, overlays, CLI and server see the conversation. Beyond the
SDK's own sessions: :meth:`~ThreadlineSession.branch_from`, :meth:`~ThreadlineSession.checkout`,
:meth:`~ThreadlineSession.search` and non-destructive compaction through the SDK's
compaction-aware hook (:meth:`~ThreadlineSession.run_compaction`): the summary replaces the
items it covers in ``get_items()`` while the originals stay stored.

No storage call runs on the event loop: each runs in a worker thread.

>>> import asyncio
>>> session = ThreadlineSession("chat-1")
>>> asyncio.run(session.add_items([{"role": "user", "content": "Hi"}]))
>>> asyncio.run(session.get_items())
[{'role': 'user', 'content': 'Hi'}]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from threadline.errors import InvalidArgumentError
from threadline.formats import from_openai_responses, to_openai_responses
from threadline.internal import SessionStore, owning, store_handle
from threadline.messages import decode_message
from threadline.session import Session
from threadline.store.base import Store
from threadline.types import AUTO, AutoType, Message, SearchHit

__all__ = ["ThreadlineSession"]

T = TypeVar("T")
_MEMO_ENTRIES = 4096  # converted messages kept per ThreadlineSession
_MEMO_MAX_ROW = 64 * 1024  # larger stored messages (inline files...) are converted each time
_SCALARS = (str, int, float, bool, type(None))


def _is_scalar(value: object) -> bool:
    return type(value) in _SCALARS


def _coerce_settings(settings: Any) -> Any:
    """The SDK's ``SessionSettings`` (its defaults when ``None``, as ``SQLiteSession`` has)."""
    from agents.memory.session_settings import SessionSettings, coerce_session_settings

    return SessionSettings() if settings is None else coerce_session_settings(settings)


class ThreadlineSession:
    """An OpenAI Agents SDK ``Session`` kept in a threadline store.

    ``store`` is a store URL (opened here and closed by :meth:`close`) or a threadline Store.
    Sessions are keyed by ``(app_name, session_id)``; ``user_id`` makes the session that
    user's (threadline's ownership rules apply). ``session_settings`` is the SDK's
    ``SessionSettings`` (or a dict of it): its ``limit`` applies when ``get_items`` is called
    without one. ``compaction`` is a compaction function (``threadline.create_compact_function``)
    used by :meth:`run_compaction`.

    >>> import asyncio
    >>> session = ThreadlineSession("s", session_settings={"limit": 1})
    >>> asyncio.run(session.add_items([{"role": "user", "content": "a"},
    ...                                 {"role": "user", "content": "b"}]))
    >>> asyncio.run(session.get_items())
    [{'role': 'user', 'content': 'b'}]
    """

    def __init__(
        self,
        session_id: str,
        store: Store | str = ":memory:",
        *,
        app_name: str = "openai-agents",
        user_id: str | None = None,
        session_settings: Any = None,
        compaction: Callable[..., Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = _coerce_settings(session_settings)
        # A URL is opened at the first storage call, in a worker thread: not on the event loop.
        self._session = owning(
            lambda source: Session(
                source, session_id=session_id, user_id=user_id, app_name=app_name
            ),
            store,
        )
        if compaction is not None:
            self._session.on_compaction(compaction)
        self._compaction = compaction
        self._parent: str | AutoType | None = AUTO
        # message id -> (its stored JSON, its items: flat dicts to copy, or JSON text)
        self._items_memo: dict[str, tuple[str, str | tuple[dict[str, Any], ...]]] = {}

    # -- plumbing ----------------------------------------------------------------------------
    @staticmethod
    async def _off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a storage call in a worker thread (never on the event loop)."""
        return await asyncio.to_thread(fn, *args, **kwargs)

    def _handle(self) -> SessionStore:
        # The Session's own view of the store: bound to the session's generation like it.
        return store_handle(self._session, "ThreadlineSession")

    @property
    def threadline_session(self) -> Session:
        """The threadline :class:`~threadline.Session` behind this one (sync API).

        >>> ThreadlineSession("s").threadline_session.session_id
        's'
        """
        return self._session

    # -- the SDK's Session protocol -------------------------------------------------------------
    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation, oldest first: the newest ``limit`` items when a limit is given
        (or set in ``session_settings``), all of them otherwise. Summaries of compacted
        stretches take the place of the items they cover.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": c} for c in "abc"]))
        >>> [i["content"] for i in asyncio.run(s.get_items(limit=2))]
        ['b', 'c']
        """
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit <= 0:
            return []
        return await self._off_loop(self._read_items, limit)

    def _read_items(self, limit: int | None) -> list[Any]:
        handle = self._handle()
        # The rows and the overlays in one read transaction.
        rows: Sequence[Sequence[Any]]
        if limit is None:
            rows, overlays = handle.get_history_encoded()
        else:
            rows, overlays = handle.get_history_tail_encoded(limit)
        if overlays:
            # Summaries take the place of what they cover: threadline's overlay read.
            items = to_openai_responses(self._session.get_history(limit=limit))
        else:
            items = self._items_of_rows(rows)
        return items if limit is None else items[-limit:]

    def _items_of_rows(self, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """The items of stored ``(id, JSON, ...)`` rows, in order: :meth:`_items_of` with the
        common case (a kept flat item, e.g. a chat message) inline, as one loop."""
        memo = self._items_memo
        out: list[Any] = []
        append, extend = out.append, out.extend
        for row in rows:
            kept = memo.get(row[0])
            if kept is not None and kept[0] == row[1] and type(kept[1]) is tuple:
                if len(kept[1]) == 1:
                    append(dict(kept[1][0]))
                else:
                    extend([dict(item) for item in kept[1]])
            else:
                extend(self._items_of(row[0], row[1]))
        return out

    def _items_of(self, message_id: str, data: str) -> list[Any]:
        """The items of one stored message, fresh objects each call. The conversion's result
        is kept with the stored JSON it came from (a message changed in the store no longer
        matches and is converted again): a turn re-reads mostly items an earlier turn
        converted. Flat items (every value a string, number, bool or None) are kept as dicts
        and copied; others as JSON text and decoded."""
        memo = self._items_memo
        kept = memo.get(message_id)
        if kept is not None and kept[0] == data:
            if isinstance(kept[1], str):
                decoded: list[Any] = json.loads(kept[1])
                return decoded
            return [dict(item) for item in kept[1]]
        items = to_openai_responses([decode_message(data)])
        if len(data) <= _MEMO_MAX_ROW:
            if len(memo) >= _MEMO_ENTRIES:
                del memo[next(iter(memo))]  # the oldest entry
            flat = all(type(i) is dict and all(map(_is_scalar, i.values())) for i in items)
            memo[message_id] = (data, tuple(dict(i) for i in items) if flat else json.dumps(items))
        return items

    async def add_items(self, items: list[Any]) -> None:
        """Append items in one transaction (nothing is stored if one cannot be).

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"type": "function_call", "call_id": "c1",
        ...     "name": "weather", "arguments": "{}"}]))
        >>> asyncio.run(s.get_items())[0]["name"]
        'weather'
        """
        if not items:
            return
        messages = from_openai_responses(items)
        parent, self._parent = self._parent, AUTO
        try:
            await self._off_loop(self._session.append_messages, messages, parent)
        except BaseException:
            self._parent = parent  # a branch point stays set until an append succeeds
            raise

    async def pop_item(self) -> Any | None:
        """Remove the newest item of the active branch and return it (``None`` when empty);
        the head moves to its parent.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": "a"},
        ...                           {"role": "user", "content": "b"}]))
        >>> asyncio.run(s.pop_item()), len(asyncio.run(s.get_items()))
        ({'role': 'user', 'content': 'b'}, 1)
        """
        return await self._off_loop(self._pop)

    def _pop(self) -> Any | None:
        handle = self._handle()
        rows = handle.get_path_tail(2)
        if not rows:
            return None
        newest: Message = decode_message(rows[-1][1])
        handle.delete_messages([newest["id"]])
        if len(rows) == 2 and rows[-1][2] > 1:  # it had a parent: the head goes there
            handle.set_head(rows[0][0])
        return to_openai_responses([newest])[0]

    async def clear_session(self) -> None:
        """Delete every item (every branch, every summary) of this session.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": "a"}]))
        >>> asyncio.run(s.clear_session()); asyncio.run(s.get_items())
        []
        """
        await self._off_loop(self._session.clear_messages)
        self._parent = AUTO

    # -- beyond the SDK ---------------------------------------------------------------------------
    async def branch_from(self, item_index: int) -> None:
        """Make the next ``add_items`` start a new branch after the item at ``item_index`` of
        ``get_items()`` (negative indexes count from the end); the old branch stays stored.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": c} for c in "abc"]))
        >>> asyncio.run(s.branch_from(0))
        >>> asyncio.run(s.add_items([{"role": "user", "content": "x"}]))
        >>> [i["content"] for i in asyncio.run(s.get_items())]
        ['a', 'x']
        """
        history = await self._off_loop(self._session.get_history)
        try:
            self._parent = history[item_index]["id"]
        except IndexError:
            raise InvalidArgumentError(
                f"item_index {item_index} is outside the {len(history)} items"
            ) from None

    async def checkout(self, message_id: str) -> None:
        """Make the branch ending at that threadline message id the active one.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": c} for c in "ab"]))
        >>> first = s.threadline_session.get_history()[0]["id"]
        >>> asyncio.run(s.checkout(first)); len(asyncio.run(s.get_items()))
        1
        """
        await self._off_loop(self._session.checkout, message_id)
        self._parent = AUTO

    async def search(self, query: str, *, limit: int = 20) -> list[SearchHit]:
        """Full-text search over every item of this session, on every branch.

        >>> import asyncio
        >>> s = ThreadlineSession("s")
        >>> asyncio.run(s.add_items([{"role": "user", "content": "Deploy on Friday?"}]))
        >>> [h.content for h in asyncio.run(s.search("deploy"))]
        ['Deploy on Friday?']
        """
        return await self._off_loop(self._session.search, query, limit=limit)

    async def run_compaction(self, args: Mapping[str, Any] | None = None) -> None:
        """The SDK's compaction-aware hook: summarise older items with the ``compaction``
        function into a threadline overlay (nothing is deleted). A no-op without one; the
        function decides itself whether there is enough to summarise (``args`` is accepted
        for the SDK's signature; server-side response ids play no part here).

        >>> import asyncio
        >>> from threadline import create_compact_function
        >>> fn = create_compact_function(lambda prompt: "Six notes.", protect_head=0,
        ...                              tail_token_budget=0, min_tail_messages=1)
        >>> s = ThreadlineSession("s", compaction=fn)
        >>> asyncio.run(s.add_items([{"role": "user", "content": f"note {i}"} for i in range(6)]))
        >>> asyncio.run(s.run_compaction())
        >>> [i["content"] for i in asyncio.run(s.get_items())]
        ['Six notes.', 'note 5']
        >>> len(s.threadline_session.store.get_path("openai-agents", "s"))  # originals kept
        6
        """
        if self._compaction is None:
            return
        await self._off_loop(self._session.compact)

    def close(self) -> None:
        """Close the store if this session opened it from a URL.

        >>> ThreadlineSession("s").close()
        """
        self._session.close()
