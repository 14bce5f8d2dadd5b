"""An app's own data dumped and loaded verbatim on every backend (``Store.dump_app`` /
``load_app``, ``list_app_names``, ``list_entry_labels``): what export format 2's app
record and ``threadline copy`` rest on."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

import threadline
from threadline.errors import InvalidArgumentError
from threadline.store import AppDump, Entry, StoredKey, StoredProfile

APP = "travel"
T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def _dump() -> AppDump:
    return AppDump(
        blocks={"policy": "Be brief."},
        state={"app:season": "spring", "app:nested": {"a": [1, 2.5, None]}},
        user_blocks={"ana": {"notes": "Lives in Porto."}, "ben": {"notes": "No session."}},
        user_state={"cleo": {"user:lang": "pt"}},
        entries={"docs": [Entry("faq", "Ask us anything.", "Common"), Entry("tea", "Brew.", None)]},
        keys=[
            StoredKey("k1", APP, "ana", "ab" * 32, T0),
            StoredKey("k2", APP, None, "cd" * 32, T0, revoked_at=T0),
        ],
        profile=StoredProfile(APP, {"blocks": [], "format": 1}, 7, T0),
    )


def test_a_dump_loads_verbatim_and_reads_back_the_same(store: Any) -> None:
    store.load_app(APP, _dump())
    assert store.dump_app(APP, keys=True) == _dump()
    assert store.dump_app(APP).keys is None  # keys are read only when asked
    assert store.list_app_names() == [APP] and store.list_apps() == {}  # no session
    assert store.list_entry_labels(APP) == ["docs"]
    assert [e.key for e in store.search_entries(APP, "docs", "anything")] == ["faq"]
    assert store.find_api_key("cd" * 32).revoked
    assert store.get_profile(APP) == StoredProfile(APP, {"blocks": [], "format": 1}, 7, T0)
    assert store.get_state(APP, "s", "cleo") == {
        "app:season": "spring", "app:nested": {"a": [1, 2.5, None]}, "user:lang": "pt",
    }  # fmt: skip
    store.load_app(APP, _dump())  # the same rows again: nothing to refuse
    assert store.dump_app(APP, keys=True) == _dump()


def test_without_replace_it_upserts_and_refuses_other_keys_and_profiles(store: Any) -> None:
    store.set_block(APP, "app", "", "kept", "Still here.")
    store.put_entry(APP, "docs", "kept", "Still here.")
    store.load_app(APP, dataclasses.replace(_dump(), keys=None, profile=None))
    dump = store.dump_app(APP)
    assert dump.blocks == {"kept": "Still here.", "policy": "Be brief."}
    assert [e.key for e in dump.entries["docs"]] == ["faq", "kept", "tea"]
    store.load_app(APP, dataclasses.replace(_dump(), profile=None))
    clash = dataclasses.replace(
        _dump(),
        blocks={"policy": "Written by a refused load."},
        keys=[StoredKey("k1", APP, None, "ef" * 32, T0)],
        profile=None,
    )
    with pytest.raises(InvalidArgumentError, match="API key 'k1' already exists"):
        store.load_app(APP, clash)
    store.put_profile(APP, {"blocks": []})
    with pytest.raises(InvalidArgumentError, match="already has another profile"):
        store.load_app(APP, dataclasses.replace(clash, keys=None, profile=_dump().profile))
    assert store.get_block(APP, "app", "", "policy") == "Be brief."  # refused: nothing written
    assert [key.id for key in store.list_api_keys()] == ["k1", "k2"]
    assert store.get_profile(APP).version == 1


def test_replace_leaves_exactly_the_dump(store: Any) -> None:
    store.set_block(APP, "user", "zed", "notes", "Gone after the replace.")
    store.update_state(APP, "s1", "zed", {"user:x": 1, "app:y": 2, "own": 3})
    store.put_entry(APP, "old", "x", "Gone after the replace.")
    store.put_profile(APP, {"blocks": []})
    store.load_app(APP, _dump(), replace=True)
    assert store.dump_app(APP, keys=True) == _dump()
    assert store.list_entry_labels(APP) == ["docs"]
    assert store.search_entries(APP, "old", "replace") == []
    assert store.get_state(APP, "s1", None)["own"] == 3  # a session's own state is not the app's
    empty = AppDump(keys=[])
    store.load_app(APP, empty, replace=True)
    assert store.dump_app(APP, keys=True) == empty
    assert store.list_app_names() == [APP]  # the session s1 is still there


@pytest.mark.parametrize(
    ("dump", "named"),
    [
        (AppDump(state={"user:x": 1}), "not app-scoped"),
        (AppDump(user_state={"ana": {"x": 1}}), "not user-scoped"),
        (AppDump(user_blocks={"": {"notes": "x"}}), "user id"),
        (AppDump(blocks={"": "x"}), "blocks label"),
        (AppDump(entries={"docs": [Entry("a", "x", None), Entry("a", "y", None)]}), "twice"),
        (AppDump(keys=[StoredKey("k", APP, None, "ab" * 32, T0)] * 2), "id appears twice"),
        (AppDump(profile=StoredProfile(APP, {}, 0, T0)), "version"),
    ],
)
def test_an_inconsistent_dump_is_refused_before_any_write(
    store: Any, dump: AppDump, named: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        store.load_app(APP, dump)
    assert store.list_app_names() == []


def test_apps_are_listed_whatever_they_hold() -> None:
    store = threadline.connect(":memory:")
    store.put_profile("p", {"blocks": []})
    store.add_api_key("k", "k", None, "ab" * 32)
    store.set_block("b", "user", "u", "notes", "x")
    store.put_entry("e", "docs", "x", "y")
    store.append_messages("s", "s1", [{"id": "m", "role": "user", "parts": []}])
    assert store.list_app_names() == ["b", "e", "k", "p", "s"]
