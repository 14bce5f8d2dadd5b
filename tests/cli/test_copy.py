"""``threadline copy`` and export format 2 (integrations.md §18.3, api.md clarifications 25
and 33): whole apps moved between real stores — a SQLite file and a fresh PostgreSQL schema —
with attachments, profiles, blocks and state of every scope, keyed entries and API keys'
hashes, verified identical; app records checked field by field with typed errors; format 1
files still imported.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadline
import threadline.cli._copy as copying
from threadline.errors import InvalidArgumentError, StoreError
from threadline.export import (
    FORMAT,
    FORMAT_1,
    copy_store,
    export_app,
    export_sessions,
    import_records,
    import_sessions,
)
from threadline.messages import assistant, user
from threadline.profile import Profile

from .conftest import Run

APP = "travel"
LONG = "The Tagus at dusk. " * 20_000  # 380 KB of text: stored out of row, as an attachment
IMAGE = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 1000).decode()
HASHES = [hashlib.sha256(secret).hexdigest() for secret in (b"key-one", b"key-two", b"key-3")]
PROFILE = {
    "blocks": [
        {"label": "soul", "kind": "readonly", "text": "You are a travel assistant."},
        {"label": "notes", "kind": "writable", "scope": "user", "max_tokens": 200},
    ],
    "compaction": {"after_tokens": 8000, "summarizer": {"type": "extractive"}},
}


def fill(store: Any) -> None:
    """Everything a store holds, in two apps: ``travel`` with sessions, and ``docs`` with
    only a profile and keyed entries (no session at all)."""
    manager = threadline.SessionManager(store, app_name=APP)
    manager.create("Lisbon", session_id="trip", user_id="ana", metadata={"channel": "web"})
    trip = manager.get_session("trip", user_id="ana")
    trip.append_message({**user("Where to stay?", id="u1"), "createdAt": "2026-01-02T03:04:05Z"})
    trip.append_message(assistant(LONG, id="a1"))
    picture = {"type": "file", "mediaType": "image/png", "url": IMAGE}
    trip.append_message({"id": "u2", "role": "user", "parts": [{"type": "text", "text": "this"}]})
    trip.append_message({"id": "u3", "role": "user", "parts": [picture]})
    trip.update_state({"step": 2, "user:home": "Porto", "app:season": "spring"})
    # Straight through the store: no createdAt, a state delta with its undo record.
    store.append_messages(APP, "trip", [{"id": "raw", "role": "user", "parts": []}],
                          state_delta={"k": 1})  # fmt: skip
    store.add_compaction(APP, "trip", "They talked about hotels.", "u1", "a1")
    store.set_block(APP, "session", "trip", "notes", "Prefers quiet areas.")
    store.set_block(APP, "user", "ana", "notes", "Lives in Porto.")
    store.set_block(APP, "user", "ben", "notes", "Has no session yet.")  # a user without one
    store.update_state(APP, "scratch", "cleo", {"user:lang": "pt"})
    store.delete_session(APP, "scratch")  # cleo keeps her user: state, and has no session
    store.set_block(APP, "app", "", "policy", "Be brief.")
    store.set_prompt(APP, "trip", "You are a travel assistant.")
    store.add_usage(APP, "trip", 1200, 350, 0.0042)
    manager.fork("trip", "a1", name="fork of trip")
    store.append_messages(APP, "anon", [{"id": "n1", "role": "user", "parts": []}])
    store.put_entry(APP, "docs", "faq", "Ask us anything.", "Common questions")
    store.put_entry(APP, "skills", "tea", "Brew green tea at 80°C.")
    Profile.from_dict(PROFILE).save(store, APP)
    Profile.from_dict(PROFILE).save(store, APP)  # version 2
    store.add_api_key("k1", APP, "ana", HASHES[0])
    store.add_api_key("k2", APP, None, HASHES[1])
    store.revoke_api_key("k2")
    Profile.from_dict({"blocks": []}).save(store, "docs")
    store.put_entry("docs", "docs", "manual", "Read me.")
    # Stored files (ADK artifacts): two versions, the second the picture's bytes (one
    # attachment with the message's), and a user's file; times as ADK gives them.
    pdf = {"inline_data": {"mime_type": "application/pdf"}}
    store.put_artifact(APP, "ana", "trip", "plan.pdf", b"%PDF-1", part=pdf,
                       mime_type="application/pdf", metadata={"n": 1}, created=1.25)  # fmt: skip
    store.put_artifact(APP, "ana", "trip", "plan.pdf", bytes(range(256)) * 1000, part=pdf)
    store.put_artifact(APP, "ana", None, "user:cv.txt", "Ana, Porto.", mime_type="text/plain")


def _export(run: Run, url: str, app: str) -> str:
    result = run("export", url, "--app", app, "--with-keys")
    assert result.code == 0, result.err
    return result.out


def _attachments(store: Any) -> list[tuple[str, str]]:
    rows = store._read("rows", lambda tx: tx.all("SELECT app, kind FROM tl_attachments"))
    return sorted((str(app), str(kind)) for app, kind in rows)


def test_sqlite_to_postgres_and_back_gives_an_identical_export(
    run: Run, tmp_path: Path, pg_dsn: str
) -> None:
    source, back = str(tmp_path / "source.db"), str(tmp_path / "back.db")
    with threadline.connect(source) as store:
        fill(store)
        held = _attachments(store)
        files = store.dump_app(APP).artifacts
    assert ("travel", "text") in held and ("travel", "bytes") in held
    assert len(held) == 4  # the picture and the second plan.pdf share one attachment
    assert [(f.filename, f.version) for f in files] == [
        ("user:cv.txt", 0), ("plan.pdf", 0), ("plan.pdf", 1),
    ]  # fmt: skip

    there = run("copy", "--from", source, "--to", pg_dsn, "--all-apps", "--json")
    assert there.code == 0, there.err
    counts = there.json()
    assert counts["apps"] == ["docs", APP] and counts["verified"] is True
    assert (counts["sessions"], counts["entries"], counts["keys"], counts["profiles"]) == (
        3, 3, 2, 2,
    )  # fmt: skip
    assert counts["users"] == 3  # ana, ben and cleo (the last two without sessions)
    assert counts["artifacts"] == 3  # every version of every stored file
    with threadline.connect(pg_dsn) as store:
        assert _attachments(store) == held  # out of row again on PostgreSQL
        assert store.get_message(APP, "trip", "a1")["parts"][0]["text"] == LONG

    again = run("copy", "--from", pg_dsn, "--to", back, "--all-apps")
    assert again.code == 0, again.err
    assert "3 sessions" in again.out and "verified: both exports are identical" in again.out
    assert "3 artifact versions" in again.out

    for app in (APP, "docs"):
        assert _export(run, back, app) == _export(run, source, app)  # byte for byte
    with threadline.connect(back) as store:
        profile = store.get_profile(APP)
        assert profile is not None and profile.version == 2
        with threadline.connect(source) as original:
            assert profile == original.get_profile(APP)  # time and version kept
        key = store.find_api_key(HASHES[1])
        assert key is not None and key.id == "k2" and key.revoked
        assert store.get_message(APP, "trip", "raw") == {"id": "raw", "role": "user", "parts": []}
        assert store.get_block(APP, "user", "ben", "notes") == "Has no session yet."
        assert [e.key for e in store.search_entries(APP, "skills", "green tea")] == ["tea"]
        assert store.dump_app(APP).artifacts == files  # versions, times and content kept
        assert _attachments(store) == held


def test_a_target_app_holding_data_is_refused_unless_replace(run: Run, tmp_path: Path) -> None:
    source, target = str(tmp_path / "source.db"), str(tmp_path / "target.db")
    with threadline.connect(source) as store:
        fill(store)
    assert run("copy", "--from", source, "--to", target, "--app", APP).code == 0
    with threadline.connect(target) as store:
        store.append_messages(APP, "extra", [user("only in the target", id="x1")])
        store.set_block(APP, "app", "", "stale", "Only in the target.")
        store.put_entry(APP, "docs", "stale", "Only in the target.")
    refused = run("copy", "--from", source, "--to", target, "--app", APP)
    assert refused.code == 1
    assert refused.err.startswith("threadline: target app 'travel' is not empty (4 sessions")
    with threadline.connect(target) as store:
        assert store.get_session(APP, "extra") is not None  # nothing was written
    replaced = run("copy", "--from", source, "--to", target, "--app", APP, "--replace")
    assert replaced.code == 0, replaced.err
    with threadline.connect(target) as store:
        assert store.get_session(APP, "extra") is None
        assert store.get_block(APP, "app", "", "stale") is None
        assert store.get_entry(APP, "docs", "stale") is None
    assert _export(run, target, APP) == _export(run, source, APP)


def test_the_app_is_chosen_or_the_command_says_which_exist(run: Run, tmp_path: Path) -> None:
    source, target = str(tmp_path / "source.db"), str(tmp_path / "target.db")
    with threadline.connect(source) as store:
        fill(store)
    unclear = run("copy", "--from", source, "--to", target)
    assert unclear.code == 1 and "its apps: docs, travel" in unclear.err
    assert not Path(target).exists()  # a refused copy creates no file
    unknown = run("copy", "--from", source, "--to", target, "--app", "nope")
    assert unknown.code == 1 and "holds nothing for app 'nope'" in unknown.err
    both = run("copy", "--from", source, "--to", target, "--app", APP, "--all-apps")
    assert both.code == 1 and "exclude each other" in both.err
    itself = run("copy", "--from", source, "--to", source, "--replace")
    assert itself.code == 1 and "the same store" in itself.err
    only = run("copy", "--from", source, "--to", target, "--app", "docs", "--json")
    assert only.code == 0 and only.json()["apps"] == ["docs"]


def test_a_progress_bar_on_a_terminal_only(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = str(tmp_path / "source.db")
    with threadline.connect(source) as store:
        fill(store)
    quiet = run("copy", "--from", source, "--to", str(tmp_path / "quiet.db"), "--app", APP)
    assert quiet.code == 0 and quiet.err == ""  # not a terminal: no bar
    monkeypatch.setattr(copying, "progress_wanted", lambda: True)
    shown = run("copy", "--from", source, "--to", str(tmp_path / "shown.db"), "--app", APP)
    assert shown.code == 0, shown.err
    assert "copying app 'travel'" in shown.err and "3/3" in shown.err
    assert shown.out.startswith("Copied 1 app(s) (travel): 3 sessions, 7 messages")


def test_verification_names_the_first_difference(tmp_path: Path) -> None:
    source = threadline.connect(str(tmp_path / "source.db"))
    target = threadline.connect(str(tmp_path / "target.db"))
    fill(source)

    def meanwhile(app: str, done: int, total: int) -> None:
        # Another writer changes a session the copy has read (no updated_at moves, so the
        # records keep their order and the difference is that one field).
        sql = "UPDATE tl_prompts SET prompt = 'Changed meanwhile.' WHERE session_id = 'trip'"
        source._write("meanwhile", lambda tx: tx.execute(sql))

    with pytest.raises(StoreError) as failed:
        copy_store(source, target, [APP], progress=meanwhile)
    assert str(failed.value) == (
        "store operation 'verify the copy' failed: app 'travel', session 'trip': prompt: "
        "'Changed meanwhile.' in the source, 'You are a travel assistant.' in the target"
    )


def test_legacy_stored_roles_are_mapped_as_an_import_maps_them(
    run: Run, tmp_path: Path, pg_dsn: str
) -> None:
    source = tmp_path / "source.db"
    with threadline.connect(str(source)) as store:
        store.append_messages(APP, "old", [{"id": "d1", "role": "system", "parts": []}])
    with sqlite3.connect(source) as conn:  # as an older release stored it
        conn.execute(
            "UPDATE tl_messages SET role = 'developer', "
            'data = replace(data, \'"role":"system"\', \'"role":"developer"\')'
        )
    with threadline.connect(str(source)) as store:
        assert store.get_message(APP, "old", "d1")["role"] == "developer"
    copied = run("copy", "--from", str(source), "--to", pg_dsn)
    assert copied.code == 0, copied.err
    with threadline.connect(pg_dsn) as store:
        message = store.get_message(APP, "old", "d1")
    assert message["role"] == "system"
    assert message["providerMetadata"] == {"openai": {"role": "developer"}}


def test_keys_leave_only_when_asked(run: Run, tmp_path: Path) -> None:
    source = str(tmp_path / "source.db")
    with threadline.connect(source) as store:
        fill(store)
    plain = json.loads(run("export", source, "--app", APP).out.splitlines()[0])
    assert plain["type"] == "app" and "keys" not in plain
    assert HASHES[0] not in run("export", source, "--app", APP).out
    asked = json.loads(_export(run, source, APP).splitlines()[0])
    assert [(k["id"], k["revoked_at"] is None) for k in asked["keys"]] == [
        ("k1", True), ("k2", False),
    ]  # fmt: skip
    partial = run("export", source, "--app", APP, "--session", "trip", "--with-keys")
    assert partial.code == 1 and "--with-keys exports a whole app" in partial.err
    no_keys = threadline.connect(":memory:")
    report = copy_store(threadline.connect(source), no_keys, [APP], keys=False)
    assert report.keys == 0 and no_keys.list_api_keys() == []


def test_format_1_files_still_import(run: Run, tmp_path: Path) -> None:
    with threadline.connect(str(tmp_path / "source.db")) as store:
        fill(store)
        records = list(export_sessions(store, APP))
    old = []
    for record in records:
        record = copy.deepcopy(record)
        record["format"] = FORMAT_1
        del record["type"]
        old.append(record)
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    target = str(tmp_path / "target.db")
    imported = run("import", target, str(path), "--json")
    assert imported.code == 0, imported.err
    assert sorted(imported.json()["imported"]) == sorted(r["session"]["id"] for r in records)
    with threadline.connect(target) as store:
        again = list(export_sessions(store, APP))  # written back as format 2
        # A message stored without createdAt gets one from an import, as from an append.
        assert store.get_message(APP, "trip", "raw")["createdAt"].endswith("Z")
    timeless = {m["message"]["id"] for r in records for m in r["messages"]} - {
        m["message"]["id"] for r in records for m in r["messages"] if "createdAt" in m["message"]
    }
    assert timeless == {"raw", "n1"}
    for record in (*records, *again):
        for item in record["messages"]:
            if item["message"]["id"] in timeless:
                item["message"].pop("createdAt", None)
    assert again == records


# --------------------------------------------------------------------------- app records


def _app_record() -> dict[str, Any]:
    store = threadline.connect(":memory:")
    fill(store)
    record = export_app(store, APP, keys=True)
    assert record["format"] == FORMAT
    return record


def _set(path: str, value: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        *keys, last = path.split("/")
        target: Any = record
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return change


HOSTILE = [
    pytest.param(_set("type", "apps"), "type must be 'session' or 'app'", id="type"),
    pytest.param(_set("app", ""), "app must be a non-empty string", id="app-empty"),
    pytest.param(_set("blocks", {"policy": 1}), r"blocks\['policy'\] must be a string", id="block"),
    pytest.param(_set("state", {"user:x": 1}), "'user:x' is not app-scoped", id="state-scope"),
    pytest.param(_set("state", {"app:x": 2**64}), "state", id="state-int-over-64-bits"),
    pytest.param(_set("users", []), "users must be a JSON object", id="users-list"),
    pytest.param(_set("users", {"": {}}), "user id", id="user-empty"),
    pytest.param(_set("users/ana/state", {"app:x": 1}), "not user-scoped", id="user-state"),
    pytest.param(_set("users/ana/blocks", "notes"), r"users\['ana'\].blocks", id="user-blocks"),
    pytest.param(_set("entries/docs", {}), r"entries\['docs'\] must be a JSON array", id="entries"),
    pytest.param(
        lambda r: r["entries"]["docs"].append(dict(r["entries"]["docs"][0])),
        "a key appears twice",
        id="entry-twice",
    ),
    pytest.param(_set("entries/docs/0/content", None), "content must be a string", id="content"),
    pytest.param(_set("entries/docs/0/key", ""), r"entries\['docs'\]\[0\].key", id="entry-key"),
    pytest.param(_set("keys", {}), "keys must be a JSON array", id="keys-object"),
    pytest.param(_set("keys/0/key_hash", "secret"), r"keys\[0\].key_hash", id="key-hash"),
    pytest.param(_set("keys/1/id", "k1"), "an API key id appears twice", id="key-twice"),
    pytest.param(_set("keys/0/created_at", "yesterday"), "created_at", id="key-time"),
    pytest.param(_set("profile/version", 0), "profile.version", id="profile-version"),
    pytest.param(_set("profile/document", {"format": 2}), "profile.document: format", id="doc"),
    pytest.param(
        _set("profile/document/blocks/0/kind", "shell"), "profile.document: blocks", id="doc-block"
    ),
    pytest.param(_set("profile/updated_at", "2026-01-02"), "profile.updated_at", id="doc-time"),
]


@pytest.mark.parametrize(("change", "named"), HOSTILE)
def test_a_hostile_app_record_is_refused_whole(change: Any, named: str) -> None:
    good = _app_record()
    bad = copy.deepcopy(good)
    change(bad)
    store = threadline.connect(":memory:")
    with pytest.raises(InvalidArgumentError, match=r"export record 1: .*" + named):
        import_records(store, [bad, *export_sessions(_source(), APP)])
    assert store.list_app_names() == []  # all or nothing
    assert import_records(store, [good]).apps == [APP]


def _source() -> Any:
    store = threadline.connect(":memory:")
    fill(store)
    return store


def test_app_records_are_the_operators_not_a_tenants() -> None:
    store = threadline.connect(":memory:")
    with pytest.raises(InvalidArgumentError, match=r"app record .* is not imported here"):
        import_sessions(store, [_app_record()])  # what POST /v1/import uses
    assert store.list_app_names() == []


def test_an_import_clashing_with_the_targets_keys_or_profile_writes_nothing() -> None:
    record = _app_record()
    sessions = list(export_sessions(_source(), APP))
    store = threadline.connect(":memory:")
    store.add_api_key("k1", "elsewhere", None, HASHES[2])
    with pytest.raises(InvalidArgumentError, match="API key 'k1' already exists"):
        import_records(store, [record, *sessions])
    assert store.count_sessions(APP) == 0 and store.get_profile(APP) is None
    other = threadline.connect(":memory:")
    other.put_profile(APP, {"blocks": []})
    with pytest.raises(InvalidArgumentError, match="already has another profile"):
        import_records(other, [record])
    assert import_records(other, [record], replace=True).profiles == 1
    stored = other.get_profile(APP)
    assert stored is not None and stored.version == 2
    assert stored.document == record["profile"]["document"]
    assert import_records(other, [record]).apps == [APP]  # the same profile again: kept


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=10,
)  # fmt: skip
FIELDS = ["blocks", "state", "users", "entries", "keys", "profile", "users/ana",
          "users/ana/state", "entries/docs/0", "keys/0", "profile/document",
          "profile/document/blocks/0"]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=JSON)
def test_any_app_record_field_is_refused_typed_or_stored_as_parsed(field: str, value: Any) -> None:
    record = copy.deepcopy(_APP_RECORD)
    _set(field, value)(record)
    store = threadline.connect(":memory:")
    try:
        import_records(store, [record])
    except InvalidArgumentError as exc:
        assert str(exc).startswith("export record 1: ")
        assert store.list_app_names() == []
        return
    stored = export_app(store, APP, keys=record.get("keys") is not None)
    import_records(store, [stored])  # what was stored imports again, unchanged
    assert export_app(store, APP, keys=record.get("keys") is not None) == stored


_APP_RECORD = _app_record()
