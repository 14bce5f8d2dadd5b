"""``ThreadlineSession`` beyond the SDK's own suite (which scripts/test runs on both backends):
lossless items of every kind, branches, search, non-destructive compaction, no storage call on
the event loop, and the SDK's Runner resuming a conversation in a fresh process."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

import threadline
from threadline import create_compact_function
from threadline.integrations.openai_agents import ThreadlineSession

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_chat.py"

ITEMS: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [
        {"type": "input_text", "text": "What is in this picture?"},
        {"type": "input_image", "detail": "auto",
         "image_url": "data:image/png;base64," + base64.b64encode(bytes(300_000)).decode()},
    ]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look."}],
     "encrypted_content": "gAAAA"},
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "zoom",
     "arguments": '{"factor": 2}', "status": "completed"},
    {"type": "function_call_output", "call_id": "c1", "output": "zoomed"},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "A cat.", "annotations": []}]},
]  # fmt: skip


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_items_of_every_kind_come_back_exactly(store: Any) -> None:
    session = ThreadlineSession("s", store)
    run(session.add_items(ITEMS[:3]))
    run(session.add_items(ITEMS[3:]))
    assert run(session.get_items()) == ITEMS
    assert run(session.get_items(limit=2)) == ITEMS[-2:]
    again = ThreadlineSession("s", store)  # a second object on the same store sees the same
    assert run(again.get_items()) == ITEMS


def test_repeated_reads_return_fresh_items_that_follow_the_store(store: Any) -> None:
    session = ThreadlineSession("s", store)
    asyncio.run(session.add_items([dict(i) for i in ITEMS[:1] + ITEMS[3:]]))
    first = asyncio.run(session.get_items())
    for item in first:  # the caller owns what it got: changing it changes nothing stored
        item["role"] = "changed"
        item.pop("call_id", None)
        for part in item.get("content", []) if isinstance(item.get("content"), list) else []:
            part["text"] = "changed"
    again = asyncio.run(session.get_items())
    assert again == ITEMS[:1] + ITEMS[3:]
    # A message changed in the store under the session is read as it is now.
    stored = session.threadline_session.get_history()[0]
    session.threadline_session.update_message(
        {**stored, "parts": [{"type": "text", "text": "Be kind."}]}
    )
    assert asyncio.run(session.get_items())[0] == {"role": "system", "content": "Be kind."}
    assert asyncio.run(session.get_items(limit=2)) == ITEMS[-2:]


def test_pop_item_moves_the_head_to_the_parent_not_to_another_branch(store: Any) -> None:
    session = ThreadlineSession("s", store)
    run(session.add_items([{"role": "user", "content": c} for c in "abc"]))
    run(session.branch_from(0))
    run(session.add_items([{"role": "user", "content": "x"}]))  # a, x (b, c kept on a branch)
    run(session.checkout(session.threadline_session.get_history()[0]["id"]))
    run(session.add_items([{"role": "user", "content": "y"}]))
    assert [i["content"] for i in run(session.get_items())] == ["a", "y"]
    assert run(session.pop_item()) == {"role": "user", "content": "y"}
    assert [i["content"] for i in run(session.get_items())] == ["a"]
    assert run(session.pop_item()) == {"role": "user", "content": "a"}
    assert run(session.pop_item()) is not None  # the other branches are still there to pop


def test_search_sees_every_branch(store: Any) -> None:
    session = ThreadlineSession("s", store)
    run(session.add_items([{"role": "user", "content": "deploy on friday"}]))
    run(session.branch_from(0))
    run(session.add_items([{"role": "user", "content": "rollback on monday"}]))
    run(session.checkout(session.threadline_session.get_history()[0]["id"]))
    assert [h.content for h in run(session.search("rollback"))] == ["rollback on monday"]


def test_compaction_replaces_items_in_get_items_and_keeps_the_originals(store: Any) -> None:
    fn = create_compact_function(
        lambda prompt: "Ten notes.", protect_head=0, tail_token_budget=0, min_tail_messages=2
    )
    session = ThreadlineSession("s", store, compaction=fn)
    run(session.add_items([{"role": "user", "content": f"note {i}"} for i in range(10)]))
    run(session.run_compaction({"force": True}))
    items = run(session.get_items())
    assert [i["content"] for i in items] == ["Ten notes.", "note 8", "note 9"]
    assert len(store.get_path("openai-agents", "s")) == 10
    assert [h.content for h in run(session.search("note 3"))][:1] == ["note 3"]


def test_no_storage_call_runs_on_the_event_loop(store_url: str) -> None:
    store = threadline.connect(store_url)
    seen: list[int] = []
    for name in ("append_messages", "get_path_encoded", "get_history_encoded", "get_path_tail",
                 "get_history_tail_encoded", "get_compactions", "delete_messages", "set_head",
                 "clear_messages", "search_messages"):  # fmt: skip
        method = getattr(store, name)

        def recording(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
            seen.append(threading.get_ident())
            return _method(*args, **kwargs)

        setattr(store, name, recording)

    async def turn() -> int:
        session = ThreadlineSession("s", store)
        await session.add_items([{"role": "user", "content": "hi"}] * 3)
        await session.get_items()
        await session.get_items(limit=1)
        await session.pop_item()
        await session.search("hi")
        await session.clear_session()
        return threading.get_ident()

    loop_thread = asyncio.run(turn())
    store.close()
    assert seen and loop_thread not in seen


def test_concurrent_add_items_lose_nothing(store: Any) -> None:
    async def many() -> list[Any]:
        session = ThreadlineSession("s", store)
        await asyncio.gather(
            *(session.add_items([{"role": "user", "content": f"m{i}"}]) for i in range(40))
        )
        return await session.get_items()

    items = run(many())
    assert sorted(i["content"] for i in items) == sorted(f"m{i}" for i in range(40))


def test_the_sdk_runner_resumes_a_conversation_in_a_fresh_process(tmp_path: Path) -> None:
    db = tmp_path / "agents.db"
    outputs = [
        subprocess.run(
            [sys.executable, str(EXAMPLE), str(db)],
            capture_output=True, text=True, check=True, timeout=120,
        ).stdout
        for _ in range(2)
    ]  # fmt: skip
    assert "I have seen 2 user turns" in outputs[0]
    assert "I have seen 4 user turns" in outputs[1]  # the second process saw the first's turns
    assert "16 items stored" in outputs[1]


def test_an_adapter_session_stays_bound_to_the_session_it_used(store: Any) -> None:
    """Amendment 11: once its session is deleted and created again (by anyone), the adapter
    object refuses to read or change the new one; a new adapter object sees the new one."""
    session = ThreadlineSession("s", store)
    run(session.add_items([{"role": "user", "content": "old"}]))
    app = session.threadline_session.app_name
    store.delete_session(app, "s")
    store.append_messages(app, "s", [{"id": "n1", "role": "user", "parts": []}])
    for call in (session.get_items, session.pop_item):
        with pytest.raises(threadline.SessionNotFoundError):
            run(call())
    with pytest.raises(threadline.SessionNotFoundError):
        run(session.add_items([{"role": "user", "content": "stale"}]))
    assert [m["id"] for m in store.get_path(app, "s")] == ["n1"]
    assert len(run(ThreadlineSession("s", store).get_items())) == 1
