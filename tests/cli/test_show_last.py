"""``threadline show --last N``: the newest N messages of the head's path, read by the
store's tail read (never the whole tree or path), overlays marked; and the pager's decision."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.cli._pager import pager_styles, wants_pager
from threadline.messages import assistant, user

from .conftest import Run

APP = "travel"


def _chat(url: str, count: int) -> None:
    with threadline.connect(url) as store:
        store.create_session(APP, "long", user_id="ana")
        messages = [
            (user if i % 2 == 0 else assistant)(f"message number {i}", id=f"m{i}")
            for i in range(count)
        ]
        store.append_messages(APP, "long", messages)
        store.append_messages(APP, "long", [user("a side branch", id="side")], "m1")
        store.set_head(APP, "long", f"m{count - 1}")


def _refuse_whole_reads(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """--last must not read the whole session: these reads fail if it tries."""
    with threadline.connect(url) as store:
        cls = type(store)

    def whole(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("show --last read the whole session")

    for name in ("dump_session", "get_path", "get_tree", "get_path_ids"):
        monkeypatch.setattr(cls, name, whole)


def test_the_last_messages_of_the_head_path(
    run: Run, file_store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _chat(file_store_url, 2000)
    _refuse_whole_reads(monkeypatch, file_store_url)
    result = run("show", file_store_url, "long", "--last", "3")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("session long  app travel · user ana · 2001 messages")
    assert (
        lines[1]
        == "┄┄ 1997 earlier messages on the head's path (without --last: the whole tree) ┄┄"
    )
    assert lines[2:] == [
        "● m1997 assistant  message number 1997",
        "● m1998 user  message number 1998",
        "● m1999 assistant ← head  message number 1999",
    ]
    data = run("show", file_store_url, "long", "--last", "2", "--json").json()
    assert data["head"] == "m1999" and data["path_length"] == 2000
    assert data["head_path"] == ["m1998", "m1999"]
    assert [m["depth"] for m in data["messages"]] == [1999, 2000]
    assert data["messages"][0]["message"]["parts"][0]["text"] == "message number 1998"
    assert data["session"]["message_count"] == 2001


def test_last_beyond_the_path_shows_it_all(run: Run, file_store_url: str) -> None:
    _chat(file_store_url, 4)
    result = run("show", file_store_url, "long", "--last", "50", "--app", APP)
    assert result.code == 0, result.err
    assert re.findall(r"^● (m\d)", result.out, re.M) == ["m0", "m1", "m2", "m3"]
    assert "earlier" not in result.out and "side" not in result.out


def test_overlays_in_the_tail_are_marked(run: Run, file_store_url: str) -> None:
    _chat(file_store_url, 40)
    with threadline.connect(file_store_url) as store:
        # An older overlay over m30..m35, then a newer, larger one over m20..m36 covering it.
        store.add_compaction(APP, "long", "Older summary.", "m30", "m35")
        store.add_compaction(APP, "long", "Newer summary.", "m20", "m36")
    result = run("show", file_store_url, "long", "--last", "12", "--width", "200")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    newer = next(i for i, line in enumerate(lines) if "Newer summary." in line)
    older = next(i for i, line in enumerate(lines) if "Older summary." in line)
    # The newer one starts before the shown messages: drawn before the first one shown.
    assert lines[newer].startswith("≡ summary of 17 messages (applied to the head's history; ")
    assert "it starts before the messages shown" in lines[newer]
    assert lines[newer + 1].startswith("● m28 ")
    assert "not applied: a newer summary covers it" in lines[older]
    assert lines[older + 1].startswith("● m30 ")
    summarised = re.findall(r"^● (m\d+) \w+ \[summarised\]", result.out, re.M)
    assert summarised == [f"m{i}" for i in range(28, 37)]


def test_the_pager_decision() -> None:
    person = {"enabled": True, "is_terminal": True, "as_json": False, "height": 40}
    assert wants_pager(**person, lines=40)
    assert not wants_pager(**person, lines=39)  # fits, with the prompt's line
    assert not wants_pager(**{**person, "enabled": False}, lines=1000)  # --no-pager
    assert not wants_pager(**{**person, "is_terminal": False}, lines=1000)  # a pipe, a file
    assert not wants_pager(**{**person, "as_json": True}, lines=1000)
    assert pager_styles({"LESS": "R"}) and not pager_styles({"LESS": "-F", "PAGER": "more"})


def test_piped_output_is_never_paged(run: Run, tmp_path: Path) -> None:
    url = str(tmp_path / "x.db")
    _chat(url, 300)
    for extra in ((), ("--no-pager",)):
        result = run("show", url, "long", *extra)  # captured: not a terminal
        assert result.code == 0 and result.out.count("\n") > 300


def test_show_marks_superseded_overlays(run: Run, file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        store.append_messages(APP, "s", [user(f"message {i}", id=f"m{i}") for i in range(10)])
        store.append_messages(APP, "s", [user("a branch", id="b")], "m5")
        store.set_head(APP, "s", "m9")
        first = store.add_compaction(APP, "s", "First.", "m2", "m4")  # read on branch b
        second = store.add_compaction(APP, "s", "Second.", "m2", "m7")  # replaced by third
        third = store.add_compaction(APP, "s", "Third.", "m2", "m8")
    result = run("show", file_store_url, "s", "--width", "200")
    assert result.code == 0, result.err
    status = {
        summary: re.search(r"\((.*?)\)  " + summary, result.out, re.M)
        for summary in ("First.", "Second.", "Third.")
    }
    assert {k: m.group(1) if m else None for k, m in status.items()} == {
        "First.": "not applied to the head's history",
        "Second.": "superseded: a newer summary is read instead",
        "Third.": "applied to the head's history",
    }
    data = run("show", file_store_url, "s", "--json").json()
    assert {c["id"]: c["superseded"] for c in data["compactions"]} == {
        first.id: False, second.id: True, third.id: False,
    }  # fmt: skip
