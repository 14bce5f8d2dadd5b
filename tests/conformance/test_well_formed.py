"""Amendment 13: every stored message is well-formed, whatever the way in — ``Session``,
``store.session()`` handles, the raw ``Store``, import and ``fork`` — and a forged attachment
reference is refused under every size policy. Runs on every backend."""

from __future__ import annotations

import base64
import copy
import hashlib
import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import threadline
from threadline.errors import InvalidArgumentError, InvalidMessageError
from threadline.export import export_sessions, import_sessions
from threadline.formats import to_anthropic, to_genai, to_openai_chat, to_openai_responses
from threadline.messages import ROLES, check_message, fold_role

from .conftest import write_legacy_row

GOOD = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
BAD_MESSAGES = [
    pytest.param({**GOOD, "role": "robot"}, "'robot'", id="role-robot"),
    pytest.param({**GOOD, "role": "developer"}, "'developer'", id="role-developer"),
    pytest.param({**GOOD, "role": ""}, "role", id="role-empty"),
    pytest.param({**GOOD, "parts": "hi"}, "parts", id="parts-string"),
    pytest.param({**GOOD, "parts": [5]}, "part 0", id="part-int"),
    pytest.param({**GOOD, "parts": [{"type": 5}]}, "type", id="part-type-int"),
    pytest.param({**GOOD, "parts": [{"type": "text", "text": None}]}, "text", id="text-none"),
    pytest.param({**GOOD, "parts": [{"type": "text", "text": {"a": 1}}]}, "text", id="text-dict"),
    pytest.param({**GOOD, "metadata": "m"}, "metadata", id="metadata-string"),
]


def _image_session(store: Any) -> str:
    """u's session holding a 300 kB image (an attachment under "attach"); its SHA-256."""
    payload = base64.b64encode(b"U-PRIVATE" * 30_000).decode()
    image = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64," + payload}
    message = {"id": "u1", "role": "user", "parts": [image]}
    store.append_messages("app", "su", [message], user_id="u")
    return hashlib.sha256(payload.encode()).hexdigest()


# --------------------------------------------------------------------------- every write


@pytest.mark.parametrize(("message", "fragment"), BAD_MESSAGES)
def test_every_way_in_refuses_what_append_message_refuses(
    store: Any, message: dict[str, Any], fragment: str
) -> None:
    session = threadline.SessionManager(store, "app").get_session("s")
    writes = [
        lambda: session.append_message(copy.deepcopy(message)),
        lambda: store.session("app", "s").append_messages([copy.deepcopy(message)]),
        lambda: store.append_messages("app", "s", [copy.deepcopy(message)]),
    ]
    for write in writes:
        with pytest.raises(InvalidMessageError, match=fragment):
            write()
    assert store.get_session("app", "s") is None  # nothing stored, not even the session
    store.append_messages("app", "s", [GOOD])
    for update in (
        lambda: store.update_message("app", "s", copy.deepcopy(message)),
        lambda: store.session("app", "s").update_message(copy.deepcopy(message)),
    ):
        with pytest.raises(InvalidMessageError, match=fragment):
            update()
    assert store.get_message("app", "s", "m1") == GOOD


def test_a_handle_normalises_as_session_does(store: Any) -> None:
    handle = store.session("app", "s")
    (stored,) = handle.append_messages([{"id": "m1", "role": "user", "content": "hi"}])
    assert stored["parts"] == [{"type": "text", "text": "hi"}]
    assert stored["createdAt"].endswith("Z")
    assert store.get_message("app", "s", "m1") == stored
    edited = handle.update_message({"id": "m1", "role": "user", "content": "hello"})
    assert edited["createdAt"] == stored["createdAt"]  # kept when not given, as Session does
    assert store.get_message("app", "s", "m1")["parts"] == [{"type": "text", "text": "hello"}]


def test_the_four_roles_and_converted_ones_are_stored(store: Any) -> None:
    session = threadline.SessionManager(store, "app").get_session("s")
    for role in ROLES:
        session.append_message({"role": role, "content": role})
    # Other APIs' roles arrive through the converters (here OpenAI Chat's developer).
    developer = session.append_message({"role": "developer", "content": "Be brief."})
    assert developer["role"] == "system"
    assert [m["role"] for m in session.get_history()] == [*ROLES, "system"]


@pytest.mark.parametrize("policy", ["attach", "truncate", "error"])
def test_a_forged_attachment_reference_is_refused_under_every_policy(
    store_url: str, policy: str
) -> None:
    with threadline.connect(store_url) as owner:
        sha = _image_session(owner)
    forged = {"$threadline.attachment": sha, "kind": "bytes", "bytes": 10}
    message = {**GOOD, "id": "v1", "metadata": {"x": forged}}
    in_part = {**GOOD, "id": "v2", "parts": [{"type": "file", "url": forged}]}
    with threadline.connect(store_url, size_policy=policy) as store:
        for bad in (message, in_part):
            with pytest.raises(InvalidMessageError, match="reserved"):
                store.append_messages("app", "sv", [bad], user_id="v")
            with pytest.raises(InvalidMessageError, match="reserved"):
                store.session("app", "sv", user_id="v").append_messages([bad])
        assert store.get_session("app", "sv") is None
        store.append_messages("app", "sv", [{**GOOD, "id": "v1"}], user_id="v")
        with pytest.raises(InvalidMessageError, match="reserved"):
            store.update_message("app", "sv", message)
        assert "metadata" not in store.get_message("app", "sv", "v1")
        # The key as a value, or in text, is ordinary content.
        text = {**GOOD, "id": "v3", "parts": [{"type": "text", "text": '"$threadline.attachment"'}]}
        assert store.append_messages("app", "sv", [text], user_id="v")[0] == text


# --------------------------------------------------------------------------- import


def _record(store: Any) -> dict[str, Any]:
    store.append_messages("app", "s", [{**GOOD, "createdAt": "2026-01-01T00:00:00.000Z"}])
    store.add_compaction("app", "s", "summary", "m1", "m1")
    (record,) = export_sessions(store, "app")
    store.delete_session("app", "s")
    return record


def _set(path: str, value: Any) -> Any:
    def change(record: dict[str, Any]) -> None:
        *keys, last = path.split(".")
        target: Any = record
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value

    return change


def _message(key: str, value: Any) -> Any:
    return _set(f"messages.0.message.{key}", value)


HOSTILE = [
    pytest.param(_set("session.created_at", "9999-12-31T23:59:59-14:00"), id="date-past-9999"),
    pytest.param(_set("session.updated_at", "0001-01-01T00:00:00+01:00"), id="date-before-1"),
    pytest.param(
        _set("compactions.0.created_at", "9999-12-31T23:00:00-02:00"), id="overlay-date-past-9999"
    ),
    pytest.param(_set("last_seq", 2**53 + 1), id="last-seq-over-2**53"),
    pytest.param(_set("last_seq", 2**63 - 1), id="last-seq-int64-max"),
    pytest.param(
        lambda r: (_set("messages.0.seq", 2**63 - 1)(r), _set("last_seq", 2**63 - 1)(r)),
        id="seq-int64-max",
    ),
    pytest.param(lambda r: r["compactions"].append(dict(r["compactions"][0])), id="dup-overlay"),
    pytest.param(_message("role", 5), id="role-number"),  # a role string is folded (25)
    pytest.param(_message("role", ""), id="role-empty"),
    pytest.param(_message("parts", "text"), id="parts-string"),
    pytest.param(_message("parts", [{"type": "text", "text": None}]), id="text-none"),
    pytest.param(_message("metadata", "m"), id="metadata-string"),
    pytest.param(_message("createdAt", "yesterday"), id="created-at-garbage"),
    pytest.param(_message("createdAt", "9999-12-31T23:59:59-14:00"), id="created-at-past-9999"),
    pytest.param(
        lambda r: (_message("id", "compaction_x")(r), _set("head", "compaction_x")(r)),
        id="reserved-id",
    ),
    pytest.param(
        _message("metadata", {"x": {"$threadline.attachment": "a" * 64, "kind": "bytes"}}),
        id="attachment-key",
    ),
]


@pytest.mark.parametrize("change", HOSTILE)
def test_import_refuses_a_hostile_record_whole(store: Any, change: Any) -> None:
    record = _record(store)
    good = copy.deepcopy(record)
    good["session"]["id"] = "first"  # a good record before it: all or nothing
    bad = copy.deepcopy(record)
    change(bad)
    with pytest.raises(InvalidArgumentError, match="export record"):
        import_sessions(store, [good, bad])
    assert store.list_sessions("app").sessions == []
    assert import_sessions(store, [good, record]) == ["first", "s"]  # the store still works
    store.append_messages("app", "s", [{**GOOD, "id": "m2"}])


def test_import_normalises_and_maps_legacy_roles(store: Any) -> None:
    record = _record(store)
    legacy = [
        {"id": "d", "role": "developer", "parts": [{"type": "text", "text": "Be brief."}]},
        {"id": "g", "role": "model", "parts": [], "providerMetadata": {"google": {"x": 1}}},
        {"id": "c", "role": "user", "content": "no parts, no createdAt"},
    ]
    for seq, message in enumerate(legacy, start=2):
        record["messages"].append({"seq": seq, "parent_id": "m1", "message": message})
    record["last_seq"] = 4
    import_sessions(store, [record])
    system, model, user = (store.get_message("app", "s", i) for i in ("d", "g", "c"))
    assert system["role"] == "system"
    assert system["providerMetadata"] == {"openai": {"role": "developer"}}
    assert model["role"] == "assistant"
    assert model["providerMetadata"] == {"google": {"x": 1, "role": "model"}}
    assert user["parts"] == [{"type": "text", "text": "no parts, no createdAt"}]
    assert user["createdAt"].endswith("Z")
    assert all(check_message(m) for m in store.get_path("app", "s"))


def test_fork_maps_a_legacy_stored_role(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        manager = threadline.SessionManager(store, "app")
        manager.append_all("s", [{"id": "d", "role": "system", "content": "Be brief."}, GOOD])
    # A row an older release wrote, when any role was stored as given.
    _raw_write(
        file_store_url,
        "UPDATE tl_messages SET role = 'developer', "
        'data = replace(data, \'"role":"system"\', \'"role":"developer"\') WHERE id = \'d\'',
    )
    with threadline.connect(file_store_url) as store:
        manager = threadline.SessionManager(store, "app")
        assert store.get_message("app", "s", "d")["role"] == "developer"
        child = manager.fork("s", "m1")
        first = manager.get_history(child.id)[0]
        assert first["role"] == "system"
        assert first["providerMetadata"] == {"openai": {"role": "developer"}}


def _raw_write(url: str, sql: str) -> None:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


def test_fold_role_leaves_other_messages_alone() -> None:
    assert fold_role(GOOD) is GOOD
    nameless = {**GOOD, "role": ""}
    assert fold_role(nameless) is nameless  # no release stored it: an import refuses it


@pytest.mark.parametrize(
    ("role", "folded", "kept"),
    [
        ("function", "tool", {"openai": {"role": "function"}}),
        ("data", "user", {"threadline": {"role": "data"}}),
        ("robot", "user", {"threadline": {"role": "robot"}}),
    ],
)
def test_any_legacy_role_is_folded_by_fork_import_and_copy(
    store: Any, role: str, folded: str, kept: dict[str, Any]
) -> None:
    # Before the write checks any non-empty role string was stored as given (clarification 25:
    # fork and import map it the way the converters do, the original kept).
    manager = threadline.SessionManager(store, "app")
    manager.append_all("s", [{"id": "old", "role": "user", "content": "42"}, GOOD])
    write_legacy_row(store, {"id": "old", "role": role, "parts": [{"type": "text", "text": "42"}]})
    assert store.get_message("app", "s", "old")["role"] == role
    child = manager.fork("s", "m1")
    first = manager.get_history(child.id)[0]
    assert (first["role"], first["providerMetadata"]) == (folded, kept)
    records = list(export_sessions(store, "app", session_ids=["s"]))
    import_sessions(store, records, app="copy")
    imported = store.get_message("copy", "s", "old")
    assert (imported["role"], imported["providerMetadata"]) == (folded, kept)
    assert all(check_message(m) for m in store.get_path("copy", "s"))
    if role == "function":  # the API it came from gets it back
        assert to_openai_chat([imported])[0]["role"] == "function"


V4_REASONING = {"type": "reasoning", "reasoning": "hmm", "details": []}


def test_a_reasoning_part_without_text_is_stored_and_converts_out(store: Any) -> None:
    # AI SDK v4 keeps reasoning under "reasoning"; Amendment 13 asks only that text is a string.
    session = threadline.SessionManager(store, "app").get_session("s")
    parts = [V4_REASONING, {"type": "text", "text": "ok"}]
    stored = session.append_message({"id": "a1", "role": "assistant", "parts": parts})
    assert stored["parts"][0] == V4_REASONING
    history = session.get_history()
    assert to_anthropic(history)[1][0]["content"][0] == {"type": "thinking", "thinking": "hmm"}
    assert to_genai(history)[0]["parts"][0] == {"text": "hmm", "thought": True}
    assert to_openai_chat(history) == [{"role": "assistant", "content": "ok"}]
    assert to_openai_responses(history)[-1]["content"] == "ok"
    bad = {"id": "a2", "role": "assistant", "parts": [{"type": "reasoning", "text": None}]}
    with pytest.raises(InvalidMessageError, match="text"):
        session.append_message(bad)  # present, it is a string


def test_legacy_v4_reasoning_rows_fork_update_and_import(store: Any) -> None:
    manager = threadline.SessionManager(store, "app")
    manager.append_all("s", [GOOD, {"id": "a1", "role": "assistant", "content": "ok"}])
    legacy = {
        "id": "a1",
        "role": "assistant",
        "parts": [V4_REASONING, {"type": "text", "text": "ok"}],
    }
    write_legacy_row(store, legacy)
    child = manager.fork("s", "a1")
    assert manager.get_history(child.id)[1]["parts"][0] == V4_REASONING
    session = manager.get_session("s")
    updated = session.update_message({**session.get_message("a1"), "metadata": {"x": 1}})
    assert updated["parts"][0] == V4_REASONING
    import_sessions(store, list(export_sessions(store, "app", session_ids=["s"])), app="copy")
    assert store.get_message("copy", "s", "a1")["parts"][0] == V4_REASONING


# A hostile message: any JSON-ish role, parts, text and createdAt.
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_parts = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "reasoning", "file", "tool-x"]) | _json},
        optional={"text": _json},
    )
    | _json,
    max_size=3,
)
_messages = st.fixed_dictionaries(
    {"id": st.just("m1")},
    optional={
        "role": st.sampled_from([*ROLES, "developer", "model", "robot", ""]) | _json,
        "parts": _parts | _json,
        "content": _json,
        "createdAt": st.sampled_from(["2026-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00"]) | _json,
        "metadata": _json,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=_messages)
def test_any_hostile_message_is_refused_whole_or_stored_well_formed(
    message: dict[str, Any],
) -> None:
    with threadline.connect(":memory:") as store:
        record = _record(store)
        record["messages"][0]["message"] = message
        record["compactions"] = []
        try:
            import_sessions(store, [record])
        except InvalidArgumentError:
            assert store.list_sessions("app").sessions == []
            return
        (stored,) = store.get_path("app", "s")
        assert check_message(stored) is stored and stored["role"] in ROLES
        assert isinstance(stored["createdAt"], str)
