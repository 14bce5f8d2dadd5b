"""A live Session agrees with what a fresh one reads about loaded skills."""

from __future__ import annotations

from typing import Any

from threadline import Session, StoreSkillProvider
from threadline.messages import tool_call, user


def _session(store: Any) -> Session:
    return Session(store, session_id="review").with_context(
        "skills", provider=StoreSkillProvider(store)
    )


def test_loaded_skills_follow_appended_load_results(store: Any) -> None:
    live = _session(store)
    assert live.loaded_skills == set()  # the set is built before the load reaches history
    load = tool_call("load_context", {"label": "skills", "key": "pirate"}, "Arr.", "c1")
    live.append_messages([user("talk like a pirate", id="u1"), {**load, "id": "t1"}])
    live.append_message(
        {**tool_call("load_context", {"label": "skills", "key": "poet"}, "Verse."), "id": "t2"}
    )

    expected = {"skills:pirate", "skills:poet"}
    assert _session(store).loaded_skills == expected  # rebuilt from history
    assert live.loaded_skills == expected
    assert live.unload_skill("skills", "pirate") is True
    assert live.loaded_skills == {"skills:poet"} == _session(store).loaded_skills
