"""Read commands (sessions, show, history, search, export) on the store the demo writes:
text and JSON output, the positional DB / --db / THREADLINE_DB forms, one-line errors with
exit code 1 for unknown paths, apps and sessions, and no file ever written or created."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import threadline
from threadline.session import Session

from .conftest import Run


def test_sessions_text_and_json(run: Run, demo_db: str) -> None:
    result = run("sessions", demo_db, "--app", "demo")
    assert result.code == 0
    assert "Trip to Lisbon" in result.out and "madrid" in result.out
    listed = run("sessions", demo_db, "--app", "demo", "--user", "ana", "--json").json()
    names = {s["name"] for s in listed["sessions"]}
    assert names == {"Trip to Lisbon", "Lisbon, Alfama plan", None}  # None: long-chat
    assert all(s["user_id"] == "ana" for s in listed["sessions"])
    assert listed["next_cursor"] is None


def test_sessions_pages_with_a_cursor(run: Run, demo_db: str) -> None:
    first = run("sessions", demo_db, "--app", "demo", "--limit", "3", "--json").json()
    rest = run(
        "sessions", demo_db, "--app", "demo", "--cursor", first["next_cursor"], "--json"
    ).json()
    ids = [s["id"] for s in first["sessions"] + rest["sessions"]]
    assert len(ids) == len(set(ids)) == 4


def test_sessions_of_another_app_names_the_apps_that_exist(run: Run, demo_db: str) -> None:
    # The demo writes to app "demo": asking for another app names the ones that exist.
    result = run("sessions", demo_db, "--app", "default")
    assert result.code == 1 and result.out == ""
    assert result.err.strip() == (
        "threadline: app 'default' has no sessions; apps in this store: demo (4 sessions); "
        "pick one with --app"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["sessions"],
        ["show", "trip"],
        ["history", "trip"],
        ["search", "walk"],
        ["export"],
    ],
)
def test_a_missing_store_is_an_error_and_is_not_created(
    run: Run, tmp_path: Path, args: list[str]
) -> None:
    missing = tmp_path / "nope.db"
    name, *rest = args
    result = run(name, str(missing), *rest, "--app", "demo")
    assert result.code == 1
    assert result.err.count("\n") == 1 and "does not exist (nothing was created)" in result.err
    assert list(tmp_path.iterdir()) == []
    # the same through sqlite:/// and --db
    assert run(name, *rest, "--db", f"sqlite:///{missing}").code == 1
    assert list(tmp_path.iterdir()) == []


def test_unknown_session_and_message_are_one_line_errors(run: Run, demo_db: str) -> None:
    for command in ("show", "history"):
        result = run(command, demo_db, "nope", "--app", "demo")
        assert result.code == 1
        assert result.err == (
            "threadline: session 'nope' not found in app 'demo' "
            "(`threadline sessions --app demo` lists them)\n"
        )
    # another user's session is not found either
    assert run("show", demo_db, "madrid", "--app", "demo", "--user", "ana").code == 1
    result = run("history", demo_db, "trip", "--app", "demo", "--leaf", "nope")
    assert result.code == 1 and "nope" in result.err and "Traceback" not in result.err


def test_the_readme_commands_show_what_the_quickstart_wrote(run: Run, tmp_path: Path) -> None:
    # README: the quickstart writes chat-42 to app "default"; the CLI section reads it back.
    db = tmp_path / "agent.db"
    session = Session.create(f"sqlite:///{db}").for_session("chat-42")
    session.append_message(threadline.messages.user("Where should I stay in Lisbon?", id="u1"))
    session.append_message(threadline.messages.assistant("Alfama: charming, hilly.", id="a1"))
    session.append_message(threadline.messages.assistant("Príncipe Real: quiet.", id="a2"), "u1")
    session.checkout("a1")
    session.store.close()
    tree = run("show", str(db), "chat-42")
    assert tree.code == 0 and "a2" in tree.out and "← head" in tree.out
    history = run("history", str(db), "chat-42")
    assert "Alfama" in history.out and "Príncipe" not in history.out
    assert "Lisbon" in run("search", str(db), "hotel Lisbon").out
    # with the wrong app the error says where the sessions are
    wrong = run("history", str(db), "chat-42", "--app", "travel")
    assert wrong.code == 1 and "apps in this store: default (1 session)" in wrong.err


def test_db_from_option_environment_or_first_argument(
    run: Run, demo_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_argument = run("history", demo_db, "trip", "--app", "demo", "--json").json()
    assert run("history", "trip", "--db", demo_db, "--app", "demo", "--json").json() == (
        by_argument
    )
    monkeypatch.setenv("THREADLINE_DB", demo_db)
    monkeypatch.setenv("THREADLINE_APP", "demo")
    assert run("history", "trip", "--json").json() == by_argument
    monkeypatch.delenv("THREADLINE_DB")
    result = run("history", "trip")
    assert result.code == 1 and "no store given" in result.err
    result = run("history", demo_db, "trip", "extra")
    assert result.code == 1 and "expected [DB] SESSION_ID" in result.err


def test_history_json_is_the_sessions_history(run: Run, demo_db: str) -> None:
    with threadline.connect(demo_db) as store:
        long_chat = Session(store, session_id="long-chat", app_name="demo")
        expected = long_chat.get_history()
        raw = store.get_path("demo", "long-chat")
    history = run("history", demo_db, "long-chat", "--app", "demo", "--json").json()
    assert history["messages"] == expected
    assert any(m["id"].startswith("compaction_") for m in history["messages"])
    assert (
        run("history", demo_db, "long-chat", "--app", "demo", "--raw", "--json").json()["messages"]
        == raw
    )
    text = run("history", demo_db, "long-chat", "--app", "demo").out
    assert "summary overlay" in text and "## Topic" in text


def test_show_json_lists_every_message_with_its_parent(run: Run, demo_db: str) -> None:
    shown = run("show", demo_db, "trip", "--app", "demo", "--json").json()
    by_id = {m["message"]["id"]: m for m in shown["messages"]}
    assert by_id["a2"]["parent_id"] == "u1" and by_id["a1"]["parent_id"] == "u1"
    assert shown["head_path"][:2] == ["u1", "a1"]
    assert by_id["a1"]["on_head_path"] and not by_id["a2"]["on_head_path"]
    assert shown["session"]["usage"]["input_tokens"] == 1200


def test_show_draws_tool_calls_and_overlays(run: Run, demo_db: str) -> None:
    trip = run("show", demo_db, "trip", "--app", "demo", "--width", "200").out
    assert "⚙ set_context(" in trip and "→ Written to memory." in trip
    assert "← head" in trip
    chat = run("show", demo_db, "long-chat", "--app", "demo", "--width", "200").out
    assert "(applied to the head's history)" in chat
    summarised = [line for line in chat.splitlines() if "[summarised]" in line]
    assert len(summarised) == 10  # the messages under the summary are still drawn...
    assert all(line.startswith("● ") for line in summarised)  # ...on the head's path


def test_show_draws_a_reasoning_part_without_text(run: Run, tmp_path: Path) -> None:
    # AI SDK v4 reasoning parts keep their text under "reasoning" (Amendment 13 stores them).
    db = tmp_path / "v4.db"
    session = Session.create(f"sqlite:///{db}").for_session("v4")
    reasoning = {"type": "reasoning", "reasoning": "weighing Alfama", "details": []}
    session.append_message({"id": "a1", "role": "assistant", "parts": [reasoning]})
    session.store.close()
    for command in ("show", "history"):
        shown = run(command, str(db), "v4", "--width", "200")
        assert shown.code == 0 and "💭 weighing Alfama" in shown.out


def test_search_text_and_json(run: Run, demo_db: str) -> None:
    result = run("search", demo_db, "walkable river", "--app", "demo")
    assert result.code == 0 and "Is it walkable to the river?" in result.out
    hits = run("search", demo_db, "Lisbon", "--app", "demo", "--user", "ben", "--json").json()
    assert hits["hits"] == []
    one = run("search", demo_db, "tapas", "--app", "demo", "--session", "madrid", "--json")
    assert [h["session_id"] for h in one.json()["hits"]] == ["madrid"]
    assert one.json()["hits"][0]["created_at"].endswith("Z")
    none = run("search", demo_db, "zzzz", "--app", "demo")
    assert none.code == 0 and "No messages match 'zzzz'" in none.out


def test_export_to_stdout_and_to_a_file(run: Run, demo_db: str, tmp_path: Path) -> None:
    lines = run("export", demo_db, "--app", "demo").out.splitlines()
    assert len(lines) == 5  # the app record first, then the four sessions
    records = [json.loads(line) for line in lines]
    assert {record["format"] for record in records} == {"threadline.export/2"}
    assert [record["type"] for record in records] == ["app"] + ["session"] * 4
    assert "keys" not in records[0]  # keys' hashes only with --with-keys
    out = tmp_path / "backup.jsonl"
    summary = run("export", demo_db, "--app", "demo", "--session", "trip", "-o", str(out), "--json")
    assert summary.json()["sessions"] == ["trip"] and summary.json()["exported"] == 1
    assert json.loads(out.read_text())["session"]["id"] == "trip"
    bad = run("export", demo_db, "--app", "demo", "-o", str(tmp_path / "no" / "dir.jsonl"))
    assert bad.code == 1 and bad.err.startswith("threadline: ") and bad.err.count("\n") == 1


def _files(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.iterdir())}


READ_COMMANDS = (
    ["sessions", "--app", "demo"],
    ["sessions", "--app", "demo", "--user", "ana", "--json"],
    ["show", "trip", "--app", "demo"],
    ["show", "long-chat", "--app", "demo", "--json"],
    ["history", "trip", "--app", "demo"],
    ["search", "walkable river", "--app", "demo"],
    ["export", "--app", "demo"],
    ["show", "trip", "--last", "2"],
    ["blocks", "trip", "--json"],
    ["blocks", "long-chat"],
    ["state", "trip"],
)


def test_read_commands_never_write(run: Run, demo_db: str) -> None:
    # On the rollback journal a read-only open needs no side file at all, so any write
    # (switching to WAL, a migration, an index catch-up) would show in the directory.
    conn = sqlite3.connect(demo_db)
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    conn.close()
    directory = Path(demo_db).parent
    before = _files(directory)
    assert list(before) == ["demo.db"]
    for name, *rest in READ_COMMANDS:
        assert run(name, demo_db, *rest).code == 0, name
    assert _files(directory) == before  # same files, same bytes, same mtimes


def test_read_commands_leave_a_wal_file_unwritten(run: Run, demo_db: str) -> None:
    # On WAL SQLite may create the -wal/-shm files it reads through; the database is not written.
    before = _files(Path(demo_db).parent)["demo.db"]
    for name, *rest in READ_COMMANDS:
        assert run(name, demo_db, *rest).code == 0, name
    after = _files(Path(demo_db).parent)
    assert after["demo.db"] == before
    assert after.get("demo.db-wal", (0, b""))[1] == b""  # nothing logged to commit later


def test_help_is_clean_text(run: Run) -> None:
    commands = ["sessions", "show", "history", "search", "export", "import", "fork",
                "checkout", "delete", "compact", "serve", "demo", "keys", "rename", "rewind",
                "purge", "forget-user", "blocks", "state"]  # fmt: skip
    top = run("--help")
    assert top.code == 0
    for command in commands:
        assert command in top.out
        text = run(command, "--help").out
        for raw in ("``", ":class:", ":meth:", ">>>", "{[", "list[str]"):
            assert raw not in text, (command, raw)
        assert "--json" in text or command in ("keys", "blocks", "state")
    assert "Usage: threadline show [OPTIONS] [DB] SESSION_ID" in run("show", "--help").out
    assert run().code == 2  # no command: the help, as a usage error


def test_an_empty_session_says_so(run: Run, tmp_path: Path) -> None:
    db = str(tmp_path / "empty.db")
    with threadline.connect(db) as store:
        store.create_session("default", "new", name="Nothing yet")
    for command in ("show", "history"):
        result = run(command, db, "new")
        assert result.code == 0 and "(no messages)" in result.out
    assert run("show", db, "new", "--json").json()["messages"] == []


def test_python_dash_m_threadline_is_the_command(tmp_path: Path) -> None:
    """``python -m threadline`` runs the CLI (it failed: no ``threadline.__main__``)."""
    import subprocess
    import sys

    missing = tmp_path / "nope.db"
    done = subprocess.run(
        [sys.executable, "-m", "threadline", "sessions", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "nope.db" in done.stderr and not missing.exists()
