"""The same scenario in-process (``SessionManager``) and remotely (``Client`` / ``AsyncClient``
against a real uvicorn process) gives equal results: history, branches, search hits, blocks,
state, usage, compactions — on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from served_app import APP, Served, configure

import threadline
from threadline import AsyncSessionManager, SessionManager
from threadline.client import AsyncClient, Client

pytestmark = pytest.mark.timeout(240)

# Server-stamped times differ between the two runs; everything else must be equal.
STAMPS = ("created_at", "updated_at")


def _message(mid: str, role: str, text: str, minute: int) -> dict[str, Any]:
    return {
        "id": mid,
        "role": role,
        "content": text,
        "createdAt": f"2026-01-01T10:{minute:02d}:00.000Z",
    }


def _plain(value: Any) -> Any:
    """Results as comparable data: dataclasses as dicts without server-stamped times."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: _plain(getattr(value, f.name)) for f in fields if f.name not in STAMPS}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        plain = {k: _plain(v) for k, v in value.items()}
        if str(plain.get("id", "")).startswith("compaction_"):  # generated overlay id
            plain["id"] = "compaction_*"
        return plain
    return value


def scenario(api: Any) -> dict[str, Any]:
    """Everyday use through the SessionManager method names (``api`` is a manager or a
    client); returns what each step gave."""
    out: dict[str, Any] = {}
    out["created"] = api.create(
        "Lisbon trip",
        session_id="trip",
        user_id="ana",
        state={"topic": "hotels"},
        metadata={"channel": "web"},
    )
    api.append_all(
        "trip",
        [
            _message("m1", "user", "Find me a hotel in Lisbon", 1),
            _message("m2", "assistant", "Alfama has charming hotels", 2),
            _message("m3", "user", "Something near the river?", 3),
        ],
    )
    api.append("trip", _message("m4", "assistant", "Try Cais do Sodre", 4))
    api.append("trip", _message("m3b", "assistant", "Or Belem, by the river", 5), parent_id="m3")
    out["branches"] = api.get_branches("trip", "m3")
    s = api.get_session("trip")
    out["head"] = s.get_latest_leaf()
    s.checkout("m4")
    out["history"] = api.get_history("trip")
    out["history_limit"] = api.get_history("trip", limit=2)
    out["history_leaf"] = s.get_history("m3b")
    out["message"] = s.get_message("m2")
    out["missing"] = s.get_message("nope")
    out["count"] = api.get_message_count("trip")
    out["search"] = api.search("hotel")
    out["session_search"] = s.search("river")
    out["app_tool"] = api.tools(user_id="ana").execute("session_search", {"query": "hotel"})
    out["app_tool_error"] = api.tools().execute("session_search", {"q": "hotel"})
    out["block"] = s.replace_context_block("memory", "Ana likes the river.")
    out["block_appended"] = s.append_context_block("memory", "Budget: 150 EUR.")
    out["blocks"] = s.get_context_blocks()
    out["prompt"] = s.refresh_system_prompt()
    tools = s.tools()
    out["tools"] = tools.to_openai()
    out["tool_run"] = tools.execute("set_context", {"label": "memory", "content": "Tea."})
    out["tool_error"] = tools.execute("set_context", {"label": "nope", "content": "x"})
    api.update_state("trip", {"user:lang": "pt", "topic": None})
    out["state"] = api.get_state("trip")
    out["state_key"] = s.get_state("user:lang")
    api.add_usage("trip", 1200, 300, 0.004)
    api.add_usage("trip", 10, 5)
    out["compacted"] = s.compact()
    out["compactions"] = api.get_compactions("trip")
    out["history_compacted"] = s.get_history()
    child = api.fork("trip", "m3", name="Take two")
    out["fork"] = child
    out["fork_history"] = api.get_history(child.id)
    api.rewind("trip", before_message_id="m4")
    out["rewound_state"] = api.get_state("trip")
    out["rewound_history"] = api.get_history("trip")
    out["renamed"] = api.rename("trip", "Lisbon, by the river")
    out["info"] = api.get("trip")
    out["other_user"] = api.get("trip", user_id="bob")
    out["page"] = api.list(user_id="ana", limit=1)
    out["next_page"] = api.list(user_id="ana", cursor=out["page"].next_cursor)
    api.delete(child.id)
    out["deleted"] = api.get(child.id)
    return out


def _compare(local: dict[str, Any], remote: dict[str, Any]) -> None:
    assert local.keys() == remote.keys()
    for step in local:
        left, right = _plain(local[step]), _plain(remote[step])
        if step in ("page", "next_page"):  # opaque cursors may differ
            left, right = left["sessions"], right["sessions"]
        if step in ("fork", "fork_history", "compactions", "next_page"):  # generated ids
            left, right = _without_ids(left), _without_ids(right)
        assert left == right, step


def _without_ids(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return {k: v for k, v in value.items() if k != "id"}


def _local_manager(served: Served, tmp_path: Any, request: pytest.FixtureRequest) -> Any:
    if served.store_url.startswith("sqlite"):
        url = f"sqlite:///{(tmp_path / 'local.db').as_posix()}"
    else:
        url = request.getfixturevalue("other_pg_dsn")
    return url


def test_the_same_scenario_gives_equal_results_in_process_and_over_http(
    served: Served, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    with SessionManager(_local_manager(served, tmp_path, request), APP) as manager:
        local = scenario(configure(manager))
    with Client(served.url, served.key) as client:
        remote = scenario(client)
    _compare(local, remote)
    assert remote["info"].input_tokens == 1210 and remote["info"].estimated_cost == 0.004
    assert remote["history"][-1]["id"] == "m4" and remote["search"]


async def async_scenario(api: Any) -> dict[str, Any]:
    """A shorter scenario through the async twins' names."""
    out: dict[str, Any] = {}
    out["created"] = await api.create("Chat", session_id="c1", user_id="ana")
    await api.append_all(
        "c1",
        [
            _message("m1", "user", "Deploy on Friday?", 1),
            _message("m2", "assistant", "Better on Monday", 2),
        ],
    )
    s = await _session(api, "c1")
    out["appended"] = await s.append_message(_message("m3", "user", "Why not Friday?", 3))
    out["history"] = await s.get_history()
    out["search"] = await api.search("friday")
    app_tools = await api.tools(user_id="ana")
    out["app_tool"] = await app_tools.execute("session_search", {"query": "friday"})
    out["app_tool_error"] = await app_tools.execute("session_search", {"query": 3})
    out["block"] = await s.replace_context_block("memory", "Deploys on Mondays.")
    out["blocks"] = await s.get_context_blocks()
    await api.update_state("c1", {"team": "infra"})
    out["state"] = await s.state()
    out["tool"] = await (await s.tools()).execute(
        "set_context", {"label": "memory", "content": "x"}
    )
    out["compacted"] = await s.compact()
    out["history_compacted"] = await api.get_history("c1")
    await api.add_usage("c1", 7, 3)
    out["info"] = await api.get("c1")
    return out


async def _session(api: Any, sid: str) -> Any:
    session = api.get_session(sid)
    return await session if asyncio.iscoroutine(session) else session


def test_the_async_client_gives_what_the_async_manager_gives(
    served: Served, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    async def local() -> dict[str, Any]:
        manager = AsyncSessionManager(_local_manager(served, tmp_path, request), APP)
        configure(manager.sync)
        async with manager:
            return await async_scenario(manager)

    async def remote() -> dict[str, Any]:
        async with AsyncClient(served.url, served.key) as client:
            return await async_scenario(client)

    _compare(asyncio.run(local()), asyncio.run(remote()))


@pytest.mark.xfail(reason="the server's POST .../messages takes no state_delta yet")
def test_a_state_delta_appended_with_a_message_is_undone_by_rewind(served: Served) -> None:
    with Client(served.url, served.key) as client:
        client.append("s1", _message("m1", "user", "hi", 1))
        client.append("s1", _message("m2", "user", "book it", 2), state_delta={"booked": True})
        assert client.get_state("s1") == {"booked": True}
        client.rewind("s1", before_message_id="m2")
        assert client.get_state("s1") == {}


def test_a_store_written_remotely_reads_the_same_in_process(served: Served) -> None:
    with Client(served.url, served.key) as client:
        client.append_all("s1", [_message("m1", "user", "hi", 1), _message("m2", "user", "yo", 2)])
        remote = client.get_history("s1")
    with threadline.connect(served.store_url) as store:
        assert SessionManager(store, APP).get_history("s1") == remote


def test_export_over_http_equals_the_library_export_and_imports_back(served: Served) -> None:
    from threadline.export import export_sessions

    with Client(served.url, served.key) as client:
        client.create("Trip", session_id="s1", user_id="ana", state={"topic": "tea"})
        client.append_all("s1", [_message("m1", "user", "hi", 1), _message("m2", "user", "yo", 2)])
        client.append("s1", _message("m3", "user", "other branch", 3), parent_id="m1")
        client.get_session("s1").replace_context_block("memory", "Likes tea.")
        client.create(session_id="s2", user_id="bob")
        records = client.export_sessions()
        with threadline.connect(served.store_url) as store:
            assert records == list(export_sessions(store, APP))
        assert [r["session"]["id"] for r in client.export_sessions(user_id="ana")] == ["s1"]
        before = client.get_history("s1", "m3"), client.get_state("s1")
        client.delete("s1")
        assert client.import_sessions([r for r in records if r["session"]["id"] == "s1"]) == ["s1"]
        assert (client.get_history("s1", "m3"), client.get_state("s1")) == before
        with pytest.raises(threadline.errors.SessionExistsError):
            client.import_sessions(records)
        assert sorted(client.import_sessions(records, replace=True)) == ["s1", "s2"]


@pytest.mark.xfail(
    reason="the server's history route ignores runs/branch; rewind takes no "
    "before_invocation_id yet"
)
def test_history_windows_of_the_turns_api_match(
    served: Served, tmp_path: Any, request: pytest.FixtureRequest
) -> None:
    def windows(api: Any) -> list[Any]:
        api.append_all(
            "s1",
            [
                {**_message("m1", "user", "hi", 1), "metadata": {"invocationId": "i1"}},
                {**_message("m2", "assistant", "hello", 2), "metadata": {"branch": "root.a"}},
                {**_message("m3", "user", "again", 3), "metadata": {"invocationId": "i2"}},
                {**_message("m4", "assistant", "sure", 4), "metadata": {"branch": "root.b"}},
            ],
        )
        out = [api.get_history("s1", runs=1), api.get_history("s1", branch="root.a")]
        api.rewind("s1", before_invocation_id="i2")
        return [*out, api.get_history("s1")]

    with SessionManager(_local_manager(served, tmp_path, request), APP) as manager:
        local = windows(manager)
    with Client(served.url, served.key) as client:
        assert windows(client) == local
