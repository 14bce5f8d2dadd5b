"""Export → import is lossless on every backend: the same rows, the same reads.

A store is filled with everything a session can hold (a tree with several roots and
branches, overlays, tool calls, attachments, state undo records, blocks and state of every
scope, a prompt, usage, metadata), exported to JSON Lines, wiped, and imported back: every
table holds the same rows. Importing into another, empty store gives the same export again.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadline
from threadline.errors import InvalidArgumentError, SessionExistsError, SessionNotFoundError
from threadline.export import FORMAT, dump_jsonl, export_sessions, import_sessions, load_jsonl
from threadline.messages import assistant, tool_call, user

APP = "travel"
IMAGE = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 2000).decode()
ATTACHMENT_TABLES = ("tl_attachments", "tl_attachment_chunks", "tl_message_refs")


def fill(store: Any) -> None:
    """Everything a session can hold, in two apps."""
    manager = threadline.SessionManager(store, app_name=APP)
    manager.create("Lisbon", session_id="trip", user_id="ana", metadata={"channel": "web"})
    trip = manager.get_session("trip", user_id="ana")
    trip.append_message({**user("Where to stay?", id="u1"), "createdAt": "2026-01-02T03:04:05Z"})
    trip.append_message(assistant("Alfama.", id="a1"))
    regenerated = {**assistant("Príncipe Real.", id="a2"), "metadata": {"invocationId": "i1"}}
    trip.append_message(regenerated, "u1")
    trip.append_message(
        tool_call("set_context", {"label": "memory", "content": "x"}, "Written.", "call-1")
    )
    picture = {"type": "file", "mediaType": "image/png", "url": IMAGE}
    trip.append_message(
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "this picture"}, picture]}
    )
    trip.update_state({"step": 2, "user:home": "Porto", "app:season": "spring"})
    store.append_messages(APP, "trip", [user("second root", id="r2")], None, state_delta={"k": 1})
    store.append_messages(APP, "trip", [assistant("on r2", id="r2a")], state_delta={"k": 2})
    store.add_compaction(APP, "trip", "They talked about hotels.", "u1", "a2")
    store.set_block(APP, "session", "trip", "notes", "Prefers quiet areas.")
    store.set_block(APP, "user", "ana", "profile", "Lives in Porto.")
    store.set_block(APP, "app", "", "policy", "Be brief.")
    store.set_prompt(APP, "trip", "You are a travel assistant.")
    store.add_usage(APP, "trip", 1200, 350, 0.0042)
    store.set_head(APP, "trip", "a1")
    manager.fork("trip", "a2", name="fork of trip")
    store.append_messages(APP, "anon", [user("no owner", id="n1")])
    store.append_messages("other", "elsewhere", [user("other app", id="o1")])


def _rows(store: Any, tables: tuple[str, ...], skip: frozenset[str] = frozenset()) -> Any:
    def read(tx: Any) -> dict[str, list[str]]:
        out = {}
        for table in tables:
            rows = tx.all(f"SELECT * FROM {table}")
            out[table] = sorted(
                repr(tuple(str(v) for i, v in enumerate(row) if (table, i) not in skip))
                for row in rows
            )
        return out

    return store._read("rows", read)


def _wipe(store: Any) -> None:
    for app in (APP, "other"):
        for info in store.list_sessions(app, limit=100).sessions:
            store.delete_session(app, info.id)
    store.forget_user(APP, "ana")
    store.update_state(APP, "x", None, {"app:season": None})
    store.delete_session(APP, "x")

    def drop(tx: Any) -> None:
        tx.execute("DELETE FROM tl_blocks")

    store._write("wipe", drop)


def _export_text(store: Any, app: str = APP) -> str:
    buffer = io.StringIO()
    dump_jsonl(export_sessions(store, app), buffer)
    return buffer.getvalue()


# Blocks and the prompt are written with the import's time (their times are not part of the
# contract; their content is).
# Times, and the session's generation: an import creates the session anew (a new one).
_UNTIMED = frozenset({("tl_blocks", 5), ("tl_prompts", 3), ("tl_sessions", 17)})


def test_export_wipe_import_gives_the_same_rows(store: Any, dump_store: Any) -> None:
    fill(store)
    tables = ("tl_sessions", "tl_messages", "tl_compactions", "tl_skill_loads", "tl_prompts",
              "tl_blocks", "tl_state", *ATTACHMENT_TABLES)  # fmt: skip
    before = _rows(store, tables, _UNTIMED)
    texts = {app: _export_text(store, app) for app in (APP, "other")}
    assert texts[APP].count("\n") == 3  # trip, its fork and anon; not the other app
    _wipe(store)
    assert all(not rows for rows in _rows(store, tables).values())
    for text in texts.values():
        import_sessions(store, load_jsonl(io.StringIO(text)))
    assert _rows(store, tables, _UNTIMED) == before


def test_import_into_an_empty_store_reads_back_the_same(store: Any) -> None:
    source = threadline.connect(":memory:")
    fill(source)
    text = _export_text(source)
    assert import_sessions(store, load_jsonl(io.StringIO(text))) == [
        json.loads(line)["session"]["id"] for line in text.splitlines()
    ]
    assert _export_text(store) == text
    for session_id in ("trip",):
        for leaf in (None, "a2", "r2a", "u2"):
            assert store.get_path(APP, session_id, leaf) == source.get_path(APP, session_id, leaf)
        assert store.get_children(APP, session_id, "u1") == source.get_children(
            APP, session_id, "u1"
        )
    a = threadline.SessionManager(store, app_name=APP).get_session("trip", user_id="ana")
    b = threadline.SessionManager(source, app_name=APP).get_session("trip", user_id="ana")
    assert a.get_history() == b.get_history()
    assert a.get_compactions() == b.get_compactions()
    assert dict(a.state) == dict(b.state)
    assert store.get_session(APP, "trip") == source.get_session(APP, "trip")
    assert [h.id for h in store.search_messages(APP, "picture")] == ["u2"]
    ref = store.get_path(APP, "trip", "u2", attachments="ref")[-1]["parts"][1]["url"]
    assert store.read_attachment(APP, ref) == bytes(range(256)) * 2000
    assert store.get_skill_loads(APP, "trip") == source.get_skill_loads(APP, "trip")
    # rewind replays the imported undo records
    store.rewind(APP, "trip", "r2a")
    assert store.get_state(APP, "trip", None)["k"] == 1


def test_importing_an_existing_session_fails_unless_replace(store: Any) -> None:
    fill(store)
    records = list(export_sessions(store, APP, session_ids=["trip"]))
    store.append_messages(APP, "trip", [user("after the export", id="late")], "a1")
    with pytest.raises(SessionExistsError, match="trip"):
        import_sessions(store, records)
    assert store.get_message(APP, "trip", "late") is not None  # nothing was touched
    assert import_sessions(store, records, replace=True) == ["trip"]
    assert store.get_message(APP, "trip", "late") is None
    assert list(export_sessions(store, APP, session_ids=["trip"])) == records


def test_a_bad_record_imports_nothing(store: Any) -> None:
    fill(store)
    good = list(export_sessions(store, APP))
    bad = json.loads(json.dumps(next(r for r in good if r["session"]["id"] == "trip")))
    bad["messages"][1]["parent_id"] = "nowhere"
    _wipe(store)
    with pytest.raises(InvalidArgumentError, match="record 2"):
        import_sessions(store, [good[1], {"format": "nope"}])
    with pytest.raises(InvalidArgumentError, match="must come before"):
        import_sessions(store, [bad])
    for field, value in (("estimated_cost", float("inf")), ("input_tokens", 2**63)):
        huge = json.loads(json.dumps(good[0]))
        huge["usage"][field] = value
        with pytest.raises(InvalidArgumentError, match=field):
            import_sessions(store, [huge])
    with pytest.raises(InvalidArgumentError, match="appears twice"):
        import_sessions(store, [good[0], good[1], good[0]])
    assert store.count_sessions(APP) == 0
    with pytest.raises(SessionNotFoundError):
        list(export_sessions(store, APP, session_ids=["missing"]))


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize("where", ["metadata", "state", "user_state", "app_state"])
def test_a_record_nested_too_deeply_is_refused_not_a_recursion_error(
    store: Any, where: str
) -> None:
    """Metadata and state values deeper than the library's writes take were written as they
    came, and one deep enough failed with ``RecursionError`` while being encoded."""
    fill(store)
    record = json.loads(json.dumps(next(r for r in export_sessions(store, APP)
                                        if r["session"]["id"] == "trip")))  # fmt: skip
    _wipe(store)
    for depth in (150, 5000):
        bad = json.loads(json.dumps(record))
        if where == "metadata":
            bad["session"]["metadata"] = _nested(depth)
        elif where == "state":
            bad["state"]["deep"] = _nested(depth)
        elif where == "user_state":
            bad["user"]["state"]["user:deep"] = _nested(depth)
        else:
            bad["app_scope"]["state"]["app:deep"] = _nested(depth)
        with pytest.raises(InvalidArgumentError, match=r"record 1: .*nested deeper"):
            import_sessions(store, [bad])
        assert store.count_sessions(APP) == 0


def test_export_by_user_and_into_another_app(store: Any) -> None:
    fill(store)
    records = list(export_sessions(store, APP, user_id="ana"))
    assert {r["session"]["id"] for r in records} == {"trip", records[0]["session"]["id"]}
    assert all(r["format"] == FORMAT for r in records)
    assert import_sessions(store, records, app="copy") == [r["session"]["id"] for r in records]
    assert store.get_path(APP, "trip") == store.get_path("copy", "trip")
    assert store.get_state("copy", "trip", "ana")["user:home"] == "Porto"


# ------------------------------------------------------------------ property: any tree


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[int | None, str, str]]:
    """``(parent index or None, role, text)`` per message, parents before children."""
    count = draw(st.integers(1, 25))
    out: list[tuple[int | None, str, str]] = []
    for i in range(count):
        parent = draw(st.none() | st.integers(0, i - 1)) if i else None
        out.append((parent, draw(st.sampled_from(["user", "assistant"])), draw(st.text())))
    return out


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tree=trees(),
    state=st.dictionaries(
        # Keys are ids: no scope prefix, no lone surrogate (refused on write, not round-tripped).
        st.text(st.characters(blacklist_characters=":", blacklist_categories=("Cs",)), min_size=1),
        st.integers(-(2**63), 2**63 - 1),
    ),
    overlay=st.booleans(),
)
def test_any_tree_round_trips(
    tree: list[tuple[int | None, str, str]], state: dict[str, int], overlay: bool
) -> None:
    source, target = threadline.connect(":memory:"), threadline.connect(":memory:")
    ids = [f"m{i}" for i in range(len(tree))]
    for i, (parent, role, text) in enumerate(tree):
        message = {"id": ids[i], "role": role, "parts": [{"type": "text", "text": text}]}
        source.append_messages("a", "s", [message], None if parent is None else ids[parent])
    if state:
        source.update_state("a", "s", None, state)
    if overlay and tree[-1][0] is not None:
        source.add_compaction("a", "s", "summary", ids[tree[-1][0]], ids[-1])
    records = list(export_sessions(source, "a"))
    buffer = io.StringIO()
    dump_jsonl(records, buffer)
    import_sessions(target, load_jsonl(io.StringIO(buffer.getvalue())))
    assert list(export_sessions(target, "a")) == records
    for message_id in ids:
        assert target.get_path("a", "s", message_id) == source.get_path("a", "s", message_id)


def test_list_apps_counts_sessions_per_app(store: Any) -> None:
    assert store.list_apps() == {}
    fill(store)
    assert store.list_apps() == {"other": 1, APP: 3}
    store.delete_session("other", "elsewhere")
    assert store.list_apps() == {APP: 3}


# ------------------------------------------------------------ all or nothing (any record)

ALL_TABLES = ("tl_sessions", "tl_messages", "tl_compactions", "tl_skill_loads", "tl_prompts",
              "tl_blocks", "tl_state", *ATTACHMENT_TABLES)  # fmt: skip


def _ghost_parent(record: dict[str, Any]) -> dict[str, Any]:
    bad = json.loads(json.dumps(record))
    bad["messages"][-1]["parent_id"] = "ghost"
    return bad


def test_a_bad_second_record_writes_nothing(store: Any) -> None:
    fill(store)
    records = list(export_sessions(store, APP))
    assert len(records) == 3
    bad = [records[0], _ghost_parent(records[1]), records[2]]
    # replace=True: the sessions already there are left exactly as they are
    for session_id in ("trip", "anon"):
        store.append_messages(APP, session_id, [user("after the export", id="late")])
    before = _rows(store, ALL_TABLES)
    with pytest.raises(InvalidArgumentError, match=r"export record 2: .*'ghost' must come before"):
        import_sessions(store, bad, replace=True)
    assert _rows(store, ALL_TABLES) == before
    # into an empty store: not even the first session is written
    _wipe(store)
    empty = _rows(store, ALL_TABLES)
    with pytest.raises(InvalidArgumentError, match="export record 2"):
        import_sessions(store, bad)
    assert _rows(store, ALL_TABLES) == empty
    assert import_sessions(store, records) == [r["session"]["id"] for r in records]


def test_load_sessions_is_one_transaction(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(store)
    dumps = [(APP, store.dump_session(APP, info.id)) for info in store.list_sessions(APP).sessions]
    store.delete_session(APP, dumps[0][1].info.id)
    before = _rows(store, ALL_TABLES)
    # the first session is new, the second exists: refused, and the first is not written
    with pytest.raises(SessionExistsError):
        store.load_sessions(dumps[:2])
    assert _rows(store, ALL_TABLES) == before

    # a failure after every session's rows were sent rolls them all back
    def fail(*args: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "_load_shared", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        store.load_sessions(dumps, replace=True)
    monkeypatch.undo()
    assert _rows(store, ALL_TABLES) == before
    assert [i.id for i in store.load_sessions(dumps, replace=True)] == [d.info.id for _, d in dumps]
    with pytest.raises(InvalidArgumentError, match="appears twice"):
        store.load_sessions([dumps[0], dumps[0]], replace=True)


def _corruptions(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Ways to make one record inconsistent, each caught before anything is written."""
    out = []

    def corrupt(change: Any) -> None:
        bad = json.loads(json.dumps(record))
        change(bad)
        out.append(bad)

    corrupt(lambda r: r["messages"][-1].update(parent_id="ghost"))
    corrupt(lambda r: r.update(head="ghost"))
    corrupt(lambda r: r.update(last_seq=r["messages"][-1]["seq"] - 1))
    corrupt(lambda r: r["messages"].append(r["messages"][0]))
    corrupt(lambda r: r.update(format="x"))
    corrupt(lambda r: r["compactions"].append({**_OVERLAY, "from_message_id": "ghost"}))
    corrupt(lambda r: r["state"].update({"app:misplaced": 1}))
    corrupt(lambda r: r.pop("session"))
    if len(record["messages"]) > 1:
        corrupt(lambda r: r["messages"].reverse())
    return out


_OVERLAY = {"id": "c9", "summary": "s", "from_message_id": "m0", "to_message_id": "m0",
            "created_at": "2026-01-02T03:04:05.000000Z"}  # fmt: skip


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    which=st.integers(0, 3),
    how=st.integers(0, 8),
    replace=st.booleans(),
)
def test_corrupting_any_record_leaves_the_store_unchanged(
    store: Any, sizes: list[int], which: int, how: int, replace: bool
) -> None:
    source = threadline.connect(":memory:")
    for s, size in enumerate(sizes):
        for i in range(size):
            message = user(f"message {i}", id=f"m{i}")
            source.append_messages("a", f"s{s}", [message], state_delta={"k": i})
    records = list(export_sessions(source, "a"))
    index = which % len(records)
    kinds = _corruptions(records[index])
    records[index] = kinds[how % len(kinds)]
    if replace:  # the sessions to be replaced exist in the target and must stay as they are
        for s in range(len(sizes)):
            store.append_messages("a", f"s{s}", [user("target's own", id="t")], None)
    before = _rows(store, ALL_TABLES)
    with pytest.raises(InvalidArgumentError, match=f"export record {index + 1}: "):
        import_sessions(store, records, replace=replace)
    assert _rows(store, ALL_TABLES) == before
