"""The ``threadline`` command: demo, sessions, history and search on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import threadline
from threadline.cli import main


@pytest.fixture
def demo_db(tmp_path: Path) -> str:
    path = str(tmp_path / "demo.db")
    assert main(["demo", "--db", path]) == 0
    return path


def test_demo_runs_every_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--db", str(tmp_path / "d.db")]) == 0
    out = capsys.readouterr().out
    for step in (
        "1. A regenerated answer is a branch",
        "2. checkout",
        "3. search",
        "4. Memory blocks",
        "5. The model calls set_context",
        "6. Two users",
        "7. fork",
        "8. Sessions",
        "9. Cross-session search",
        "10. Automatic compaction",
    ):
        assert step in out
    assert "Written to memory." in out


def test_demo_leaves_a_real_store_behind(demo_db: str) -> None:
    with threadline.connect(demo_db) as store:
        manager = threadline.SessionManager(store, app_name="demo")
        trip = manager.get_session("trip")
        # The demo checked out the first answer, then stored the set_context tool call there.
        assert [m["id"] for m in trip.get_history()][:2] == ["u1", "a1"]
        assert trip.get_latest_leaf()["parts"][0]["toolName"] == "set_context"
        assert [m["id"] for m in trip.get_branches("u1")] == ["a1", "a2"]
        assert manager.get_state("trip")["user:home"] == "Porto"
        assert "temp:draft" not in manager.get_state("madrid")  # temp: never stored
        assert len(manager.list().sessions) == 4  # trip, its fork, madrid, long-chat


def test_sessions_history_and_search_commands(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["sessions", demo_db, "--app", "demo", "--user", "ana"]) == 0
    assert "Trip to Lisbon" in capsys.readouterr().out
    assert main(["history", demo_db, "trip", "--app", "demo"]) == 0
    out = capsys.readouterr().out
    assert "a2" in out and "← head" in out
    assert main(["search", demo_db, "walkable river", "--app", "demo"]) == 0
    assert "[user] Is it walkable to the river?" in capsys.readouterr().out


def _files(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(directory.iterdir())}


READ_COMMANDS = (
    ["sessions", "--app", "demo"],
    ["sessions", "--app", "demo", "--user", "ana"],
    ["history", "trip", "--app", "demo"],
    ["search", "walkable river", "--app", "demo"],
    ["search", "nothing-matches-this", "--app", "other"],
)


def test_read_commands_never_write(demo_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    # A file on the rollback journal: a read-only open needs no side file at all, so any
    # write (switching to WAL, a migration, an index catch-up) would show in the directory.
    conn = sqlite3.connect(demo_db)
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    conn.close()
    directory = Path(demo_db).parent
    before = _files(directory)
    assert list(before) == ["demo.db"]
    for command in READ_COMMANDS:
        name, *rest = command
        assert main([name, demo_db, *rest]) == 0, command
    assert "Trip to Lisbon" in capsys.readouterr().out
    assert _files(directory) == before  # same files, same bytes, same mtimes


def test_read_commands_leave_a_wal_file_unwritten(
    demo_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # On WAL SQLite may create the -wal/-shm files it reads through; the database is not written.
    before = _files(Path(demo_db).parent)["demo.db"]
    for command in READ_COMMANDS:
        name, *rest = command
        assert main([name, demo_db, *rest]) == 0, command
    after = _files(Path(demo_db).parent)
    assert after["demo.db"] == before
    assert after.get("demo.db-wal", (0, b""))[1] == b""  # nothing logged to commit later


def test_read_commands_do_not_create_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing.db")
    for name, *rest in READ_COMMANDS:
        assert main([name, missing, *rest]) == 1
        assert "threadline:" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_bad_store_url_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "mongodb://nope"]) == 1
    assert "unsupported store URL scheme" in capsys.readouterr().err
