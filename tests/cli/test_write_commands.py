"""Commands that write (import, fork, checkout, delete, compact) on SQLite files and
PostgreSQL, and export → import through the command line giving identical sessions."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.messages import assistant, user

from .conftest import Run

APP = "travel"


def _fill(url: str) -> None:
    """Two users' sessions with a branch, an overlay, state, blocks, a prompt and usage."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "export_fill", Path(__file__).parents[1] / "conformance" / "test_export.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with threadline.connect(url) as store:
        module.fill(store)


def _export(run: Run, url: str, app: str = APP) -> list[str]:
    result = run("export", url, "--app", app)
    assert result.code == 0, result.err
    return result.out.splitlines()


def test_export_then_import_into_an_empty_store_is_identical(
    run: Run, file_store_url: str, tmp_path: Path
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    _fill(source)
    backup = tmp_path / "backup.jsonl"
    assert run("export", source, "--app", APP, "-o", str(backup)).code == 0
    imported = run("import", file_store_url, str(backup), "--json")
    assert imported.code == 0, imported.err
    assert len(imported.json()["imported"]) == 3
    assert _export(run, file_store_url) == backup.read_text().splitlines()
    for session_id in ("trip", "anon"):
        shown = [run("show", url, session_id, "--app", APP, "--json").json()
                 for url in (source, file_store_url)]  # fmt: skip
        assert shown[0] == shown[1]
    # Read back through the library too (not only through the export the import came from):
    # tree, overlays, blocks of every scope, state, usage and attachment bytes.
    with threadline.connect(source) as a, threadline.connect(file_store_url) as b:
        for leaf in (None, "a2", "r2a", "u2"):
            assert b.get_path(APP, "trip", leaf) == a.get_path(APP, "trip", leaf)
        assert b.get_children(APP, "trip", "u1") == a.get_children(APP, "trip", "u1")
        for store in (a, b):
            assert store.get_session(APP, "trip").input_tokens == 1200
        assert b.get_session(APP, "trip") == a.get_session(APP, "trip")  # usage, metadata
        assert b.get_compactions(APP, "trip") == a.get_compactions(APP, "trip")
        assert b.get_state(APP, "trip", "ana") == a.get_state(APP, "trip", "ana")
        for owner, owner_id, label in (("session", "trip", "notes"), ("user", "ana", "profile"),
                                       ("app", "", "policy")):  # fmt: skip
            assert b.get_block(APP, owner, owner_id, label) is not None
            assert b.get_block(APP, owner, owner_id, label) == a.get_block(
                APP, owner, owner_id, label
            )
        refs = [b.get_path(APP, "trip", "u2", attachments="ref")[-1]["parts"][1]["url"]]
        assert b.read_attachment(APP, refs[0]) == a.read_attachment(APP, refs[0])
        assert isinstance(b.read_attachment(APP, refs[0]), bytes)


def test_import_refuses_an_existing_session_unless_replace(
    run: Run, file_store_url: str, tmp_path: Path
) -> None:
    _fill(file_store_url)
    backup = tmp_path / "backup.jsonl"
    run("export", file_store_url, "--app", APP, "--session", "trip", "-o", str(backup))
    with threadline.connect(file_store_url) as store:
        store.append_messages(APP, "trip", [user("later", id="late")])
    refused = run("import", file_store_url, str(backup))
    assert refused.code == 1
    assert refused.err == (
        "threadline: session 'trip' already exists in app 'travel' "
        "(replace=True, or threadline import --replace, overwrites it)\n"
    )
    assert run("import", file_store_url, str(backup), "--replace").code == 0
    with threadline.connect(file_store_url) as store:
        assert store.get_message(APP, "trip", "late") is None


def test_import_with_a_bad_second_record_writes_nothing(
    run: Run, file_store_url: str, tmp_path: Path
) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    _fill(source)
    lines = _export(run, source)
    second = json.loads(lines[1])
    second["messages"][-1]["parent_id"] = "ghost"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(second), *lines[2:]]) + "\n")
    refused = run("import", file_store_url, str(bad))
    assert refused.code == 1
    assert refused.err.startswith("threadline: export record 2: message ")
    assert "'ghost' must come before it" in refused.err
    with threadline.connect(file_store_url) as store:
        assert store.count_sessions(APP) == 0  # not even record 1
    # --replace: the sessions already there stay as they are
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(lines) + "\n")
    assert run("import", file_store_url, str(good)).code == 0
    with threadline.connect(file_store_url) as store:
        store.append_messages(APP, "trip", [user("later", id="late")])
    before = _export(run, file_store_url)
    assert run("import", file_store_url, str(bad), "--replace").code == 1
    assert _export(run, file_store_url) == before


def test_a_failed_import_into_a_new_file_leaves_no_file(run: Run, tmp_path: Path) -> None:
    source = f"sqlite:///{tmp_path / 'source.db'}"
    _fill(source)
    record = json.loads(_export(run, source)[1])  # [0] is the app record
    record["messages"][-1]["parent_id"] = "ghost"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n")
    target = tmp_path / "new" / "fresh.db"
    target.parent.mkdir()
    refused = run("import", str(target), str(bad))
    assert refused.code == 1 and "'ghost' must come before it" in refused.err
    assert list(target.parent.iterdir()) == []
    existing = tmp_path / "new" / "kept.db"
    threadline.connect(str(existing)).close()  # a store that was there before stays
    assert run("import", str(existing), str(bad)).code == 1
    assert existing.exists()


def test_import_reads_stdin_and_retargets_the_app(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = str(tmp_path / "a.db")
    _fill(source)
    lines = _export(run, source)
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    target = str(tmp_path / "b.db")
    assert run("import", target, "-", "--app", "copy", "--user", "ana").code == 0
    listed = run("sessions", target, "--app", "copy", "--json").json()["sessions"]
    assert {s["user_id"] for s in listed} == {"ana"} and len(listed) == 2


def test_import_errors_are_one_line(run: Run, tmp_path: Path) -> None:
    target = str(tmp_path / "t.db")
    missing = run("import", target, str(tmp_path / "missing.jsonl"))
    assert missing.code == 1 and "missing.jsonl" in missing.err and missing.err.count("\n") == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "threadline.export/1"}\nnot json\n')
    result = run("import", target, str(bad))
    assert result.code == 1 and result.err.startswith("threadline: line 2: not JSON")
    bad.write_text('{"format": "something/else"}\n')
    result = run("import", target, str(bad))
    expected = "export record 1: format must be 'threadline.export/2' or 'threadline.export/1'"
    assert result.code == 1 and expected in result.err
    bad.write_text("[" * 100_000 + "\n")  # json.loads recursed until RecursionError
    fresh = tmp_path / "fresh.db"
    result = run("import", str(fresh), str(bad))
    assert result.code == 1 and result.err == "threadline: line 1: nested too deeply\n"
    assert not fresh.exists()  # refused while reading the file, before the store is opened


def _session(url: str, session_id: str) -> Any:
    store = threadline.connect(url)
    return store, threadline.Session(store, session_id=session_id, app_name=APP)


def test_fork_checkout_delete(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    forked = run("fork", file_store_url, "trip", "a2", "--app", APP, "--name", "Take two",
                 "--json").json()  # fmt: skip
    assert forked["name"] == "Take two" and forked["parent_session_id"] == "trip"
    assert forked["message_count"] == 1  # the overlay over u1..a2 is materialised
    moved = run("checkout", file_store_url, "trip", "r2a", "--app", APP, "--json").json()
    assert moved["head"] == "r2a" and moved["head_path"] == ["r2", "r2a"]
    store, trip = _session(file_store_url, "trip")
    with store:
        assert trip.get_latest_leaf()["id"] == "r2a"
    gone = run("delete", file_store_url, forked["id"], "--app", APP)
    assert gone.code == 0 and "Deleted session" in gone.out
    again = run("delete", file_store_url, forked["id"], "--app", APP)
    assert again.code == 1 and "not found in app 'travel'" in again.err
    wrong = run("checkout", file_store_url, "trip", "nope", "--app", APP)
    assert wrong.err == "threadline: message 'nope' not found in session 'trip'\n"
    assert run("fork", file_store_url, "trip", "nope", "--app", APP).code == 1
    # a user cannot act on another user's session
    assert run("delete", file_store_url, "trip", "--app", APP, "--user", "ben").code == 1
    assert run("checkout", file_store_url, "nope", "u1", "--app", "nope").code == 1


def test_compact_summarises_into_an_overlay(run: Run, file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        for i in range(30):
            store.append_messages(
                APP,
                "long",
                [user(f"Question {i} about trams and fado?"), assistant(f"Answer {i}: go early.")],
            )
    done = run("compact", file_store_url, "long", "--app", APP, "--keep-tokens", "50", "--json")
    assert done.code == 0, done.err
    result = done.json()
    assert result["compaction"]["summary"] and result["history_length"] < 60
    with threadline.connect(file_store_url) as store:
        assert len(store.get_compactions(APP, "long")) == 1
        assert store.get_session(APP, "long").message_count == 60  # nothing deleted
    small = run("compact", file_store_url, "long", "--app", APP, "--keep-tokens", "100000")
    assert small.code == 0 and "Nothing to compact" in small.out


def test_only_import_creates_a_store(run: Run, tmp_path: Path) -> None:
    missing = str(tmp_path / "new.db")
    for args in (["checkout", "s", "m"], ["fork", "s", "m"], ["delete", "s"], ["compact", "s"]):
        result = run(args[0], missing, *args[1:])
        assert result.code == 1 and "does not exist (nothing was created)" in result.err
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert run("import", missing, str(empty), "--json").json()["imported"] == []
    assert run("sessions", missing).err == (
        "threadline: app 'default' has no sessions; this store has no sessions yet\n"
    )
