"""Read-your-writes across service workers (api.md clarification 30): a write's response
carries ``X-Threadline-Read-After``; a read echoing it sees the write whatever worker serves
it, and ``threadline.client.Client`` echoes it by itself. Two apps over the same primary and
standby stand for two workers; the standby's replay is paused throughout.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

import threadline
from threadline.client import Client
from threadline.server import create_app, create_key

pytestmark = [pytest.mark.postgres]

HEADER = "x-threadline-read-after"


class Workers(httpx.BaseTransport):
    """Each request to the next worker in turn; the last response's headers kept."""

    def __init__(self, workers: list[TestClient]) -> None:
        self._next = itertools.cycle(workers)
        self.last: httpx.Response | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = next(self._next).request(
            request.method, str(request.url), headers=request.headers, content=request.read()
        )
        response = httpx.Response(
            answer.status_code, headers=answer.headers, content=answer.content
        )
        self.last = response
        return response


@pytest.fixture
def workers(pg_pair: Any) -> Iterator[tuple[TestClient, TestClient, str]]:
    url = f"{pg_pair.primary}&replica={quote(pg_pair.replica, safe='')}&max_replica_lag=60"
    with threadline.connect(pg_pair.primary) as store:
        key = create_key(store, "app")
    pg_pair.caught_up()
    with TestClient(create_app(url)) as one, TestClient(create_app(url)) as two:
        yield one, two, key


def test_a_write_answers_with_its_position_and_any_worker_reads_after_it(
    pg_pair: Any, workers: tuple[TestClient, TestClient, str]
) -> None:
    one, two, key = workers
    auth = {"authorization": f"Bearer {key}"}
    assert two.get("/v1/sessions", headers=auth).json()["sessions"] == []
    pg_pair.pause()
    transport = Workers([one, two])
    http = httpx.Client(transport=transport, base_url="http://testserver")
    with Client("http://testserver", key, http_client=http) as client:
        client.append("s1", {"role": "user", "content": "hello"})  # served by worker one
        assert transport.last is not None
        position = transport.last.headers.get(HEADER)
        assert position and "/" in position
        # Served by worker two, which never wrote: the echoed position sends it to the primary.
        assert [s.id for s in client.list().sessions] == ["s1"]
        assert [h.session_id for h in client.search("hello")] == ["s1"]
    # Without the header, worker two's read is served by the paused standby.
    assert two.get("/v1/sessions", headers=auth).json()["sessions"] == []
    listed = two.get("/v1/sessions", headers={**auth, HEADER: position}).json()["sessions"]
    assert [s["id"] for s in listed] == ["s1"]
    # Reads carry no position of their own.
    assert HEADER not in two.get("/v1/sessions", headers=auth).headers


def test_a_malformed_position_is_a_400(workers: tuple[TestClient, TestClient, str]) -> None:
    one, _, key = workers
    answer = one.get(
        "/v1/sessions", headers={"authorization": f"Bearer {key}", HEADER: "yesterday"}
    )
    assert answer.status_code == 400
    assert "X-Threadline-Read-After" in answer.json()["error"]["message"]
