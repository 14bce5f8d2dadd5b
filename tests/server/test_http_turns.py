"""What the turns API offers in-process, over HTTP: a state delta appended with a message,
history windows (``runs``, ``branch``, ``after`` as ISO-8601 or epoch seconds), rewind by
invocation id, and path lengths without reading the tree — against a real server, on SQLite
and PostgreSQL. Bad values are 4xx JSON errors."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from served import Server


def _msg(mid: str, role: str, minute: int, **metadata: str) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": mid,
        "role": role,
        "content": f"{mid} text",
        "createdAt": f"2026-01-01T10:{minute:02d}:00.000Z",
    }
    if metadata:
        message["metadata"] = metadata
    return message


def _ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [m["id"] for m in answer.json()["messages"]]


def _error(answer: httpx.Response, status: int, kind: str | None = None) -> None:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"type", "message"}
    if kind is not None:
        assert error["type"] == kind, error


@pytest.fixture
def http(server: Server) -> Any:
    with server.client(server.key(f"turns-{uuid.uuid4().hex[:8]}")) as client:
        yield client


def _two_runs(http: httpx.Client, s: str) -> None:
    answer = http.post(
        f"/v1/sessions/{s}/messages",
        json={
            "messages": [
                _msg("u1", "user", 1, invocationId="i1"),
                _msg("a1", "assistant", 2, invocationId="i1", branch="root.a"),
                _msg("u2", "user", 3, invocationId="i2"),
                _msg("a2", "assistant", 4, invocationId="i2", branch="root.b"),
            ]
        },
    )
    assert answer.status_code == 201, answer.text


def test_a_state_delta_is_stored_with_its_message_and_undone_by_rewind(http: httpx.Client) -> None:
    s = "delta"
    http.post(f"/v1/sessions/{s}/messages", json=_msg("m1", "user", 1))
    stored = http.post(
        f"/v1/sessions/{s}/messages",
        json={"messages": [_msg("m2", "user", 2)], "state_delta": {"booked": True, "n": 1}},
    )
    assert stored.status_code == 201, stored.text
    assert stored.json()["messages"][0]["metadata"]["stateDelta"] == {"booked": True, "n": 1}
    assert http.get(f"/v1/sessions/{s}/state").json() == {"state": {"booked": True, "n": 1}}
    removed = http.post(
        f"/v1/sessions/{s}/messages",
        json={"messages": [_msg("m3", "user", 3)], "parent_id": "m2", "state_delta": {"n": None}},
    )
    assert removed.status_code == 201
    assert http.get(f"/v1/sessions/{s}/state").json() == {"state": {"booked": True}}
    rewound = http.post(f"/v1/sessions/{s}/rewind", json={"before_message_id": "m2"})
    assert rewound.json() == {"head_id": "m1"}
    assert http.get(f"/v1/sessions/{s}/state").json() == {"state": {}}


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [_msg("x1", "user", 1), _msg("x2", "user", 2)], "state_delta": {"a": 1}},
        {"messages": [_msg("x1", "user", 1)], "state_delta": [1, 2]},
        {"messages": [_msg("x1", "user", 1)], "state_delta": "a=1"},
        {"messages": [_msg("x1", "user", 1)], "state_delta": {"": 1}},
        {"messages": [_msg("x1", "user", 1)], "state_delta": {"k" * 600: 1}},
    ],
)
def test_a_bad_state_delta_is_a_400_and_stores_nothing(
    http: httpx.Client, body: dict[str, Any]
) -> None:
    s = f"bad-{uuid.uuid4().hex[:6]}"
    http.post(f"/v1/sessions/{s}/messages", json=_msg("m1", "user", 1))
    _error(http.post(f"/v1/sessions/{s}/messages", json=body), 400)
    assert _ids(http.get(f"/v1/sessions/{s}/messages")) == ["m1"]
    assert http.get(f"/v1/sessions/{s}/state").json() == {"state": {}}


def test_history_windows_runs_branch_and_after(http: httpx.Client) -> None:
    s = "windows"
    _two_runs(http, s)
    path = f"/v1/sessions/{s}/messages"
    assert _ids(http.get(path, params={"runs": 1})) == ["u2", "a2"]
    assert _ids(http.get(path, params={"runs": 5})) == ["u1", "a1", "u2", "a2"]
    assert _ids(http.get(path, params={"runs": 0})) == []
    assert _ids(http.get(path, params={"runs": 1, "leaf_id": "a1"})) == ["u1", "a1"]
    assert _ids(http.get(path, params={"branch": "root.a"})) == ["u1", "a1", "u2"]
    assert _ids(http.get(path, params={"branch": "root.b.tool"})) == ["u1", "u2", "a2"]
    assert _ids(http.get(path, params={"branch": "root.a", "runs": 1})) == ["u2"]
    minute_3 = datetime(2026, 1, 1, 10, 3, tzinfo=UTC)
    for after in (
        "2026-01-01T10:03:00Z",
        "2026-01-01T11:03:00+01:00",
        "2026-01-01T10:03:00",  # naive: UTC
        str(int(minute_3.timestamp())),
        str(minute_3.timestamp()),
        f"{minute_3.timestamp() - 0.5}",
    ):
        assert _ids(http.get(path, params={"after": after})) == ["u2", "a2"], after
    assert _ids(http.get(path, params={"after": "0"})) == ["u1", "a1", "u2", "a2"]
    assert _ids(http.get(path, params={"after": "9999-01-01T00:00:00Z"})) == []


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"runs": -1}, 422),
        ({"runs": "two"}, 422),
        ({"runs": "1.5"}, 422),
        ({"branch": ""}, 422),
        ({"after": "yesterday"}, 400),
        ({"after": "2026-13-45T99:00:00Z"}, 400),
        ({"after": "1e400"}, 400),
        ({"after": "-1e300"}, 400),
        ({"after": "nan"}, 400),
        ({"after": ""}, 400),
        ({"leaf_id": "nope", "runs": 1}, 404),
    ],
)
def test_bad_window_values_are_4xx_json(
    http: httpx.Client, params: dict[str, Any], status: int
) -> None:
    _two_runs(http, "bad-windows")
    _error(http.get("/v1/sessions/bad-windows/messages", params=params), status)


def test_rewind_before_an_invocation(http: httpx.Client) -> None:
    s = "invocations"
    _two_runs(http, s)
    rewind = f"/v1/sessions/{s}/rewind"
    _error(http.post(rewind, json={}), 400, "InvalidArgumentError")
    _error(
        http.post(rewind, json={"before_message_id": "u2", "before_invocation_id": "i2"}),
        400,
        "InvalidArgumentError",
    )
    _error(http.post(rewind, json={"before_invocation_id": "nope"}), 404, "MessageNotFoundError")
    _error(http.post(rewind, json={"before_invocation_id": 7}), 422)
    assert http.post(rewind, json={"before_invocation_id": "i2"}).json() == {"head_id": "a1"}
    assert _ids(http.get(f"/v1/sessions/{s}/messages")) == ["u1", "a1"]
    assert http.post(rewind, json={"before_invocation_id": "i1"}).json() == {"head_id": None}


def test_path_lengths_come_from_the_head_and_any_message(http: httpx.Client) -> None:
    s = "lengths"
    http.post("/v1/sessions", json={"session_id": s})
    assert http.get(f"/v1/sessions/{s}/head").json() == {"head_id": None, "path_length": 0}
    _two_runs(http, s)
    http.post(f"/v1/sessions/{s}/messages", params={"parent_id": "u1"}, json=_msg("b", "user", 5))
    assert http.get(f"/v1/sessions/{s}/head").json() == {"head_id": "b", "path_length": 2}
    length = http.get(f"/v1/sessions/{s}/messages/a2/path_length")
    assert length.json() == {"message_id": "a2", "path_length": 4}
    _error(http.get(f"/v1/sessions/{s}/messages/nope/path_length"), 404, "MessageNotFoundError")
    _error(http.get("/v1/sessions/nobody/head"), 404, "SessionNotFoundError")
    _error(http.get("/v1/sessions/nobody/messages/a2/path_length"), 404, "SessionNotFoundError")
