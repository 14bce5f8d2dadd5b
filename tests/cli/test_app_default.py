"""``--app`` may be left out when the store holds exactly one app (every command, through the
shared option handling); an empty store keeps ``default``; several apps are a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import threadline
from threadline.messages import assistant, user

from .conftest import Run


def _two_apps(path: Path) -> str:
    url = str(path)
    with threadline.connect(url) as store:
        store.append_messages("travel", "trip", [user("hi", id="u1"), assistant("hello", id="a1")])
        store.append_messages("shop", "cart", [user("buy", id="u1")])
    return url


@pytest.mark.parametrize(
    ("command", "rest"),
    [
        (["sessions"], []),
        (["show"], ["trip"]),
        (["history"], ["trip"]),
        (["search"], ["walk"]),
        (["export"], []),
        (["state"], ["trip"]),
        (["blocks"], ["trip"]),
        (["profile", "show"], []),
    ],
)
def test_the_only_app_is_used_without_app(
    run: Run, demo_db: str, command: list[str], rest: list[str]
) -> None:
    result = run(*command, demo_db, *rest, "--json")
    assert result.code == 0, result.err
    if command == ["export"]:
        assert {json.loads(line)["app"] for line in result.out.splitlines()} == {"demo"}
    elif command == ["profile", "show"]:
        assert result.json()["version"] == 1  # the demo's profile, not app default's (none)
    else:
        assert "demo" in result.out


def test_the_only_app_is_written_to_without_app(run: Run, demo_db: str) -> None:
    renamed = run("rename", demo_db, "trip", "Lisbon in May", "--json")
    assert renamed.code == 0, renamed.err
    with threadline.connect(demo_db) as store:
        info = store.get_session("demo", "trip")
        assert info is not None and info.name == "Lisbon in May"


def test_several_apps_without_app_is_an_error_naming_them(run: Run, tmp_path: Path) -> None:
    url = _two_apps(tmp_path / "two.db")
    for args in (["sessions"], ["show", "trip"], ["rename", "trip", "x"], ["state", "trip"]):
        result = run(args[0], url, *args[1:])
        assert result.code == 1 and result.out == ""
        assert result.err == (
            "threadline: this store holds several apps: shop (1 session), travel (1 session); "
            "pick one with --app\n"
        )
    with threadline.connect(url) as store:  # the refused rename wrote nothing
        info = store.get_session("travel", "trip")
        assert info is not None and info.name is None
    assert run("show", url, "trip", "--app", "travel", "--json").code == 0


def test_the_environment_names_the_app_too(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _two_apps(tmp_path / "two.db")
    monkeypatch.setenv("THREADLINE_APP", "shop")
    listed = run("sessions", url, "--json")
    assert listed.code == 0, listed.err
    assert [s["id"] for s in listed.json()["sessions"]] == ["cart"]


def test_an_empty_store_keeps_the_default_app(run: Run, tmp_path: Path) -> None:
    url = str(tmp_path / "empty.db")
    threadline.connect(url).close()
    result = run("sessions", url)
    assert result.code == 1
    assert result.err == (
        "threadline: app 'default' has no sessions; this store has no sessions yet\n"
    )
