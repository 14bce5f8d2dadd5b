"""Read replicas (integrations.md §20, api.md clarification 30): reads are served by a
current standby, a store reads its own writes at once, a lagging or stopped standby is
skipped, and the security-relevant reads stay on the primary.

The standby is asynchronous (clarification 30): pausing its replay or stopping it never
blocks the primary's commits. A paused replay makes routing visible: a write made through
another store object is missing from a read the standby served.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import threadline
from threadline import InvalidArgumentError, StoreError
from threadline.messages import normalize_message
from threadline.store.postgres._replicas import READ_AFTER, WRITTEN

pytestmark = [pytest.mark.postgres]


def _replicated(pair: Any, lag: float) -> Any:
    return threadline.connect(pair.primary, replicas=[pair.replica], max_replica_lag=lag)


def _say(store: Any, session_id: str, text: str, app: str = "app") -> None:
    store.append_messages(app, session_id, [normalize_message({"role": "user", "content": text})])


def _seen(store: Any, app: str = "app") -> set[str]:
    return {info.id for info in store.list_sessions(app).sessions}


def _found(store: Any, word: str, app: str = "app") -> set[str]:
    return {hit.session_id for hit in store.search_messages(app, word)}


def _texts(store: Any, session_id: str, app: str = "app") -> list[str]:
    return [m["parts"][0]["text"] for m in store.get_path(app, session_id)]


def test_reads_are_served_by_a_current_standby(pg_pair: Any) -> None:
    with (
        _replicated(pg_pair, 60) as reader,
        threadline.connect(pg_pair.primary) as writer,
    ):
        _say(writer, "old", "zebra before")
        pg_pair.caught_up()
        assert _seen(reader) == {"old"}
        pg_pair.pause()
        _say(writer, "new", "zebra after")
        _say(writer, "old", "zebra again")
        # Served by the paused standby (within max_replica_lag): the new writes are missing.
        assert _seen(reader) == {"old"}
        assert _found(reader, "zebra") == {"old"}
        assert _texts(reader, "old") == ["zebra before"]
        assert reader.count_sessions("app") == 1
        # Ownership and API keys always read the primary.
        assert reader.get_session("app", "new") is not None
        pg_pair.resume()
        pg_pair.caught_up()
        assert _seen(reader) == {"old", "new"}
        assert _texts(reader, "old") == ["zebra before", "zebra again"]


def test_a_store_reads_its_own_writes_while_replay_is_paused(pg_pair: Any) -> None:
    with _replicated(pg_pair, 60) as store:
        _say(store, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(store) == {"s0"}
        pg_pair.pause()
        _say(store, "s1", "quokka one")
        assert _seen(store) == {"s0", "s1"}
        assert _found(store, "quokka") == {"s1"}
        assert _texts(store, "s1") == ["quokka one"]
        store.update_state("app", "s1", None, {"k": 1})
        assert store.get_state("app", "s1", None)["k"] == 1
        _say(store, "s1", "quokka two")
        assert _texts(store, "s1") == ["quokka one", "quokka two"]
        # Through a session handle (generation= checks: the primary) as well.
        assert len(store.session("app", "s1").get_path()) == 2


def test_read_after_a_position_sees_another_objects_write(pg_pair: Any) -> None:
    """What X-Threadline-Read-After carries between workers: a write's position."""
    with (
        _replicated(pg_pair, 60) as one,
        _replicated(pg_pair, 60) as two,
    ):
        _say(one, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(two) == {"s0"}
        pg_pair.pause()
        cell: list[int] = []
        token = WRITTEN.set(cell)
        try:
            _say(one, "s1", "written by one")
        finally:
            WRITTEN.reset(token)
        assert len(cell) == 1
        assert _seen(two) == {"s0"}  # no position given: the standby answers
        token = READ_AFTER.set(cell[0])
        try:
            assert _seen(two) == {"s0", "s1"}
        finally:
            READ_AFTER.reset(token)


def test_a_lagging_standby_is_skipped(pg_pair: Any) -> None:
    with (
        _replicated(pg_pair, 0.5) as reader,
        threadline.connect(pg_pair.primary) as writer,
    ):
        _say(writer, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(reader) == {"s0"}
        pg_pair.pause()
        _say(writer, "s1", "while paused")
        time.sleep(1.2)  # the standby is now more than max_replica_lag behind
        assert _seen(reader) == {"s0", "s1"}
        assert _found(reader, "paused") == {"s1"}


def test_a_stopped_standby_is_skipped_and_used_again(pg_pair: Any, replica_ctl: Any) -> None:
    with (
        _replicated(pg_pair, 60) as reader,
        threadline.connect(pg_pair.primary) as writer,
    ):
        _say(writer, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(reader) == {"s0"}
        replica_ctl.stop()
        try:
            _say(writer, "s1", "while stopped")
            for _ in range(3):  # never a StoreError: the primary answers
                assert _seen(reader) == {"s0", "s1"}
                assert _found(reader, "stopped") == {"s1"}
            # A store opened while its replica is down works too.
            with threadline.connect(pg_pair.primary, replicas=[pg_pair.replica]) as late:
                assert _seen(late) == {"s0", "s1"}
        finally:
            replica_ctl.start()
        pg_pair.caught_up()
        # Used again within 10 s of its recovery: a paused replay shows reads go there.
        pg_pair.pause()
        _say(writer, "s2", "after restart")
        deadline = time.monotonic() + 10
        while _seen(reader) != {"s0", "s1"}:
            assert time.monotonic() < deadline, "the standby was not used again within 10 s"
            time.sleep(0.2)


def test_bad_replica_options_are_refused_before_any_io() -> None:
    bad: list[dict[str, Any]] = [
        {"replicas": "postgresql://r/db"},
        {"replicas": ["mysql://r/db"]},
        {"replicas": [3]},
        {"max_replica_lag": -1},
        {"max_replica_lag": "5"},
        {"max_replica_lag": True},
    ]
    for options in bad:
        with pytest.raises(InvalidArgumentError):
            threadline.connect("postgresql://nowhere.invalid/db", **options)
    with pytest.raises(InvalidArgumentError, match="PostgreSQL"):
        threadline.connect(":memory:", replicas=["postgresql://r/db"])
    for url in ("?max_replica_lag=x", "?max_replica_lag=1&max_replica_lag=2", "?replica=x"):
        with pytest.raises(InvalidArgumentError):
            threadline.connect("postgresql://nowhere.invalid/db" + url)


def test_replica_url_parameters(pg_pair: Any) -> None:
    from urllib.parse import quote

    url = f"{pg_pair.primary}&replica={quote(pg_pair.replica, safe='')}&max_replica_lag=60"
    with (
        threadline.connect(url) as reader,
        threadline.connect(pg_pair.primary) as writer,
    ):
        assert "replica" not in reader.dsn  # type: ignore[attr-defined]
        _say(writer, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(reader) == {"s0"}
        pg_pair.pause()
        _say(writer, "s1", "unseen")
        assert _seen(reader) == {"s0"}


def test_a_down_replica_never_raises(pg_dsn: str) -> None:
    with threadline.connect(pg_dsn, replicas=["postgresql://postgres@127.0.0.1:1/x"]) as store:
        _say(store, "s", "hello")
        assert _seen(store) == {"s"}
        assert _found(store, "hello") == {"s"}
    with pytest.raises(StoreError):
        store.list_sessions("app")


def test_event_read_back_reads_the_primary(pg_pair: Any) -> None:
    """What the HTTP event streams read back after the change log (``on_primary``) comes
    from the primary, never from a replica behind it."""
    from threadline.internal import on_primary

    with _replicated(pg_pair, 60) as reader, threadline.connect(pg_pair.primary) as writer:
        _say(writer, "s0", "warm up")
        pg_pair.caught_up()
        assert _seen(reader) == {"s0"}
        pg_pair.pause()
        _say(writer, "s1", "unseen on the standby")
        assert _seen(reader) == {"s0"}
        with on_primary():
            assert _seen(reader) == {"s0", "s1"}
            assert _texts(reader, "s1") == ["unseen on the standby"]
