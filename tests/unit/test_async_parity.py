"""Amendment 19: every public method of an async twin takes exactly the parameters of its sync
twin (names, kinds, defaults) with the same annotations, its result awaitable.

The allowed differences (clarification 26): ``run`` is ``arun`` (and ``context`` is
``acontext``); a sync twin's class named in
an annotation is its async twin (``Session`` -> ``AsyncSession``, ``Toolset`` ->
``AsyncToolset``...); builders and accessors listed in ``PLAIN`` stay plain (not awaitable).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from threadline import Runner, Session, SessionManager, Toolset
from threadline.aio import (
    AsyncRunner,
    AsyncSession,
    AsyncSessionManager,
    AsyncStateView,
    AsyncToolset,
)
from threadline.client import AsyncClient, AsyncRemoteSession, Client

# Sync class name -> async twin's, wherever an annotation names one.
TWIN_NAMES = {
    "Session": "AsyncSession",
    "SessionManager": "AsyncSessionManager",
    "Runner": "AsyncRunner",
    "Client": "AsyncClient",
    "RemoteSession": "AsyncRemoteSession",
    "Toolset": "AsyncToolset",
    "StateView": "AsyncStateView",
}
METHOD_NAMES = {"run": "arun", "context": "acontext"}

# Methods that stay plain in the async twin (builders, documented in threadline.aio / client).
BUILDERS = {
    "for_session",
    "for_user",
    "for_app",
    "with_context",
    "with_cached_prompt",
    "with_searchable_history",
    "on_compaction",
    "on_compaction_error",
    "compact_after",
    "compact_when",
    "on_overflow",
}
PLAIN: dict[type, set[str]] = {
    AsyncSession: BUILDERS | {"__init__", "create"},  # SessionManager.create stores a session
    AsyncSessionManager: BUILDERS | {"__init__", "from_profile"},  # a constructor: no I/O
    # ``session_for`` is the sync helper both runners share (AsyncRunner calls it in a worker
    # thread): the same method, so the same ``Session`` result.
    AsyncRunner: BUILDERS | {"__init__", "session_for"},
    AsyncClient: {"__init__", "get_session"},
    # Wrappers of their sync twin (built from it, not from its arguments): only ``execute``
    # and ``commit`` touch storage; the mapping, the exports and the reads stay plain.
    AsyncToolset: {"get", "items", "keys", "values"} | {n for n in dir(Toolset) if "to_" in n},
    AsyncStateView: {"get", "set", "has", "has_delta", "to_dict"},
    AsyncRemoteSession: {"__init__"},
}
WRAPPERS = (AsyncToolset, AsyncStateView)
SAME_RESULT: dict[type, set[str]] = {AsyncRunner: {"session_for", "context"}}


def _instances() -> Iterator[tuple[Any, Any]]:
    """A sync object and its async twin (methods made by descriptors need an instance)."""
    yield Session.create(":memory:"), AsyncSession.create(":memory:")
    yield SessionManager(":memory:"), AsyncSessionManager(":memory:")
    yield (
        Runner(SessionManager(":memory:"), lambda s, m, t: "ok"),
        AsyncRunner(AsyncSessionManager(":memory:"), lambda s, m, t: "ok"),
    )
    tools = Session.create(":memory:").with_context("memory").tools()
    yield tools, AsyncToolset(tools)
    view = Session.create(":memory:").state_view()
    yield view, AsyncStateView(view)
    client, aclient = Client("http://127.0.0.1:9"), AsyncClient("http://127.0.0.1:9")
    yield client, aclient
    yield client.get_session("s"), aclient.get_session("s")


PAIRS = list(_instances())
IDS = [type(sync).__name__ for sync, _ in PAIRS]


def _public_methods(obj: Any) -> list[str]:
    names = []
    for name in dir(type(obj)):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(inspect.getattr_static(type(obj), name), property):
            continue  # attributes, not methods
        if callable(getattr(obj, name)):
            names.append(name)
    return names


def _text(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _twin_text(annotation: Any) -> str:
    """The sync annotation with each sync twin's class name replaced by the async twin's."""
    text = _text(annotation)
    names = "|".join(sorted(TWIN_NAMES, key=len, reverse=True))
    return re.sub(rf"\b({names})\b", lambda m: TWIN_NAMES[m.group(1)], text)


def _signature(method: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(method)


def _compare(sync: Any, twin: Any, name: str) -> list[str]:
    """What differs between ``sync.name`` and its twin (empty: parity)."""
    sync_method = getattr(sync, name)
    twin_name = METHOD_NAMES.get(name, name)
    twin_method = getattr(twin, twin_name, None)
    if twin_method is None:
        return [f"{type(twin).__name__} has no {twin_name}"]
    if name == "__init__" and type(twin) in WRAPPERS:
        return []  # built from the sync object itself
    if name == "__init__":  # the classes' constructors (instances bind ``self``)
        sync_sig, twin_sig = _signature(type(sync)), _signature(type(twin))
    else:
        sync_sig, twin_sig = _signature(sync_method), _signature(twin_method)
    problems = []
    sync_params = list(sync_sig.parameters.values())
    twin_params = list(twin_sig.parameters.values())
    if [(p.name, p.kind, p.default) for p in sync_params] != [
        (p.name, p.kind, p.default) for p in twin_params
    ]:
        problems.append(f"parameters {sync_sig} != {twin_sig}")
    for sp, tp in zip(sync_params, twin_params, strict=False):
        wanted = _twin_text(sp.annotation)
        got = _text(tp.annotation)
        # An async twin may also take the sync twin (AsyncRunner(SessionManager(...))).
        if got not in {wanted, f"{wanted} | {_text(sp.annotation)}"}:
            problems.append(f"{sp.name}: {got!r} != {wanted!r}")
    plain = name in PLAIN.get(type(twin), set())
    if name == "__init__":
        return problems
    if plain == inspect.iscoroutinefunction(twin_method):
        problems.append("awaitable" if plain else "not awaitable (a coroutine function)")
    if name in SAME_RESULT.get(type(twin), set()):
        wanted_result = _text(sync_sig.return_annotation)
    else:
        wanted_result = _twin_text(sync_sig.return_annotation)
    if _text(twin_sig.return_annotation) != wanted_result:
        problems.append(f"result {twin_sig.return_annotation!r} != {wanted_result!r}")
    return problems


@pytest.mark.parametrize(("sync", "twin"), PAIRS, ids=IDS)
def test_every_public_method_of_the_async_twin_has_the_sync_signature(sync: Any, twin: Any) -> None:
    names = _public_methods(sync)
    assert len(names) >= 3  # the listing found the methods
    problems = {name: found for name in names if (found := _compare(sync, twin, name))}
    assert problems == {}


def test_the_parity_check_sees_a_difference() -> None:
    """The comparison is not vacuous: a missing parameter, a **options catch-all, a sync twin's
    result type and a plain method where a coroutine is due are each reported."""

    class Sync:
        def get(self, key: str, default: Any = None, *, user_id: str | None = None) -> Session:
            raise NotImplementedError

    class Loose:
        async def get(self, key: str, **options: Any) -> Session:
            raise NotImplementedError

    class Plain:
        def get(self, key: str, default: Any = None, *, user_id: str | None = None) -> Any:
            raise NotImplementedError

    assert len(_compare(Sync(), Loose(), "get")) == 2  # parameters + result name
    assert len(_compare(Sync(), Plain(), "get")) == 2  # not awaitable + result


def test_async_session_takes_the_parent_positionally() -> None:
    """The break the amendment names: ``append_message(m, "parent")`` works as in sync."""
    import asyncio

    async def main() -> list[str | None]:
        async with AsyncSession.create(":memory:").for_session("s") as session:
            root = await session.append_message({"role": "user", "content": "a"})
            await session.append_message({"role": "assistant", "content": "b"})
            side = await session.append_message({"role": "user", "content": "c"}, root["id"])
            return [m["id"] for m in await session.get_history(side["id"])]

    ids = asyncio.run(main())
    assert len(ids) == 2


# Every pair: SessionManager.get_history took **options and get_or_create **fields before
# they took create's and Session.get_history's parameters.
TYPED = PAIRS


@pytest.mark.parametrize(("sync", "twin"), TYPED, ids=[type(s).__name__ for s, _ in TYPED])
def test_no_async_twin_method_takes_a_catch_all(sync: Any, twin: Any) -> None:
    """Real typed signatures: no ``*args``/``**options`` on either side (``add_context`` took
    ``**options`` before it took ``with_context``'s options)."""
    loose = {
        name: str(_signature(getattr(obj, METHOD_NAMES.get(name, name) if obj is twin else name)))
        for name in _public_methods(sync)
        for obj in (sync, twin)
        if name != "__init__"
        and any(
            p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
            for p in _signature(
                getattr(obj, METHOD_NAMES.get(name, name) if obj is twin else name)
            ).parameters.values()
        )
    }
    assert loose == {}


def test_automatic_compaction_follows_one_rule_in_both_twins() -> None:
    """``compact_after`` then ``compact_when`` after an append: the async session (awaiting an
    async function) makes the same overlays as the sync one (``_automatic_compactions``)."""
    import asyncio

    from threadline import CompactResult
    from threadline.messages import text_of

    def summarize(history: list[Any], context: Any = None) -> CompactResult:
        return CompactResult(history[0]["id"], history[-1]["id"], f"{len(history)} earlier")

    async def asummarize(history: list[Any], context: Any = None) -> CompactResult:
        return summarize(history, context)

    words = [{"id": f"m{i}", "role": "user", "content": f"word {i}"} for i in range(9)]
    sync = Session.create(":memory:").on_compaction(summarize).compact_when(4, keep=2)
    sync = sync.compact_after(40)
    for message in words:
        sync.append_message(message)

    async def main() -> tuple[list[str], list[tuple[str, str, str]]]:
        s = AsyncSession.create(":memory:").on_compaction(asummarize).compact_when(4, keep=2)
        s = s.compact_after(40)
        for message in words:
            await s.append_message(message)
        overlays = [
            (c.summary, c.from_message_id, c.to_message_id) for c in await s.get_compactions()
        ]
        return [text_of(m) for m in await s.get_history()], overlays

    history, overlays = asyncio.run(main())
    assert overlays  # the rule fired
    assert overlays == [
        (c.summary, c.from_message_id, c.to_message_id) for c in sync.get_compactions()
    ]
    assert history == [text_of(m) for m in sync.get_history()]


def test_no_sync_class_imports_its_async_twin() -> None:
    """The async twins sit beside the sync classes, above them: nothing sync imports
    ``threadline.aio`` or an ``_async_*`` module (``aio`` is a façade over them)."""
    import ast
    import pathlib

    import threadline

    root = pathlib.Path(threadline.__file__).parent
    sync_modules = ["session.py", "manager.py", "runner.py", "_run_turn.py", "_run_edits.py"]
    sync_modules += [p.name for p in root.glob("_session_*.py")]
    found = []
    for name in sync_modules:
        for node in ast.walk(ast.parse((root / name).read_text())):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and (module == "threadline.aio" or module.startswith("threadline._async")):
                found.append((name, module))
    assert found == []
