"""``threadline state`` and ``threadline blocks`` on SQLite files and PostgreSQL, checked
through the library."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import threadline
from threadline.cli._common import CliError
from threadline.cli._state import parse_assignments
from threadline.manager import SessionManager
from threadline.messages import user

from .conftest import Run

APP = "travel"


def _fill_state(url: str) -> None:
    with threadline.connect(url) as store:
        store.create_session(APP, "trip", user_id="ana")
        store.append_messages(APP, "trip", [user("hi", id="u1")])
        store.update_state(
            APP, "trip", "ana", {"step": 2, "user:home": "Porto", "app:season": "spring"}
        )
        store.create_session(APP, "anon")


def test_state_shows_every_scope(run: Run, file_store_url: str) -> None:
    _fill_state(file_store_url)
    shown = run("state", file_store_url, "trip", "--app", APP, "--json")
    assert shown.code == 0, shown.err
    assert shown.json() == {
        "app": APP,
        "session_id": "trip",
        "user_id": "ana",
        "state": {"app:season": "spring", "step": 2, "user:home": "Porto"},
        "scopes": {
            "session": {"step": 2},
            "user": {"user:home": "Porto"},
            "app": {"app:season": "spring"},
        },
    }
    # `state show` is the same command; the text names each key's scope.
    text = run("state", "show", file_store_url, "trip", "--app", APP)
    assert text.code == 0, text.err
    rows = [line.split() for line in text.out.splitlines()[3:]]
    assert rows == [
        ["session", "│", "step", "│", "2"],
        ["user", "│", "user:home", "│", '"Porto"'],
        ["app", "│", "app:season", "│", '"spring"'],
    ]


def test_state_set_writes_json_values_by_scope_and_deletes(run: Run, file_store_url: str) -> None:
    _fill_state(file_store_url)
    done = run(
        "state", "set", file_store_url, "trip", "step=3", "user:lang=pt", 'app:tags=["a"]',
        "note=", "budget={\"eur\": 900}", "--delete", "user:home", "--app", APP, "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    expected = {
        "step": 3, "note": "", "budget": {"eur": 900}, "user:lang": "pt",
        "app:season": "spring", "app:tags": ["a"],
    }  # fmt: skip
    assert done.json()["state"] == expected
    with threadline.connect(file_store_url) as store:
        assert store.get_state(APP, "trip", "ana") == expected
        assert store.get_state(APP, "anon", None) == {"app:season": "spring", "app:tags": ["a"]}
    removed = run("state", "set", file_store_url, "trip", "step=null", "--app", APP, "--json")
    assert "step" not in removed.json()["state"]


def test_state_set_refuses_what_cannot_be_stored(run: Run, file_store_url: str) -> None:
    _fill_state(file_store_url)
    cases = {
        ("trip", "temp:x=1"): "threadline: 'temp:x': temp: keys live in one process and are "
        "never stored\n",
        ("trip", "oops"): "threadline: expected KEY=VALUE, got 'oops'\n",
        ("trip",): "threadline: nothing to set: give KEY=VALUE or --delete KEY\n",
    }
    for args, err in cases.items():
        result = run("state", "set", file_store_url, *args, "--app", APP)
        assert (result.code, result.err) == (1, err)
    # A user: key on a session without an owner: the library's typed error, one line.
    anon = run("state", "set", file_store_url, "anon", "user:x=1", "--app", APP)
    assert anon.code == 1 and anon.err.startswith("threadline: ") and anon.err.count("\n") == 1
    with threadline.connect(file_store_url) as store:
        assert store.get_state(APP, "trip", "ana")["step"] == 2


def test_state_of_another_users_session_is_not_found(run: Run, file_store_url: str) -> None:
    _fill_state(file_store_url)
    for words in (["show", "trip"], ["set", "trip", "step=9"]):
        result = run("state", words[0], file_store_url, *words[1:], "--app", APP, "--user", "ben")
        assert result.code == 1 and "not found for user 'ben'" in result.err
    with threadline.connect(file_store_url) as store:
        assert store.get_state(APP, "trip", "ana")["step"] == 2


def test_parse_assignments() -> None:
    assert parse_assignments(["n=1.5", "ok=true", "s=\"quoted\"", "nan=NaN", "a=b=c"]) == {
        "n": 1.5, "ok": True, "s": "quoted", "nan": "NaN", "a": "b=c",
    }  # fmt: skip
    for bad in (["=1"], ["novalue"]):
        with pytest.raises(CliError):
            parse_assignments(bad)


# -- blocks ---------------------------------------------------------------------------------------
def _fill_blocks(url: str) -> None:
    _fill_state(url)
    with threadline.connect(url) as store:
        manager = (
            SessionManager(store, app_name=APP)
            .with_context("soul", provider="Be brief.")
            .with_context("memory", description="Facts", max_tokens=20)
            .with_context("profile", scope="user")
        )
        manager.save_profile()
        manager.get_session("trip").replace_context_block("profile", "Lives in Porto.")


def test_blocks_shows_every_block_of_the_session(run: Run, file_store_url: str) -> None:
    _fill_blocks(file_store_url)
    shown = run("blocks", file_store_url, "trip", "--app", APP, "--json")
    assert shown.code == 0, shown.err
    data = shown.json()
    assert (data["app"], data["session_id"], data["user_id"]) == (APP, "trip", "ana")
    assert data["profile_version"] == 1
    assert [(b["label"], b["kind"], b["scope"], b["writable"], b["max_tokens"], b["content"])
            for b in data["blocks"]] == [
        ("soul", "readonly", "session", False, None, "Be brief."),
        ("memory", "writable", "session", True, 20, ""),
        ("profile", "writable", "user", True, None, "Lives in Porto."),
    ]  # fmt: skip
    text = run("blocks", "show", file_store_url, "trip", "--app", APP)
    assert text.code == 0, text.err
    assert text.out.splitlines()[1:] == [
        "■ soul  readonly · session · 3 tokens",
        "  Be brief.",
        "■ memory  writable · session · 0/20 tokens",
        "  Facts",
        "  (empty)",
        "■ profile  writable · user · 4 tokens",
        "  Lives in Porto.",
    ]
    # A session without a user cannot load a user-scoped block: said, not a failure.
    anon = run("blocks", file_store_url, "anon", "--app", APP, "--json")
    assert anon.code == 0, anon.err
    assert anon.json()["blocks"][2]["unavailable"] == "the session has no user"


def test_blocks_replace_and_append(
    run: Run, file_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill_blocks(file_store_url)
    replaced = run("blocks", "replace", file_store_url, "trip", "memory", "Likes tea.",
                   "--app", APP, "--json")  # fmt: skip
    assert replaced.code == 0, replaced.err
    assert replaced.json()["block"]["content"] == "Likes tea."
    monkeypatch.setattr(sys, "stdin", io.StringIO("Walks a lot.\n"))
    appended = run("blocks", "append", file_store_url, "trip", "memory", "-", "--app", APP)
    assert appended.code == 0, appended.err
    assert appended.out.startswith("Appended to block 'memory' of session trip (")
    user_block = run("blocks", "append", file_store_url, "trip", "profile", "Vegetarian.",
                     "--app", APP)  # fmt: skip
    assert user_block.code == 0, user_block.err
    with threadline.connect(file_store_url) as store:
        assert store.get_block(APP, "session", "trip", "memory") == "Likes tea.\nWalks a lot."
        assert store.get_block(APP, "user", "ana", "profile") == "Lives in Porto.\nVegetarian."


def test_blocks_refuse_writes_as_the_library_does(run: Run, file_store_url: str) -> None:
    _fill_blocks(file_store_url)
    cases = [
        (["soul", "Be rude."], 'threadline: block "soul" is readonly\n'),
        (["nope", "x"], 'threadline: block "nope" not found\n'),
        (["memory", "word " * 100], 'exceeds max_tokens (20) of block "memory"'),
    ]
    for args, err in cases:
        for verb in ("replace", "append"):
            result = run("blocks", verb, file_store_url, "trip", *args, "--app", APP)
            assert result.code == 1 and result.out == "", result.err
            assert err in result.err and result.err.count("\n") == 1
    with threadline.connect(file_store_url) as store:
        assert store.get_block(APP, "session", "trip", "memory") is None
        assert store.get_block(APP, "session", "trip", "soul") is None


def test_blocks_without_a_profile(run: Run, file_store_url: str) -> None:
    _fill_state(file_store_url)
    with threadline.connect(file_store_url) as store:
        store.set_block(APP, "session", "trip", "notes", "Stored by some code.")
    shown = run("blocks", file_store_url, "trip", "--app", APP, "--json").json()
    assert shown["profile_version"] is None
    assert [(b["label"], b["kind"], b["content"]) for b in shown["blocks"]] == [
        ("notes", "stored", "Stored by some code.")
    ]
    refused = run("blocks", "replace", file_store_url, "trip", "notes", "x", "--app", APP)
    assert refused.code == 1 and "has no profile" in refused.err
    with threadline.connect(file_store_url) as store:
        assert store.get_block(APP, "session", "trip", "notes") == "Stored by some code."


@pytest.mark.parametrize(
    "args",
    [
        ["blocks", "trip"],
        ["blocks", "replace", "trip", "memory", "x"],
        ["state", "trip"],
        ["state", "set", "trip", "k=1"],
        ["rename", "trip", "x"],
        ["rewind", "trip", "u1"],
        ["purge", "--older-than", "1d", "--yes"],
        ["forget-user", "ana", "--yes"],
    ],
)
def test_a_missing_store_is_not_created(run: Run, tmp_path: Path, args: list[str]) -> None:
    missing = tmp_path / "nope.db"
    words = 2 if args[0] in ("blocks", "state") and args[1] in ("replace", "set") else 1
    result = run(*args[:words], str(missing), *args[words:])
    assert result.code == 1
    assert result.err == (
        f"threadline: no store at '{missing}': {missing} does not exist (nothing was created)\n"
    )
    assert list(tmp_path.iterdir()) == []
