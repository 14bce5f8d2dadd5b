"""Conformance: invalid input is refused and leaves the store unchanged.

Every invalid message raises ``InvalidMessageError`` (a ``ValueError`` and a
``ThreadlineError``), stores nothing, and the caller's dict is never mutated.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import threadline
from threadline import Session, errors
from threadline.errors import InvalidMessageError, MessageNotFoundError, ThreadlineError

TEXT = [{"type": "text", "text": "zzzbadword"}]

INVALID: list[tuple[str, Any]] = [
    ("str", "zzzbadword"),
    ("list", [{"role": "user", "parts": TEXT}]),
    ("none", None),
    ("int", 42),
    ("role-missing", {"id": "bad", "parts": TEXT}),
    ("role-empty", {"id": "bad", "role": "", "parts": TEXT}),
    ("role-int", {"id": "bad", "role": 1, "parts": TEXT}),
    ("role-none", {"id": "bad", "role": None, "parts": TEXT}),
    ("role-list", {"id": "bad", "role": ["user"], "parts": TEXT}),
    ("parts-str", {"id": "bad", "role": "user", "parts": "zzzbadword"}),
    ("parts-dict", {"id": "bad", "role": "user", "parts": {"type": "text", "text": "zzzbadword"}}),
    ("parts-tuple", {"id": "bad", "role": "user", "parts": tuple(TEXT)}),
    ("no-parts-no-content", {"id": "bad", "role": "user"}),
    ("no-parts-no-content-meta", {"id": "bad", "role": "user", "metadata": {"t": "zzzbadword"}}),
    ("id-int", {"id": 7, "role": "user", "parts": TEXT}),
    ("id-list", {"id": ["bad"], "role": "user", "parts": TEXT}),
    ("id-dict", {"id": {"x": 1}, "role": "user", "parts": TEXT}),
    ("id-overlay", {"id": "compaction_abc", "role": "user", "parts": TEXT}),
    ("id-overlay-bare", {"id": "compaction_", "role": "assistant", "content": "zzzbadword"}),
    ("surrogate-text", {"id": "bad", "role": "user",
                        "parts": [{"type": "text", "text": "zzzbadword \ud800"}]}),
    ("surrogate-content", {"id": "bad", "role": "user", "content": "zzzbadword \udfff"}),
    ("surrogate-meta", {"id": "bad", "role": "user", "parts": TEXT, "metadata": {"k": "\udc00"}}),
    ("surrogate-id", {"id": "bad\ud800", "role": "user", "parts": TEXT}),
    ("surrogate-role", {"id": "bad", "role": "us\ud800er", "parts": TEXT}),
    ("surrogate-tool-output", {"id": "bad", "role": "assistant", "parts": [
        *TEXT, {"type": "tool-x", "toolCallId": "c", "toolName": "x", "state": "output-available",
                "input": {}, "output": {"r": "\ud83d"}}]}),
]


@pytest.fixture
def session(store: Any) -> Session:
    s = Session.create(store).for_session("s1")
    s.append_message({"id": "ok1", "role": "user", "content": "seed message"})
    s.append_message({"id": "ok2", "role": "assistant", "content": "second seed"})
    return s


def snapshot(store: Any, session: Session) -> dict[str, Any]:
    info = store.get_session("default", "s1")
    return {
        "history": session.get_history(),
        "head": session.get_latest_leaf(),
        "length": session.get_path_length(),
        "count": None if info is None else info.message_count,
        "bad": session.get_message("bad"),
        "search": [h.id for h in session.search("zzzbadword")],
        "branches": session.get_branches("ok2"),
    }


def _attempts(session: Session, bad: Any) -> list[tuple[str, Any]]:
    good = {"id": "good", "role": "user", "content": "x"}
    return [
        ("append_message", lambda: session.append_message(bad)),
        ("append_message(None)", lambda: session.append_message(bad, None)),
        ("append_message(parent)", lambda: session.append_message(bad, "ok1")),
        ("append_messages", lambda: session.append_messages([bad])),
        ("append_messages(good, bad)", lambda: session.append_messages([good, bad])),
        ("append_messages(bad, good)", lambda: session.append_messages([bad, good])),
    ]


def test_invalid_message_is_refused_everywhere(store: Any, session: Session) -> None:
    # one test per backend looping over INVALID keeps the suite fast; failures name the case
    before = snapshot(store, session)
    assert before["search"] == []
    problems: list[str] = []
    for name, bad in INVALID:
        original = copy.deepcopy(bad)
        for what, attempt in _attempts(session, bad):
            try:
                attempt()
            except InvalidMessageError as exc:
                if not isinstance(exc, ValueError) or not isinstance(exc, ThreadlineError):
                    problems.append(f"{name} / {what}: wrong bases {type(exc).__mro__}")
            except Exception as exc:
                problems.append(f"{name} / {what}: raised {exc!r}")
            else:
                problems.append(f"{name} / {what}: accepted")
            if bad != original:
                problems.append(f"{name} / {what}: caller's value mutated")
            after = snapshot(store, session)
            if after != before or session.get_message("good") is not None:
                problems.append(f"{name} / {what}: store changed")
                session.delete_messages(["good"])
                before = snapshot(store, session)
    assert not problems, "\n".join(problems)


# For updates the id is forced to an existing one, so id-only problems do not apply.
UPDATE_INVALID = [(n, b) for n, b in INVALID
                  if isinstance(b, dict) and not n.startswith("id-") and n != "surrogate-id"]


def test_invalid_update_is_refused(store: Any, session: Session) -> None:
    # one test per backend looping over the cases keeps the suite fast; failures name the case
    before = snapshot(store, session)
    problems: list[str] = []
    for name, bad in UPDATE_INVALID:
        update = {**bad, "id": "ok1"}
        original = copy.deepcopy(update)
        try:
            session.update_message(update)
        except InvalidMessageError:
            pass
        except Exception as exc:
            problems.append(f"{name}: raised {exc!r}")
        else:
            problems.append(f"{name}: accepted")
        if update != original:
            problems.append(f"{name}: caller's dict mutated")
        if snapshot(store, session) != before:
            problems.append(f"{name}: store changed")
            before = snapshot(store, session)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("bad", ["str", None, 5], ids=["str", "none", "int"])
def test_invalid_update_non_dict(session: Session, bad: Any) -> None:
    with pytest.raises(InvalidMessageError):
        session.update_message(bad)


@pytest.mark.parametrize(
    ("needle", "bad"),
    [
        ("role", {"id": "bad", "parts": TEXT}),
        ("parts", {"id": "bad", "role": "user", "parts": "x"}),
        ("compaction_", {"id": "compaction_abc", "role": "user", "parts": TEXT}),
    ],
)
def test_error_names_what_was_wrong(session: Session, needle: str, bad: Any) -> None:
    with pytest.raises(InvalidMessageError) as info:
        session.append_message(bad)
    assert needle in str(info.value)


def test_valid_messages_are_not_mutated(session: Session) -> None:
    messages = [
        {"role": "user", "content": "content style"},
        {"id": None, "role": "user", "parts": [{"type": "text", "text": "id none"}]},
        {"id": "v1", "role": "assistant", "parts": [{"type": "text", "text": "x"}],
         "metadata": {"nested": {"list": [1, 2]}}, "extra": "kept"},
    ]
    for message in messages:
        original = copy.deepcopy(message)
        session.append_message(message)
        assert message == original
    batch = copy.deepcopy(messages)
    session.append_messages(batch)
    assert batch == messages


# --------------------------------------------------------------------------- unknown ids


@pytest.mark.parametrize(
    "operation",
    [
        lambda s: s.checkout("nope"),
        lambda s: s.get_history("nope"),
        lambda s: s.get_history("nope", limit=1),
        lambda s: s.get_path_length("nope"),
        lambda s: s.update_message({"id": "nope", "role": "user", "content": "x"}),
        lambda s: s.append_message({"id": "new", "role": "user", "content": "x"}, "nope"),
        lambda s: s.append_messages([{"id": "new", "role": "user", "content": "x"}], "nope"),
    ],
    ids=["checkout", "get_history", "get_history-limit", "get_path_length", "update_message",
         "append_message-parent", "append_messages-parent"],
)
def test_unknown_ids_raise_message_not_found(store: Any, session: Session, operation: Any) -> None:
    before = snapshot(store, session)
    with pytest.raises(MessageNotFoundError) as info:
        operation(session)
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, ThreadlineError)
    assert "nope" in str(info.value)
    assert snapshot(store, session) == before
    assert session.get_message("new") is None


def test_add_compaction_bad_range_is_value_error(session: Session) -> None:
    with pytest.raises(ValueError) as info:
        session.add_compaction("s", "ok2", "ok1")
    assert isinstance(info.value, ThreadlineError)
    assert session.get_compactions() == []


# --------------------------------------------------------------------------- error hierarchy (§10)


def test_error_hierarchy() -> None:
    assert issubclass(errors.InvalidMessageError, ValueError)
    assert issubclass(errors.MessageNotFoundError, KeyError)
    assert issubclass(errors.SessionNotFoundError, KeyError)
    assert issubclass(errors.BlockNotFoundError, KeyError)
    for name in ("InvalidMessageError", "MessageNotFoundError", "SessionNotFoundError",
                 "SessionExistsError", "ReadOnlyBlockError", "BlockTooLargeError",
                 "BlockNotFoundError", "CompactionError", "StoreError"):
        cls = getattr(errors, name)
        assert issubclass(cls, errors.ThreadlineError), name
        assert getattr(threadline, name) is cls, name
    assert threadline.ThreadlineError is errors.ThreadlineError
