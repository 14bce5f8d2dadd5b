"""A Python client for ``threadline serve``: the library's method names over HTTP.

``Client`` has the :class:`~threadline.SessionManager` methods (``create``, ``list``, ``get``,
``append``, ``get_history``, ``search``, ``fork``, ``rewind``, state...) for the app of its API
key, and ``client.get_session(sid)`` a :class:`RemoteSession` with the
:class:`~threadline.Session` methods, so code moves between in-process and remote use. Results
are the library's types (message dicts, ``SessionInfo``, ``SearchHit``... with datetimes
parsed) and errors its classes (``SessionNotFoundError``...); a refused key raises
:class:`AuthenticationError`. ``AsyncClient`` is the async twin: the same methods as
coroutines (one implementation of requests, decoding and errors; two httpx transports).

The examples run against a real app served in-process (``starlette``'s ``TestClient`` is an
``httpx.Client``); against a running ``threadline serve`` it is ``Client(url, key)``:

>>> import threadline
>>> from starlette.testclient import TestClient
>>> from threadline.server import create_app, create_key
>>> store = threadline.connect(":memory:")
>>> key = create_key(store, "travel")
>>> client = Client("http://testserver", key, http_client=TestClient(create_app(store)))
>>> _ = client.append("chat-1", {"role": "user", "content": "Hotels in Lisbon?"})
>>> [hit.content for hit in client.search("lisbon")]
['Hotels in Lisbon?']
>>> client.get_session("nope").get_history()
Traceback (most recent call last):
threadline.errors.SessionNotFoundError: session 'nope' not found
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import httpx

from threadline.aio import AsyncToolset
from threadline.client import _wire
from threadline.client._drive import Awaiting, Blocking, adrive, drive
from threadline.client._manager_calls import ManagerCalls
from threadline.client._plan import Plan, R
from threadline.client._session_calls import SessionCalls
from threadline.client._wire import AuthenticationError, Call, RemoteError
from threadline.errors import ThreadlineError
from threadline.internal import parse_position
from threadline.tools import SEARCH_RESULT_LIMIT, Tool, Toolset, make_session_search_tool
from threadline.types import SearchHit

__all__ = [
    "AsyncClient",
    "AsyncRemoteSession",
    "AuthenticationError",
    "Client",
    "RemoteError",
    "RemoteSession",
]

DEFAULT_TIMEOUT = 30.0

# Plan objects whose bound methods give each client method its name, docs and types.
_manager = ManagerCalls()
_session = SessionCalls("prototype")


_READ_AFTER = "x-threadline-read-after"


def _headers(key: str | None, app: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": "threadline-client", **(extra or {})}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    if app is not None:
        headers["x-threadline-app"] = app  # servers started with --no-auth
    return headers


class _Connected:
    """What both clients share: the server's URL, the headers, the plans they run."""

    _link: _Link
    _calls = ManagerCalls()  # stateless: one for every client

    @property
    def base_url(self) -> str:
        """The server's URL.

        >>> Client("http://localhost:8000", "key").base_url
        'http://localhost:8000'
        """
        return self._link.base_url


class _Link:
    """What both clients send with every call: the server's URL and the headers (key, app),
    and the highest ``X-Threadline-Read-After`` a response carried, echoed on every later
    call: the client reads its own writes whatever worker answers (api.md clarification 30)."""

    def __init__(self, base_url: str, headers: dict[str, str], *, owns: bool) -> None:
        self.base_url = base_url
        self.headers = headers
        self.owns = owns  # the httpx client was made here: close() closes it
        self.read_after: tuple[int, str] | None = None

    def request(self, call: Call[Any]) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client.request`` / ``AsyncClient.request``."""
        options = call.request_options()
        headers = {**self.headers, **options.pop("headers", {})}
        if self.read_after is not None:
            headers[_READ_AFTER] = self.read_after[1]
        url = self.base_url.rstrip("/") + call.path
        return {"method": call.method, "url": url, "headers": headers, **options}

    def saw(self, response: httpx.Response) -> None:
        """Remember the response's commit position if it is the highest seen."""
        given = response.headers.get(_READ_AFTER)
        if given is None:
            return
        try:
            position = parse_position(given)
        except ThreadlineError:
            return  # not a position: nothing to echo
        if self.read_after is None or position > self.read_after[0]:
            self.read_after = (position, given.strip())


def _remote_tools(definitions: list[dict[str, Any]], execute: Any) -> Toolset:
    """A Toolset of the server's tool definitions; each runs ``execute(name, args)``."""
    return Toolset(
        Tool(d["name"], d["description"], d["inputSchema"], functools.partial(execute, d["name"]))
        for d in definitions
    )


class RemoteSession:
    """One session over HTTP, with the :class:`~threadline.Session` method names
    (``client.get_session(sid)``); the session's row is created by its first write.

    >>> s = client.get_session("chat-1")
    >>> _ = s.append_message({"role": "user", "content": "hi"})
    >>> [m["role"] for m in s.get_history()]
    ['user']
    """

    def __init__(self, client: Client, session_id: str, user_id: str | None = None) -> None:
        self._client = client
        self._calls = SessionCalls(session_id, user_id)

    def _run(self, plan: Plan[R]) -> R:
        return self._client._run(plan)

    def __repr__(self) -> str:
        return f"RemoteSession({self._calls.session_id!r})"

    @property
    def session_id(self) -> str:
        """The session's id.

        >>> client.get_session("chat-1").session_id
        'chat-1'
        """
        return self._calls.session_id

    @property
    def user_id(self) -> str | None:
        """The user named in ``get_session(sid, user_id=...)``.

        >>> client.get_session("chat-1", user_id="ana").user_id
        'ana'
        """
        return self._calls.user_id

    append_message = Blocking(_session.append_message)
    append_messages = Blocking(_session.append_messages)
    update_message = Blocking(_session.update_message)
    delete_messages = Blocking(_session.delete_messages)
    clear_messages = Blocking(_session.clear_messages)
    get_message = Blocking(_session.get_message)
    get_latest_leaf = Blocking(_session.get_latest_leaf)
    checkout = Blocking(_session.checkout)
    get_path_length = Blocking(_session.get_path_length)
    get_branches = Blocking(_session.get_branches)
    get_history = Blocking(_session.get_history)
    read_attachment = Blocking(_session.read_attachment)
    search = Blocking(_session.search)
    get_compactions = Blocking(_session.get_compactions)
    compact = Blocking(_session.compact)
    get_context_block = Blocking(_session.get_context_block)
    get_context_blocks = Blocking(_session.get_context_blocks)
    replace_context_block = Blocking(_session.replace_context_block)
    append_context_block = Blocking(_session.append_context_block)
    freeze_system_prompt = Blocking(_session.freeze_system_prompt)
    refresh_system_prompt = Blocking(_session.refresh_system_prompt)
    get_state = Blocking(_session.get_state)
    update_state = Blocking(_session.update_state)

    @property
    def state(self) -> Mapping[str, Any]:
        """Read-only merged state (``app:``, ``user:`` and session keys), read now.

        >>> s = client.get_session("chat-1")
        >>> s.update_state({"topic": "tea"})
        >>> dict(s.state)
        {'topic': 'tea'}
        """
        return MappingProxyType(self._run(self._calls._state_dict()))

    def tools(self) -> Toolset:
        """The session's memory tools (defined and run by the server) as a ``Toolset``.

        >>> _ = client.create(session_id="chat-1")
        >>> tools = client.get_session("chat-1").tools()
        >>> list(tools), tools.execute("nope")[:6]
        ([], 'Error:')
        """
        definitions = self._run(self._calls._tool_definitions())
        return _remote_tools(
            definitions, lambda name, args: self._run(self._calls._execute_tool(name, args))
        )


class Client(_Connected):
    """Blocking client of a ``threadline serve`` app: the ``SessionManager`` methods over HTTP.

    ``key`` is an API key (``threadline keys create``); ``app`` names the app on a server
    started with ``--no-auth``. ``http_client`` uses a ready ``httpx.Client`` (not closed by
    this client); otherwise one is made with ``timeout`` and ``headers``.

    >>> client.create("Lisbon trip", session_id="trip").name
    'Lisbon trip'
    >>> with Client("http://127.0.0.1:9", "no-server") as offline:
    ...     offline.get("trip")
    Traceback (most recent call last):
    threadline.client._wire.RemoteError: GET /v1/sessions/trip failed: ...
    """

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        app: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._http = http_client if http_client is not None else httpx.Client(timeout=timeout)
        self._link = _Link(base_url, _headers(key, app, headers), owns=http_client is None)

    def _send(self, call: Call[Any]) -> Any:
        with _wire.transport_errors(call):
            response = self._http.request(**self._link.request(call))
        self._link.saw(response)
        return _wire.finish(call, response)

    def _run(self, plan: Plan[R]) -> R:
        return drive(plan, self._send)

    def close(self) -> None:
        """Close the HTTP connections (when this client made them).

        >>> with Client("http://localhost:8000", "key") as c:  # or close() explicitly
        ...     pass
        """
        if self._link.owns:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_session(self, session_id: str, *, user_id: str | None = None) -> RemoteSession:
        """A :class:`RemoteSession` for that id (no request; its first write creates it).

        >>> client.get_session("chat-1").append_message({"role": "user", "content": "hi"})["role"]
        'user'
        """
        return RemoteSession(self, session_id, user_id)

    def tools(self, *, user_id: str | None = None) -> Toolset:
        """``session_search`` across this app's sessions (only ``user_id``'s when given),
        searching through the server.

        >>> _ = client.append("s1", {"role": "user", "content": "Find me a hotel"})
        >>> client.tools().execute("session_search", {"query": "hotel"})
        '[user] Find me a hotel'
        """
        return _search_tools(lambda q: self.search(q, limit=SEARCH_RESULT_LIMIT, user_id=user_id))

    create = Blocking(_manager.create)
    get = Blocking(_manager.get)
    get_or_create = Blocking(_manager.get_or_create)
    list = Blocking(_manager.list)
    rename = Blocking(_manager.rename)
    delete = Blocking(_manager.delete)
    forget_user = Blocking(_manager.forget_user)
    append = Blocking(_manager.append)
    upsert = Blocking(_manager.upsert)
    append_all = Blocking(_manager.append_all)
    get_history = Blocking(_manager.get_history)
    get_message_count = Blocking(_manager.get_message_count)
    clear_messages = Blocking(_manager.clear_messages)
    delete_messages = Blocking(_manager.delete_messages)
    get_branches = Blocking(_manager.get_branches)
    get_compactions = Blocking(_manager.get_compactions)
    fork = Blocking(_manager.fork)
    add_usage = Blocking(_manager.add_usage)
    rewind = Blocking(_manager.rewind)
    search = Blocking(_manager.search)
    get_state = Blocking(_manager.get_state)
    update_state = Blocking(_manager.update_state)
    export_sessions = Blocking(_manager.export_sessions)
    import_sessions = Blocking(_manager.import_sessions)


class _RemoteAsyncToolset(AsyncToolset):
    """An ``AsyncToolset`` whose tools run on the server."""

    def __init__(self, session: AsyncRemoteSession, definitions: list[dict[str, Any]]) -> None:
        super().__init__(_remote_tools(definitions, _not_here))
        self._session = session

    async def execute(self, name: str, args: Any = None) -> str:
        """Run a tool on the server; every failure comes back as ``"Error: <message>"``.

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
        ...         await c.create(session_id="chat-1")
        ...         tools = await c.get_session("chat-1").tools()
        ...         return await tools.execute("nope")
        >>> asyncio.run(main())[:6]
        'Error:'
        """
        session = self._session
        return await session._run(session._calls._execute_tool(name, args))


class _AsyncSearchTools(AsyncToolset):
    """``session_search`` for ``AsyncClient.tools()``: the library's tool checks its
    arguments, the search runs through the server (awaited)."""

    def __init__(self, client: AsyncClient, user_id: str | None) -> None:
        super().__init__(_search_tools(lambda query: []))
        self._client = client
        self._user_id = user_id

    async def execute(self, name: str, args: Any = None) -> str:
        """Run ``session_search``; every failure comes back as ``"Error: <message>"``.

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
        ...         await c.append("s1", {"role": "user", "content": "Find me a hotel"})
        ...         tools = await c.tools()
        ...         return await tools.execute("session_search", {"query": "hotel"})
        >>> asyncio.run(main())
        '[user] Find me a hotel'
        """
        asked: list[str] = []

        def note(query: str) -> list[SearchHit]:
            asked.append(query)
            return []

        checked = _search_tools(note).execute(name, args)
        if not asked:
            return checked  # the library's own "Error: ..." for a bad call
        try:
            hits = await self._client.search(
                asked[0], limit=SEARCH_RESULT_LIMIT, user_id=self._user_id
            )
        except ThreadlineError as exc:
            return f"Error: {exc}"
        return _search_tools(lambda query: hits).execute(name, args)


def _search_tools(search: Callable[[str], Sequence[SearchHit]]) -> Toolset:
    return Toolset([make_session_search_tool(search)])


def _not_here(name: str, args: Any) -> str:
    raise RuntimeError("remote tools run through AsyncToolset.execute")


class AsyncRemoteSession:
    """One session over HTTP with the :class:`~threadline.aio.AsyncSession` methods
    (coroutines), from ``AsyncClient.get_session(sid)``.

    >>> import asyncio
    >>> async def main():
    ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
    ...         s = c.get_session("chat-1")
    ...         await s.append_message({"role": "user", "content": "hi"})
    ...         return [m["role"] for m in await s.get_history()]
    >>> asyncio.run(main())
    ['user']
    """

    def __init__(self, client: AsyncClient, session_id: str, user_id: str | None = None) -> None:
        self._client = client
        self._calls = SessionCalls(session_id, user_id)

    async def _run(self, plan: Plan[R]) -> R:
        return await self._client._run(plan)

    def __repr__(self) -> str:
        return f"AsyncRemoteSession({self._calls.session_id!r})"

    @property
    def session_id(self) -> str:
        """The session's id.

        >>> AsyncClient("http://localhost:8000", "key").get_session("chat-1").session_id
        'chat-1'
        """
        return self._calls.session_id

    @property
    def user_id(self) -> str | None:
        """The user named in ``get_session(sid, user_id=...)``.

        >>> AsyncClient("http://localhost:8000", "key").get_session("s", user_id="ana").user_id
        'ana'
        """
        return self._calls.user_id

    append_message = Awaiting(_session.append_message)
    append_messages = Awaiting(_session.append_messages)
    update_message = Awaiting(_session.update_message)
    delete_messages = Awaiting(_session.delete_messages)
    clear_messages = Awaiting(_session.clear_messages)
    get_message = Awaiting(_session.get_message)
    get_latest_leaf = Awaiting(_session.get_latest_leaf)
    checkout = Awaiting(_session.checkout)
    get_path_length = Awaiting(_session.get_path_length)
    get_branches = Awaiting(_session.get_branches)
    get_history = Awaiting(_session.get_history)
    read_attachment = Awaiting(_session.read_attachment)
    search = Awaiting(_session.search)
    get_compactions = Awaiting(_session.get_compactions)
    compact = Awaiting(_session.compact)
    get_context_block = Awaiting(_session.get_context_block)
    get_context_blocks = Awaiting(_session.get_context_blocks)
    replace_context_block = Awaiting(_session.replace_context_block)
    append_context_block = Awaiting(_session.append_context_block)
    freeze_system_prompt = Awaiting(_session.freeze_system_prompt)
    refresh_system_prompt = Awaiting(_session.refresh_system_prompt)
    get_state = Awaiting(_session.get_state)
    update_state = Awaiting(_session.update_state)

    async def state(self) -> dict[str, Any]:
        """The merged state (as ``AsyncSession.state()``).

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
        ...         await c.get_session("chat-1").update_state({"topic": "tea"})
        ...         return await c.get_session("chat-1").state()
        >>> asyncio.run(main())
        {'topic': 'tea'}
        """
        return await self._run(self._calls._state_dict())

    async def tools(self) -> AsyncToolset:
        """The session's memory tools, run on the server, with a coroutine ``execute``.

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
        ...         await c.create(session_id="chat-1")
        ...         return list(await c.get_session("chat-1").tools())
        >>> asyncio.run(main())
        []
        """
        return _RemoteAsyncToolset(self, await self._run(self._calls._tool_definitions()))


class AsyncClient(_Connected):
    """The async twin of :class:`Client`: the same methods, arguments, results and errors,
    as coroutines over ``httpx.AsyncClient``.

    >>> import asyncio
    >>> async def main():
    ...     async with AsyncClient("http://testserver", key, http_client=aio_http) as c:
    ...         await c.append("chat-1", {"role": "user", "content": "Hotels in Lisbon?"})
    ...         return [hit.content for hit in await c.search("lisbon")]
    >>> asyncio.run(main())
    ['Hotels in Lisbon?']
    """

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        app: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = http_client if http_client is not None else httpx.AsyncClient(timeout=timeout)
        self._link = _Link(base_url, _headers(key, app, headers), owns=http_client is None)

    async def _send(self, call: Call[Any]) -> Any:
        with _wire.transport_errors(call):
            response = await self._http.request(**self._link.request(call))
        self._link.saw(response)
        return _wire.finish(call, response)

    async def _run(self, plan: Plan[R]) -> R:
        return await adrive(plan, self._send)

    async def close(self) -> None:
        """Close the HTTP connections (when this client made them).

        >>> import asyncio
        >>> asyncio.run(AsyncClient("http://localhost:8000", "key").close())
        """
        if self._link.owns:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def tools(self, *, user_id: str | None = None) -> AsyncToolset:
        """``session_search`` across this app's sessions (only ``user_id``'s when given), with
        a coroutine ``execute`` searching through the server (as ``AsyncSessionManager``).

        >>> import asyncio
        >>> list(asyncio.run(AsyncClient("http://localhost:8000", "key").tools()))
        ['session_search']
        """
        return _AsyncSearchTools(self, user_id)

    def get_session(self, session_id: str, *, user_id: str | None = None) -> AsyncRemoteSession:
        """An :class:`AsyncRemoteSession` for that id (no request).

        >>> AsyncClient("http://localhost:8000", "key").get_session("chat-1")
        AsyncRemoteSession('chat-1')
        """
        return AsyncRemoteSession(self, session_id, user_id)

    create = Awaiting(_manager.create)
    get = Awaiting(_manager.get)
    get_or_create = Awaiting(_manager.get_or_create)
    list = Awaiting(_manager.list)
    rename = Awaiting(_manager.rename)
    delete = Awaiting(_manager.delete)
    forget_user = Awaiting(_manager.forget_user)
    append = Awaiting(_manager.append)
    upsert = Awaiting(_manager.upsert)
    append_all = Awaiting(_manager.append_all)
    get_history = Awaiting(_manager.get_history)
    get_message_count = Awaiting(_manager.get_message_count)
    clear_messages = Awaiting(_manager.clear_messages)
    delete_messages = Awaiting(_manager.delete_messages)
    get_branches = Awaiting(_manager.get_branches)
    get_compactions = Awaiting(_manager.get_compactions)
    fork = Awaiting(_manager.fork)
    add_usage = Awaiting(_manager.add_usage)
    rewind = Awaiting(_manager.rewind)
    search = Awaiting(_manager.search)
    get_state = Awaiting(_manager.get_state)
    update_state = Awaiting(_manager.update_state)
    export_sessions = Awaiting(_manager.export_sessions)
    import_sessions = Awaiting(_manager.import_sessions)
