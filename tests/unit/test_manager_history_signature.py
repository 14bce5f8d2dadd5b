"""``SessionManager.get_history`` names ``Session.get_history``'s keywords (no ``**options``),
so its async twin, the client and type checkers see them; ``limit`` alone differs: its
default (``AUTO``) is the manager's ``max_messages``."""

from __future__ import annotations

import inspect

import pytest

from threadline import AUTO, InvalidArgumentError, Session, SessionManager
from threadline.aio import AsyncSessionManager


def _keywords(method: object) -> dict[str, inspect.Parameter]:
    params = inspect.signature(method).parameters.values()  # type: ignore[arg-type]
    return {p.name: p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_get_history_takes_the_session_keywords_typed() -> None:
    manager = _keywords(SessionManager.get_history)
    session = _keywords(Session.get_history)
    kinds = {p.kind for p in inspect.signature(SessionManager.get_history).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds
    assert set(manager) == set(session) | {"user_id"}
    for name, param in session.items():
        wanted = AUTO if name == "limit" else param.default
        assert manager[name].default == wanted, name
        wanted_types = set(str(param.annotation).split(" | "))
        if name == "limit":
            wanted_types.add("AutoType")
        assert set(str(manager[name].annotation).split(" | ")) == wanted_types, name
    # The async twin shows the same parameters.
    assert inspect.signature(AsyncSessionManager.get_history) == inspect.signature(
        SessionManager.get_history
    )


def test_get_history_keywords_behave_as_before() -> None:
    capped = SessionManager(":memory:", max_messages=2)
    capped.append_all("s1", [{"role": "user", "content": w} for w in "abcd"])
    assert len(capped.get_history("s1")) == 2  # limit omitted: max_messages
    assert len(capped.get_history("s1", limit=None)) == 4  # the whole path
    assert len(capped.get_history("s1", limit=3)) == 3
    assert len(capped.get_history("s1", attachments="ref", runs=1)) == 1  # a run: "d"
    with pytest.raises(InvalidArgumentError):
        capped.get_history("s1", limit=0)
    with pytest.raises(TypeError):
        capped.get_history("s1", bogus=1)  # type: ignore[call-arg]
