"""A custom ``SessionProvider`` (the extension point for an existing message store) behind a
``Session``: the message tree works through it, and what needs a threadline Store (stored
state, auto-wired blocks) is refused the same way for reads and writes."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from threadline import Session, SessionProvider, ThreadlineError
from threadline.messages import assistant, text_of, user

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_provider.py"
DictProvider = runpy.run_path(str(EXAMPLE))["DictProvider"]


def test_the_provider_satisfies_the_protocol() -> None:
    assert isinstance(DictProvider(), SessionProvider)


def test_the_message_tree_works_through_a_provider() -> None:
    provider = DictProvider()
    session = Session.create(provider)
    session.append_message(user("hello", id="m1"))
    session.append_message(assistant("hi there", id="m2"))
    session.append_message(assistant("hey", id="m3"), parent_id="m1")  # a branch
    assert [m["id"] for m in session.get_history()] == ["m1", "m3"]
    assert [m["id"] for m in session.get_history("m2")] == ["m1", "m2"]
    assert [m["id"] for m in session.get_branches("m1")] == ["m2", "m3"]
    assert [m["id"] for m in session.get_history(limit=1)] == ["m3"]
    assert session.get_path_length() == 2
    assert [h.id for h in session.search("there")] == ["m2"]
    session.add_compaction("greetings", "m1", "m3")
    assert [text_of(m) for m in session.get_history()] == ["greetings"]
    assert session.delete_messages(["m2", "nope"]) == 1


def test_stored_state_needs_a_store_for_reads_and_writes_alike() -> None:
    session = Session.create(DictProvider())
    session.update_state({"temp:step": 1})  # temp: keys live in the object: they work
    assert session.get_state("temp:step") == 1
    assert dict(session.state) == {"temp:step": 1}
    with pytest.raises(ThreadlineError, match="Store"):
        session.update_state({"topic": "tea"})
    with pytest.raises(ThreadlineError, match="Store"):
        session.get_state("topic")  # returned None before, while the write raised


def test_the_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "branches of m1: ['m2', 'm3']" in out and "search 'review': ['m2']" in out


def test_blocks_without_a_provider_need_a_store() -> None:
    session = Session.create(DictProvider()).with_context("soul", provider="Be brief.")
    assert "Be brief." in session.freeze_system_prompt()
    with pytest.raises(ThreadlineError):
        Session.create(DictProvider()).with_context("memory").get_context_blocks()
