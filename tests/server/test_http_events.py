"""Server-sent events against a real server: message appended, head moved, compaction —
and, with two uvicorn workers, every subscriber gets every event whichever worker wrote it
(PostgreSQL LISTEN/NOTIFY, SQLite polling)."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from served import BACKENDS, Server, backend_db, start_server

import threadline


class Subscriber:
    """Reads one SSE stream in a thread; ``events`` are ``(event, data)`` pairs, ``ids`` the
    ``id:`` lines in order, ``ended`` is set when the server closed the stream."""

    def __init__(
        self,
        server: Server,
        key: str,
        session: str | None,
        last_event_id: str | None = None,
    ) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.ids: list[str] = []
        self.ended = threading.Event()
        self._client = httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=None))
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        self._stream = self._client.stream(
            "GET",
            f"/v1/sessions/{session}/events" if session is not None else "/v1/events",
            params={"access_token": key},
            headers=headers,
        )
        self.response = self._stream.__enter__()
        assert self.response.status_code == 200
        self.worker = self.response.headers["x-threadline-worker"]
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "no subscribed comment"

    def _read(self) -> None:
        event = None
        try:
            for line in self.response.iter_lines():
                if line.startswith(": subscribed"):
                    self._ready.set()
                elif line.startswith("id: "):
                    self.ids.append(line[len("id: ") :])
                elif line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: ") and event is not None:
                    self.events.append((event, json.loads(line[len("data: ") :])))
                    event = None
        except httpx.HTTPError:
            pass  # closed by the test
        finally:
            self.ended.set()

    def wait_for(self, count: int, kind: str, timeout: float = 15) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [data for event, data in self.events if event == kind]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        seen = [(event, str(data)[:200]) for event, data in self.events[-20:]]
        raise AssertionError(f"worker {self.worker}: {kind} x{count} not seen; last: {seen}")

    def close(self) -> None:
        self._client.close()


def test_messages_head_moves_and_compactions_are_pushed(server: Server) -> None:
    key = server.key("events")
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        http.post("/v1/sessions", json={"session_id": session})
        sub = Subscriber(server, key, session)
        try:
            for i in range(3):
                http.post(
                    f"/v1/sessions/{session}/messages",
                    json={"id": f"m{i}", "role": "user", "content": f"turn {i}"},
                )
            messages = sub.wait_for(3, "message")
            assert [m["message"]["id"] for m in messages] == ["m0", "m1", "m2"]
            assert [m["parent_id"] for m in messages] == [None, "m0", "m1"]
            http.put(f"/v1/sessions/{session}/head", json={"leaf_id": "m0"})
            assert sub.wait_for(1, "head")[-1]["head_id"] in ("m0", "m2")
            deadline = time.monotonic() + 10
            while sub.wait_for(1, "head")[-1]["head_id"] != "m0":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            http.put(f"/v1/sessions/{session}/head", json={"leaf_id": "m2"})
            http.post(f"/v1/sessions/{session}/compact", json={})
            compaction = sub.wait_for(1, "compaction")[0]["compaction"]
            assert compaction["to_message_id"] == "m1" and compaction["created_at"].endswith("Z")
        finally:
            sub.close()


@pytest.fixture(scope="module", params=BACKENDS)
def two_workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("workers")
    # PostgreSQL: no polling within the test's reach, so only LISTEN/NOTIFY can deliver.
    poll = "0.5" if request.param == "sqlite-file" else "600"
    db = backend_db(request, request.param, tmp)
    running = start_server(db, tmp, workers=2, env_extra={"THREADLINE_EVENTS_POLL": poll})
    try:
        yield running
    finally:
        running.stop()


def test_events_reach_subscribers_on_every_worker(two_workers: Server) -> None:
    server = two_workers
    key = server.key("fanout")
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        http.post("/v1/sessions", json={"session_id": session})
    subscribers: list[Subscriber] = []
    try:
        for _ in range(24):  # connections land on either worker: keep one per worker, two each
            sub = Subscriber(server, key, session)
            if sum(s.worker == sub.worker for s in subscribers) >= 2:
                sub.close()
            else:
                subscribers.append(sub)
            if len({s.worker for s in subscribers}) == 2 and len(subscribers) >= 4:
                break
        assert len({s.worker for s in subscribers}) == 2, "all streams landed on one worker"
        total = 20
        for i in range(total):  # a fresh connection per write: writes land on both workers
            with server.client(key) as http:
                answer = http.post(
                    f"/v1/sessions/{session}/messages",
                    json={"id": f"m{i}", "role": "user", "content": f"turn {i}"},
                )
                assert answer.status_code == 201
        for sub in subscribers:
            ids = [m["message"]["id"] for m in sub.wait_for(total, "message")]
            assert ids == [f"m{i}" for i in range(total)], sub.worker
    finally:
        for sub in subscribers:
            sub.close()


def _post(http: httpx.Client, session: str, *ids: str) -> None:
    for mid in ids:
        answer = http.post(
            f"/v1/sessions/{session}/messages",
            json={"id": mid, "role": "user", "content": f"text of {mid}"},
        )
        assert answer.status_code == 201, answer.text


def test_a_deleted_session_ends_its_streams_which_never_carry_the_new_one(
    server: Server,
) -> None:
    """Amendment 11: u's stream ends with ``gone`` when u's session is deleted, and v's
    session created with the same id afterwards never reaches it."""
    app = f"gone-{uuid.uuid4().hex[:6]}"
    key_u, key_v = server.key(app, "u"), server.key(app, "v")
    with server.client(key_u) as as_u, server.client(key_v) as as_v:
        _post(as_u, "chat", "u1")
        sub = Subscriber(server, key_u, "chat")
        try:
            assert as_u.delete("/v1/sessions/chat").status_code == 204
            assert sub.ended.wait(10), sub.events
            assert sub.events[-1] == ("gone", {"session_id": "chat"})
            assert as_v.post("/v1/sessions", json={"session_id": "chat"}).status_code == 201
            _post(as_v, "chat", "v1", "v2")
            time.sleep(1.5)  # more than a poll
            assert [event for event, _ in sub.events] == ["gone"]
        finally:
            sub.close()


def test_a_stream_of_a_recreated_session_starts_at_its_first_message(server: Server) -> None:
    """Amendment 11: the session is deleted and created again behind the service's back (no
    write through it, so only the poll can notice): the old stream gets ``gone`` and none of
    the new messages; a stream opened on the new session gets all of them, from its first."""
    app = f"regen-{uuid.uuid4().hex[:6]}"
    key = server.key(app)
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        _post(http, session, "a1", "a2", "a3")
        old = Subscriber(server, key, session)
        store = threadline.connect(server.db)
        try:
            assert store.delete_session(app, session)
            store.create_session(app, session_id=session)
        finally:
            store.close()
        new = Subscriber(server, key, session)
        try:
            _post(http, session, "b1", "b2", "b3")
            messages = new.wait_for(3, "message")
            assert [m["message"]["id"] for m in messages] == ["b1", "b2", "b3"]
            assert [m["seq"] for m in messages] == [1, 2, 3]
            assert old.ended.wait(10)
            assert [event for event, _ in old.events] == ["gone"]
        finally:
            old.close()
            new.close()


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _raw_stream(server: Server, key: str, session: str, rcvbuf: int = 4096) -> socket.socket:
    """An event stream on a bare socket with a small receive buffer (read only when told)."""
    port = int(server.url.rsplit(":", 1)[1])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    request = (
        f"GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {key}\r\n\r\n"
    )
    sock.sendall(request.encode())
    sock.settimeout(10)
    assert b" 200 " in sock.recv(200)
    return sock


def _read_to_end(sock: socket.socket, pause: float = 0.0, timeout: float = 60) -> bytes:
    """Everything until the server closes (``pause`` seconds between reads of 64 KiB)."""
    got = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(got)
        got += chunk
        time.sleep(pause)
    raise AssertionError(f"the stream was not closed; {len(got)} bytes read")


def _burst(http: httpx.Client, session: str, batches: int, size: int = 60_000) -> None:
    """``batches`` posts of 50 messages of ``size`` characters (each under the inline bound,
    so each event carries its body)."""
    for b in range(batches):
        messages = [
            {"id": f"b{b}-{i}", "role": "user", "content": f"{i:04d}" + "y" * size}
            for i in range(50)
        ]
        answer = http.post(f"/v1/sessions/{session}/messages", json={"messages": messages})
        assert answer.status_code == 201, answer.text[:200]


# A stalled subscriber holds at most its buffer (BUFFER_BYTES, 4 MiB; dropped when it lags),
# the watch's replay history (4 MiB, while the watch lingers) and one event in the transport;
# the rest is the allocator's high water after 120 MB of events went through (measured:
# 13-24 MB, then flat over further rounds). Before the bound every event stayed queued: 120 MB.
STALLED_GROWTH_MB = 40


def test_a_stalled_subscriber_is_closed_and_the_server_does_not_grow(server: Server) -> None:
    """Amendment 16: one subscriber that never reads, 120 MB of events: the server process's
    RSS (VmRSS of the uvicorn process) grows by less than the documented bound, and the
    stream is closed."""
    key = server.key(f"stall-{uuid.uuid4().hex[:6]}")
    with server.client(key) as http:
        _post(http, "warm-up", "first")
        reading = Subscriber(server, key, "warm-up")
        try:  # the same writes to a watched session first: the allocator's working size
            _burst(http, "warm-up", 40)
            reading.wait_for(2000, "message", timeout=60)
        finally:
            reading.close()
        _post(http, "stalled", "first")
        sock = _raw_stream(server, key, "stalled")
        try:
            time.sleep(1)
            before = _rss_mb(server.process.pid)
            _burst(http, "stalled", 40)  # 2000 events of 60 KB
            time.sleep(3)
            after = _rss_mb(server.process.pid)
            assert after - before < STALLED_GROWTH_MB, (before, after)
            _read_to_end(sock)  # closed: what the kernel still held, then the end
        finally:
            sock.close()


def test_a_subscriber_that_falls_behind_gets_lagged_then_resumes_with_reset(
    server: Server,
) -> None:
    """Amendment 16: a subscriber reading slower than the session changes gets
    ``event: lagged`` and the stream closes; resuming from its last id, too old to replay,
    gets ``event: reset`` (reload) and then the new events."""
    key = server.key(f"lag-{uuid.uuid4().hex[:6]}")
    with server.client(key) as http:
        _post(http, "busy", "first")
        sock = _raw_stream(server, key, "busy", rcvbuf=256 * 1024)
        try:
            reader = threading.Thread(target=lambda: got.append(_read_to_end(sock, 0.05)))
            got: list[bytes] = []
            reader.start()
            _burst(http, "busy", 30)
            reader.join(90)
            assert got, "the stream was not closed"
        finally:
            sock.close()
        text = got[0].decode("utf-8", "replace")
        assert "event: lagged" in text
        assert text.rfind("event: lagged") > text.rfind("event: message")  # lagged is the last
        assert text.endswith("\r\n0\r\n\r\n")  # and the response ends properly
        last_id = [line[4:] for line in text.splitlines() if line.startswith("id: ")][-1]
        sub = Subscriber(server, key, "busy", last_event_id=last_id)
        try:
            reset = sub.wait_for(1, "reset")[0]
            assert reset["session_id"] == "busy"
            _post(http, "busy", "after")
            assert sub.wait_for(1, "message")[-1]["message"]["id"] == "after"
        finally:
            sub.close()


def test_event_ids_and_resuming_with_last_event_id(server: Server) -> None:
    """Clarification 29: ids are ``<generation>:<counter>``, increasing; a stream opened with
    ``Last-Event-ID`` (header, or ``?last_event_id=`` for EventSource) replays what came
    after it; an id of another generation gets ``reset``."""
    app = f"ids-{uuid.uuid4().hex[:6]}"
    key = server.key(app)
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        _post(http, session, "m1")
        generation = threadline.connect(server.db).get_session(app, session).generation
        first = Subscriber(server, key, session)
        try:
            _post(http, session, "m2", "m3")
            first.wait_for(2, "message")
            time.sleep(0.5)
            last_id, got = first.ids[-1], list(first.ids)  # before the next writes
        finally:
            first.close()  # (its reader may go on a little: what it got is taken above)
        assert all(i.startswith(f"{generation}:") for i in got), got
        counters = [int(i.split(":")[1]) for i in got]
        assert counters == sorted(counters) and len(set(counters)) == len(counters)
        _post(http, session, "m4", "m5")
        resumed = Subscriber(server, key, session, last_event_id=last_id)
        by_query = httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=None))
        try:
            ids = [m["message"]["id"] for m in resumed.wait_for(2, "message")]
            assert ids == ["m4", "m5"]
            with by_query.stream(
                "GET",
                f"/v1/sessions/{session}/events",
                params={"access_token": key, "last_event_id": last_id},
            ) as response:
                text = ""
                for line in response.iter_lines():
                    text += line + "\n"
                    if '"m5"' in line:
                        break
            assert '"m4"' in text and '"m2"' not in text
        finally:
            resumed.close()
            by_query.close()
        other = Subscriber(server, key, session, last_event_id=f"{generation + 1000}:1")
        try:
            assert other.wait_for(1, "reset")[0]["session_id"] == session
            assert not [event for event, _ in other.events if event == "message"]
        finally:
            other.close()


def test_renames_and_state_changes_are_pushed(server: Server) -> None:
    """Clarification 29: ``renamed`` (with the new name) and ``state`` (the merged state)."""
    key = server.key(f"kinds-{uuid.uuid4().hex[:6]}")
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        _post(http, session, "m1")
        sub = Subscriber(server, key, session)
        try:
            assert http.patch(f"/v1/sessions/{session}", json={"name": "Trip"}).status_code == 200
            assert sub.wait_for(1, "renamed")[0] == {"session_id": session, "name": "Trip"}
            answer = http.patch(f"/v1/sessions/{session}/state", json={"topic": "hotels"})
            assert answer.status_code == 200
            assert sub.wait_for(1, "state")[0]["state"] == {"topic": "hotels"}
            http.patch(f"/v1/sessions/{session}/state", json={"topic": None})
            assert sub.wait_for(2, "state")[1]["state"] == {}
            assert [e for e, _ in sub.events if e == "renamed"] == ["renamed"]
        finally:
            sub.close()


def test_a_delete_ends_the_streams_on_every_worker(two_workers: Server) -> None:
    """``gone`` reaches subscribers on both workers (PostgreSQL: through NOTIFY alone), and a
    stream opened on the session created again gets its messages whichever worker serves it."""
    server = two_workers
    key = server.key(f"gone2-{uuid.uuid4().hex[:6]}")
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        _post(http, session, "old")
    subscribers: list[Subscriber] = []
    try:
        for _ in range(24):
            sub = Subscriber(server, key, session)
            subscribers.append(sub)
            if len({s.worker for s in subscribers}) == 2:
                break
        assert len({s.worker for s in subscribers}) == 2, "all streams landed on one worker"
        with server.client(key) as http:
            assert http.delete(f"/v1/sessions/{session}").status_code == 204
        for sub in subscribers:
            assert sub.ended.wait(15), sub.worker
            assert [event for event, _ in sub.events] == ["gone"], sub.worker
        fresh: list[Subscriber] = []
        with server.client(key) as http:
            _post(http, session, "new1")
        for _ in range(24):
            sub = Subscriber(server, key, session)
            fresh.append(sub)
            if len({s.worker for s in fresh}) == 2:
                break
        subscribers += fresh
        for i in (2, 3):
            with server.client(key) as http:  # a fresh connection per write: either worker
                _post(http, session, f"new{i}")
        for sub in fresh:
            ids = [m["message"]["id"] for m in sub.wait_for(2, "message")]
            assert ids == ["new2", "new3"], sub.worker
    finally:
        for sub in subscribers:
            sub.close()


def _text(message: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in message.get("parts", []))


def test_edits_deletes_and_blocks_are_pushed_whoever_writes_them(server: Server) -> None:
    """Clarification 29: ``message_updated``, ``messages_deleted`` and ``block`` events, for
    writes made through HTTP and by the library directly on the same store (another process
    as far as the server knows: only its poll sees them). A large edit is a reference."""
    app = f"edits-{uuid.uuid4().hex[:6]}"
    key = server.key(app)
    session = f"s-{uuid.uuid4().hex[:8]}"
    store = threadline.connect(server.db)
    try:
        with server.client(key) as http:
            _post(http, session, "m1", "m2", "m3", "m4", "m5")
            sub = Subscriber(server, key, session)
            try:
                answer = http.put(
                    f"/v1/sessions/{session}/messages/m1", json={"role": "user", "content": "new"}
                )
                assert answer.status_code == 200, answer.text
                updated = sub.wait_for(1, "message_updated")[0]
                assert updated["session_id"] == session
                assert (updated["message"]["id"], _text(updated["message"])) == ("m1", "new")
                edit = {"id": "m2", "role": "user", "parts": [{"type": "text", "text": "lib"}]}
                store.update_message(app, session, edit)
                updated = sub.wait_for(2, "message_updated")[1]["message"]
                assert (updated["id"], _text(updated)) == ("m2", "lib")
                big = {
                    "id": "m3",
                    "role": "user",
                    "parts": [{"type": "text", "text": "x" * 99_000}],
                }
                store.update_message(app, session, big)
                ref = sub.wait_for(3, "message_updated")[2]
                assert ref["message"]["id"] == "m3" and "parts" not in ref["message"]
                assert ref["message_ref"]["href"] == f"/v1/sessions/{session}/messages/m3"
                assert http.delete(f"/v1/sessions/{session}/messages/m4").status_code == 204
                assert sub.wait_for(1, "messages_deleted")[0] == {
                    "session_id": session,
                    "ids": ["m4"],
                }
                assert store.delete_messages(app, session, ["m5", "nope"]) == 1
                assert sub.wait_for(2, "messages_deleted")[1]["ids"] == ["m5"]
                store.set_block(app, "session", session, "notes", "remember the hotel")
                block = sub.wait_for(1, "block")[0]
                assert block == {
                    "session_id": session,
                    "label": "notes",
                    "content": "remember the hotel",
                }
                store.set_block(app, "user", "u1", "persona", "not this session's")
                assert http.delete(f"/v1/sessions/{session}/messages").status_code == 204
                assert sub.wait_for(3, "messages_deleted")[2] == {
                    "session_id": session,
                    "all": True,
                }
                time.sleep(
                    1.0
                )  # a poll or two: nothing more (the user block is not this session's)
                kinds = [event for event, _ in sub.events]
                assert kinds.count("block") == 1 and kinds.count("message_updated") == 3
                assert all(i.count(":") == 1 for i in sub.ids)
            finally:
                sub.close()
    finally:
        store.close()


def test_an_edit_reaches_subscribers_on_every_worker(two_workers: Server) -> None:
    """PostgreSQL: through NOTIFY alone (the poll is out of the test's reach); SQLite: polling."""
    server = two_workers
    key = server.key(f"edit2-{uuid.uuid4().hex[:6]}")
    session = f"s-{uuid.uuid4().hex[:8]}"
    with server.client(key) as http:
        _post(http, session, "m1", "m2")
    subscribers: list[Subscriber] = []
    try:
        for _ in range(24):
            sub = Subscriber(server, key, session)
            subscribers.append(sub)
            if len({s.worker for s in subscribers}) == 2:
                break
        assert len({s.worker for s in subscribers}) == 2, "all streams landed on one worker"
        with server.client(key) as http:
            body = {"role": "user", "content": "edited"}
            assert http.put(f"/v1/sessions/{session}/messages/m1", json=body).status_code == 200
        with server.client(key) as http:
            assert http.delete(f"/v1/sessions/{session}/messages/m2").status_code == 204
        for sub in subscribers:
            assert _text(sub.wait_for(1, "message_updated")[0]["message"]) == "edited"
            assert sub.wait_for(1, "messages_deleted")[0]["ids"] == ["m2"]
    finally:
        for sub in subscribers:
            sub.close()


def _sessions_in(sub: Subscriber) -> set[str]:
    return {data["session_id"] for event, data in sub.events if "session_id" in data}


def test_the_session_list_streams_only_what_the_key_sees(server: Server) -> None:
    """``GET /v1/events``: sessions created, updated (renamed, messages appended) and deleted,
    through HTTP and by the library directly; an app key sees its app's sessions, a user-bound
    key only its user's, never another app's or another user's."""
    app, other_app = (f"list-{uuid.uuid4().hex[:6]}" for _ in range(2))
    app_key, u1_key, u2_key = server.key(app), server.key(app, "u1"), server.key(app, "u2")
    other_key = server.key(other_app)
    s1, s2, s3, s4 = (f"s-{uuid.uuid4().hex[:8]}" for _ in range(4))
    store = threadline.connect(server.db)
    subs = {
        name: Subscriber(server, key, None)
        for name, key in (("app", app_key), ("u1", u1_key), ("u2", u2_key), ("other", other_key))
    }
    try:
        with server.client(u1_key) as u1, server.client(u2_key) as u2:
            assert u1.post("/v1/sessions", json={"session_id": s1}).status_code == 201
            created = subs["u1"].wait_for(1, "created")[0]
            assert (created["session_id"], created["user_id"]) == (s1, "u1")
            assert created["generation"] > 0 and created["message_count"] == 0
            assert u2.post("/v1/sessions", json={"session_id": s2}).status_code == 201
            subs["u2"].wait_for(1, "created")
            store.create_session(app, s3, user_id="u1")  # the library, behind the server
            store.append_messages(
                app, s3, [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "x"}]}]
            )
            assert u1.patch(f"/v1/sessions/{s1}", json={"name": "Trip"}).status_code == 200
            deadline = time.monotonic() + 15
            while not any(
                d["session_id"] == s1 and d["name"] == "Trip"
                for d in subs["u1"].wait_for(1, "updated")
            ) or not any(
                d["session_id"] == s3 and d["message_count"] == 1
                for d in subs["u1"].wait_for(1, "updated") + subs["u1"].wait_for(1, "created")
            ):
                assert time.monotonic() < deadline, subs["u1"].events
                time.sleep(0.1)
            assert u1.delete(f"/v1/sessions/{s1}").status_code == 204
            store.delete_session(app, s2)
        with server.client(other_key) as other:
            assert other.post("/v1/sessions", json={"session_id": s4}).status_code == 201
        gone_u1 = subs["u1"].wait_for(1, "gone")[0]
        assert gone_u1 == {"session_id": s1, "generation": created["generation"], "user_id": "u1"}
        assert subs["u2"].wait_for(1, "gone")[0]["session_id"] == s2
        assert {d["session_id"] for d in subs["app"].wait_for(2, "gone")} == {s1, s2}
        subs["other"].wait_for(1, "created")
        time.sleep(1.0)  # a poll or two more: nothing else arrives
        assert _sessions_in(subs["app"]) == {s1, s2, s3}
        assert _sessions_in(subs["u1"]) == {s1, s3}
        assert _sessions_in(subs["u2"]) == {s2}
        assert _sessions_in(subs["other"]) == {s4}
        for sub in subs.values():
            assert len(sub.ids) == len(sub.events) + 1  # the subscribed id, then one per event
            assert not sub.ended.is_set()
        # resuming: after the first event, the rest again (this user's only); a stranger id: reset
        first_id = subs["u1"].ids[1]
        resumed = Subscriber(server, u1_key, None, last_event_id=first_id)
        bogus = Subscriber(server, u1_key, None, last_event_id="1:1")
        try:
            expected = [(e, d["session_id"]) for e, d in subs["u1"].events[1:]]
            deadline = time.monotonic() + 10
            while len(resumed.events) < len(expected):
                assert time.monotonic() < deadline, resumed.events
                time.sleep(0.05)
            assert [(e, d["session_id"]) for e, d in resumed.events] == expected
            assert bogus.wait_for(1, "reset")
        finally:
            resumed.close()
            bogus.close()
    finally:
        for sub in subs.values():
            sub.close()
        store.close()


def test_the_session_list_reaches_subscribers_on_every_worker(two_workers: Server) -> None:
    """PostgreSQL: through NOTIFY alone (the poll is out of the test's reach)."""
    server = two_workers
    app = f"list2-{uuid.uuid4().hex[:6]}"
    key = server.key(app)
    session = f"s-{uuid.uuid4().hex[:8]}"
    subscribers: list[Subscriber] = []
    try:
        for _ in range(24):
            subscribers.append(Subscriber(server, key, None))
            if len({s.worker for s in subscribers}) == 2:
                break
        assert len({s.worker for s in subscribers}) == 2, "all streams landed on one worker"
        with server.client(key) as http:
            assert http.post("/v1/sessions", json={"session_id": session}).status_code == 201
        for sub in subscribers:  # (one deleted before a worker looks is told only as gone)
            assert sub.wait_for(1, "created")[0]["session_id"] == session, sub.worker
        with server.client(key) as http:
            assert http.delete(f"/v1/sessions/{session}").status_code == 204
        for sub in subscribers:
            assert sub.wait_for(1, "gone")[0]["session_id"] == session, sub.worker
    finally:
        for sub in subscribers:
            sub.close()
