"""``threadline import`` prints counts (not every id), keeps its JSON fields, and draws a
progress bar on a terminal only (on standard error)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import threadline
import threadline.cli._import as importing
from threadline.messages import assistant, user

from .conftest import Run


def _export(run: Run, tmp_path: Path, sessions: int = 30) -> Path:
    source = str(tmp_path / "source.db")
    with threadline.connect(source) as store:
        for i in range(sessions):
            store.create_session("travel", f"s{i:03d}", user_id="ana" if i % 3 else "ben")
            store.append_messages(
                "travel", f"s{i:03d}", [user(f"q{i}", id="u"), assistant(f"a{i}", id="a")]
            )
    backup = tmp_path / "backup.jsonl"
    assert run("export", source, "-o", str(backup)).code == 0
    return backup


def test_import_prints_counts_not_ids(run: Run, tmp_path: Path) -> None:
    backup = _export(run, tmp_path)
    target = str(tmp_path / "target.db")
    result = run("import", target, str(backup))
    assert result.code == 0, result.err
    assert result.out == "Imported 30 session(s), 60 message(s) into app 'travel'\n"
    assert result.err == ""  # not a terminal: no bar
    data = run("import", target, str(backup), "--replace", "--json").json()
    assert sorted(data["imported"]) == [f"s{i:03d}" for i in range(30)]  # the ids, as before
    assert data == {
        "imported": data["imported"],
        "apps": ["travel"],
        "sessions": 30,
        "messages": 60,
        "skipped_sessions": 0,
        "skipped_messages": 0,
        "app_records": ["travel"],  # the whole app's export starts with its app record
        "entries": 0,
        "keys": 0,
        "profiles": 0,
        "artifacts": 0,
    }


def test_import_counts_what_user_left_out(run: Run, tmp_path: Path) -> None:
    backup = _export(run, tmp_path)
    target = str(tmp_path / "target.db")
    result = run("import", target, str(backup), "--user", "ben", "--app", "copy")
    assert result.code == 0, result.err
    assert result.out == (
        "Imported 10 session(s), 20 message(s) into app 'copy'; "
        "skipped 20 session(s), 40 message(s) not ben's\n"
    )
    with threadline.connect(target) as store:
        assert store.list_apps() == {"copy": 10}


def test_a_progress_bar_on_a_terminal(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backup = _export(run, tmp_path)
    monkeypatch.setattr(importing, "progress_wanted", lambda: True)
    result = run("import", str(tmp_path / "target.db"), str(backup))
    assert result.code == 0, result.err
    assert result.out == "Imported 30 session(s), 60 message(s) into app 'travel'\n"
    # 31 records: the app record, then the 30 sessions'.
    for step in ("reading backup.jsonl", "checking 31 record(s)", "writing 30 session(s)"):
        assert step in result.err
    assert result.err.count("100%") >= 3  # every step ends complete
    # Standard input: the records read are counted as they come.
    monkeypatch.setattr(sys, "stdin", io.StringIO(backup.read_text()))
    piped = run("import", str(tmp_path / "other.db"), "-", "--json")
    assert piped.code == 0 and piped.json()["sessions"] == 30
    assert "reading standard input" in piped.err


def test_a_failed_import_with_the_bar_leaves_nothing(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "threadline.export/1"}\n')
    monkeypatch.setattr(importing, "progress_wanted", lambda: True)
    target = tmp_path / "new.db"
    result = run("import", str(target), str(bad))
    assert result.code == 1 and "export record 1" in result.err
    assert not target.exists()
