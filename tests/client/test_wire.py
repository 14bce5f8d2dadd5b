"""The client's wire model without a network: error bodies of any shape map to a threadline
error (never a crash), ids of any characters survive a real server, decoders give the
library's types."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from served_app import Served

from threadline import errors
from threadline.client import AuthenticationError, Client, RemoteError
from threadline.client._wire import Call, as_type, error_from, finish, nothing
from threadline.types import SessionInfo

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(status=st.integers(min_value=400, max_value=599), body=JSON)
def test_any_error_body_maps_to_a_threadline_error(status: int, body: Any) -> None:
    exc = error_from(httpx.Response(status, json=body))
    assert isinstance(exc, errors.ThreadlineError) and exc.status_code == status  # type: ignore[attr-defined]


@given(status=st.integers(min_value=400, max_value=599), raw=st.binary(max_size=50))
def test_a_body_that_is_not_json_maps_too(status: int, raw: bytes) -> None:
    assert isinstance(error_from(httpx.Response(status, content=raw)), errors.ThreadlineError)


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (404, "SessionNotFoundError", errors.SessionNotFoundError),
        (404, "MessageNotFoundError", errors.MessageNotFoundError),
        (409, "SessionExistsError", errors.SessionExistsError),
        (400, "BlockTooLargeError", errors.BlockTooLargeError),
        (503, "StoreError", errors.StoreError),
        (401, "Unauthorized", AuthenticationError),
        (422, "ValidationError", errors.InvalidArgumentError),
        (413, "PayloadTooLarge", RemoteError),
        (404, "NotFound", RemoteError),
        (500, "InternalServerError", RemoteError),
    ],
)
def test_error_types_map_to_classes(status: int, kind: str, expected: type) -> None:
    body = {"error": {"type": kind, "message": "what went wrong"}}
    exc = error_from(httpx.Response(status, json=body))
    assert type(exc) is expected and str(exc) == "what went wrong"


def test_a_missing_value_reads_as_none_only_where_the_library_returns_none() -> None:
    body = {"error": {"type": "MessageNotFoundError", "message": "gone"}}
    lenient = Call("GET", "/x", nothing, none_if_missing=True)
    assert finish(lenient, httpx.Response(404, json=body)) is None
    with pytest.raises(errors.MessageNotFoundError):
        finish(Call("GET", "/x", nothing), httpx.Response(404, json=body))


def test_datetimes_are_parsed_and_unknown_fields_ignored() -> None:
    row = {
        "id": "s1",
        "app_name": "a",
        "user_id": None,
        "name": None,
        "parent_session_id": None,
        "model": None,
        "source": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "estimated_cost": 0.0,
        "end_reason": None,
        "metadata": {},
        "message_count": 0,
        "created_at": "2026-01-01T10:00:00Z",
        "updated_at": "2026-01-01T10:00:01.5Z",
        "added_by_a_newer_server": True,
    }
    info = as_type(SessionInfo, row)
    assert info.created_at == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert info.updated_at.microsecond == 500_000


def test_a_body_that_is_not_json_is_refused_before_sending() -> None:
    client = Client("http://127.0.0.1:9", "key")
    with pytest.raises(errors.InvalidArgumentError):
        client.update_state("s1", {"when": datetime.now()})
    with pytest.raises(errors.InvalidArgumentError):
        client.get_session(42)  # type: ignore[arg-type]


HOSTILE_IDS = ["a/b", "a%2Fb", "sp ace", "q?x=1", "h#sh", "ünï/cødé", "..", "%", "a+b"]


def test_ids_of_any_characters_round_trip_through_a_real_server(served: Served) -> None:
    with Client(served.url, served.key) as client:
        for sid in HOSTILE_IDS:
            client.append(sid, {"id": sid, "role": "user", "content": f"marker {sid}"})
            assert client.get(sid).id == sid
            s = client.get_session(sid)
            assert [m["id"] for m in s.get_history()] == [sid]
            assert s.get_message(sid)["id"] == sid
            assert [h.session_id for h in s.search("marker")] == [sid]
