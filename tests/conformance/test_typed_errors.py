# ruff: noqa: E501  (the case table reads best one case per line)
"""Bad input raises a ``ThreadlineError`` subclass, the same on every backend, storing nothing;
tools return ``"Error: ..."`` instead of raising. One case per defect found by fuzzing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from threadline import (
    InvalidArgumentError,
    InvalidMessageError,
    Session,
    SessionManager,
    StoreSkillProvider,
    ThreadlineError,
)

APP = "typed"
DEEP_JSON_TEXT = "[" * 5000 + "]" * 5000


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture
def manager(store: Any) -> SessionManager:
    m = SessionManager(store, app_name=APP).with_context("memory", max_tokens=500)
    m.append("s1", {"role": "user", "content": "hello"}, user_id="u1")
    return m


def test_every_tool_answers_deeply_nested_arguments_with_an_error(manager: SessionManager) -> None:
    session = manager.get_session("s1").with_context(
        "skills", provider=StoreSkillProvider(manager.store, label="skills")
    )
    tools = session.tools() | manager.tools()
    for name, tool in tools.items():
        for answer in (tools.execute(name, DEEP_JSON_TEXT), tool.execute(DEEP_JSON_TEXT)):
            assert isinstance(answer, str) and answer.startswith("Error:"), (name, answer)


CASES: list[tuple[str, Callable[[SessionManager], Any], type[ThreadlineError]]] = [
    ("message nested 500 deep", lambda m: m.append("s1", {"role": "user", "content": "x", "meta": _nested(500)}), InvalidMessageError),
    ("state value nested 500 deep", lambda m: m.update_state("s1", {"k": _nested(500)}), InvalidArgumentError),
    ("surrogate in block content", lambda m: m.get_session("s1").replace_context_block("memory", "a\ud800"), InvalidArgumentError),
    ("surrogate in an entry", lambda m: m.store.put_entry(APP, "kb", "k", "x\udfff"), InvalidArgumentError),
    ("surrogate in a skill description", lambda m: StoreSkillProvider(m.store, app_name=APP, label="sk").set("k", "doc", "d\ud800"), InvalidArgumentError),
    ("surrogate in a state key", lambda m: m.update_state("s1", {"k\ud800": 1}), InvalidArgumentError),
    ("surrogate in a session id", lambda m: m.append("s\ud800", {"role": "user", "content": "x"}), InvalidArgumentError),
    ("surrogate in a user id", lambda m: m.create(user_id="u\ud800"), InvalidArgumentError),
    ("surrogate in a name", lambda m: m.create("n\ud800"), InvalidArgumentError),
    ("surrogate in metadata", lambda m: m.create(metadata={"k": "\ud800"}), InvalidArgumentError),
    ("surrogate in a rename", lambda m: m.rename("s1", "\udfff"), InvalidArgumentError),
    ("surrogate in a compaction summary", lambda m: m.compact_and_split("s1", "sum\ud800"), InvalidArgumentError),
    ("limit beyond 64 bits", lambda m: m.search("hello", limit=2**64), InvalidArgumentError),
    ("usage beyond 64 bits", lambda m: m.add_usage("s1", 2**64, 1), InvalidArgumentError),
    ("list limit beyond 64 bits", lambda m: m.list(limit=2**70), InvalidArgumentError),
    ("metadata holding an object", lambda m: m.create(metadata={"x": object()}), InvalidArgumentError),
    ("purge a million days back", lambda m: m.purge(older_than=timedelta(days=10**6)), InvalidArgumentError),
    ("delete_messages(None)", lambda m: m.delete_messages("s1", None), InvalidArgumentError),  # type: ignore[arg-type]
    ("a string limit", lambda m: m.search("hello", limit="5"), InvalidArgumentError),  # type: ignore[arg-type]
    ("a float limit", lambda m: m.search("hello", limit=2.5), InvalidArgumentError),  # type: ignore[arg-type]
    ("an int session id", lambda m: m.create(session_id=5), InvalidArgumentError),  # type: ignore[arg-type]
    ("a NaN cost", lambda m: m.add_usage("s1", 1, 1, cost=float("nan")), InvalidArgumentError),
    ("an empty session id", lambda m: m.append("", {"role": "user", "content": "x"}), InvalidArgumentError),
    ("a non-string query", lambda m: m.search(None), InvalidArgumentError),  # type: ignore[arg-type]
    ("an over-long id", lambda m: m.get_session("s" * 600), InvalidArgumentError),
]  # fmt: skip


@pytest.mark.parametrize(("case", "call", "error"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_typed_error_and_stores_nothing(
    manager: SessionManager,
    dump_store: Any,
    case: str,
    call: Callable[[SessionManager], Any],
    error: type[ThreadlineError],
) -> None:
    before = dump_store(manager.store)
    with pytest.raises(error):
        call(manager)
    assert dump_store(manager.store) == before


def test_a_session_refuses_what_the_manager_refuses(store: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        Session.create(store).for_session("")
    with pytest.raises(InvalidArgumentError):
        SessionManager(store).get_session("")
