"""rename, rewind, purge and forget-user through the command line, on SQLite files and
PostgreSQL, checked through the library afterwards."""

from __future__ import annotations

import io
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import threadline
from threadline.cli._admin import parse_before, parse_older_than
from threadline.cli._common import CliError
from threadline.messages import assistant, user

from .conftest import Run

APP = "travel"


def _fill(url: str) -> None:
    with threadline.connect(url) as store:
        store.create_session(APP, "trip", user_id="ana", name="Draft")
        store.append_messages(APP, "trip", [user("hi", id="u1"), assistant("hello", id="a1")])
        store.append_messages(APP, "trip", [user("book it", id="u2")], state_delta={"booked": True})
        store.append_messages(APP, "trip", [assistant("booked", id="a2")])
        store.create_session(APP, "old", user_id="ana")
        store.append_messages(APP, "old", [user("old one", id="o1")])
        store.create_session(APP, "bens", user_id="ben")
        store.append_messages(APP, "bens", [user("ben here", id="b1")])
        store.update_state(APP, "trip", "ana", {"user:lang": "pt"})  # ana's user: state


def test_rename_and_rewind(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    renamed = run("rename", file_store_url, "trip", "Lisbon in May", "--app", APP, "--json")
    assert renamed.code == 0, renamed.err
    assert renamed.json()["name"] == "Lisbon in May"
    rewound = run("rewind", file_store_url, "trip", "u2", "--app", APP, "--json")
    assert rewound.code == 0, rewound.err
    assert rewound.json() == {"session_id": "trip", "before": "u2", "head": "a1", "path_length": 2}
    with threadline.connect(file_store_url) as store:
        info = store.get_session(APP, "trip")
        assert info is not None and info.name == "Lisbon in May"
        assert store.get_path_ids(APP, "trip") == ["u1", "a1"]
        assert store.get_state(APP, "trip", "ana") == {"user:lang": "pt"}  # u2's undone
        assert store.get_message(APP, "trip", "a2") is not None  # nothing deleted
    text = run("rewind", file_store_url, "trip", "u1", "--app", APP)
    assert text.out == "Rewound trip to before u1: it is empty\n"


def test_rename_and_rewind_refuse_what_is_not_there(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    missing = run("rewind", file_store_url, "trip", "nope", "--app", APP)
    assert missing.code == 1
    assert missing.err == "threadline: message 'nope' not found in session 'trip'\n"
    other = run("rename", file_store_url, "trip", "x", "--app", APP, "--user", "ben")
    assert other.code == 1 and "session 'trip' not found for user 'ben'" in other.err
    with threadline.connect(file_store_url) as store:
        info = store.get_session(APP, "trip")
        assert info is not None and info.name == "Draft"


def test_purge_deletes_only_what_is_older(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    nothing = run("purge", file_store_url, "--older-than", "30d", "--app", APP, "--json")
    assert nothing.code == 0, nothing.err
    assert nothing.json()["purged"] == 0
    # Without --yes and without a terminal, nothing is deleted.
    refused = run("purge", file_store_url, "--before", "2999-01-01", "--app", APP)
    assert refused.code == 1
    assert refused.err == (
        "threadline: purge would delete 3 session(s) of app 'travel': pass --yes to confirm "
        "(not asked: no terminal)\n"
    )
    ana = run(
        "purge", file_store_url, "--before", "2999-01-01", "--user", "ana", "--app", APP,
        "--yes", "--json",
    )  # fmt: skip
    assert ana.code == 0, ana.err
    assert ana.json() == {
        "app": APP, "user": "ana", "before": "2999-01-01T00:00:00.000000Z", "purged": 2,
    }  # fmt: skip
    with threadline.connect(file_store_url) as store:
        assert [s.id for s in store.list_sessions(APP).sessions] == ["bens"]


def test_purge_needs_one_cutoff(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    both = run("purge", file_store_url, "--before", "2026-01-01", "--older-than", "1d")
    neither = run("purge", file_store_url, "--app", APP)
    assert both.code == neither.code == 2
    bad = run("purge", file_store_url, "--older-than", "soon", "--app", APP)
    assert bad.code == 1 and "expected a number and a unit" in bad.err


def test_forget_user(run: Run, file_store_url: str) -> None:
    _fill(file_store_url)
    refused = run("forget-user", file_store_url, "ana", "--app", APP)
    assert refused.code == 1 and "pass --yes to confirm" in refused.err
    done = run("forget-user", file_store_url, "ana", "--app", APP, "--yes", "--json")
    assert done.code == 0, done.err
    assert done.json() == {"app": APP, "user": "ana", "sessions": 2, "messages": 5}
    with threadline.connect(file_store_url) as store:
        assert [s.id for s in store.list_sessions(APP).sessions] == ["bens"]
        assert store.get_state(APP, "bens", "ana") == {}  # ana's user: state is gone too
        assert store.get_state(APP, "bens", "ben") == {}


def test_the_durations_and_dates_of_purge() -> None:
    assert parse_older_than("90d") == timedelta(days=90)
    assert parse_older_than(" 2w ") == timedelta(weeks=2)
    assert parse_before("2026-03-01T10:00:00Z") == datetime(2026, 3, 1, 10, tzinfo=UTC)
    for bad in ("", "3", "d", "1.5d", "-1d", "3y"):
        with pytest.raises(CliError):
            parse_older_than(bad)
    with pytest.raises(CliError):
        parse_before("yesterday")


class _Terminal(io.StringIO):
    """Standard input as a terminal that types ``answer``."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "deleted"), [("n\n", False), ("y\n", True), ("\n", False)])
def test_on_a_terminal_they_ask_first(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, deleted: bool
) -> None:
    url = str(tmp_path / "t.db")
    _fill(url)
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    result = run("forget-user", url, "ana")
    assert "Delete everything of user 'ana' in app 'travel': 2 session(s), 5 messages" in result.out
    if deleted:
        assert result.code == 0, result.err
    else:
        assert (result.code, result.err) == (1, "threadline: nothing was deleted (not confirmed)\n")
    with threadline.connect(url) as store:
        assert (store.get_session(APP, "trip") is None) == deleted
