"""Conformance (PostgreSQL): attachments shared by writers running at the same time.

Two stores of one database. ``m1`` (session s1) is the last message using an image; one
transaction deletes it (collecting the image) while another appends ``m2`` (session s2) using
the same image. Each is held inside its transaction, before its commit, while the other runs;
whichever goes first, ``m2`` must read back whole and the image must stay stored exactly once.
(A writer that found the image stored used to add its reference without a lock, so a
collector that had not seen that reference yet deleted the image: ``m2`` was committed but
could never be read again.) And two updates swapping two images between messages must not
deadlock.
"""

from __future__ import annotations

import base64
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import threadline

URL = "data:image/png;base64," + base64.b64encode(random.Random(7).randbytes(300_000)).decode()


def _message(mid: str) -> dict[str, Any]:
    part = {"type": "file", "mediaType": "image/png", "url": URL}
    return {"id": mid, "role": "user", "parts": [part]}


@pytest.fixture
def stores(pg_dsn: str) -> Iterator[tuple[Any, Any]]:
    first, second = threadline.connect(pg_dsn), threadline.connect(pg_dsn)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def _hold(store: Any, method: str, inside: threading.Event, go: threading.Event) -> None:
    """Make ``store.<method>`` wait for ``go`` after it ran, still inside its transaction."""
    original: Callable[..., Any] = getattr(store, method)

    def held(*args: Any) -> None:
        original(*args)
        inside.set()
        assert go.wait(20)

    setattr(store, method, held)


@pytest.mark.postgres
@pytest.mark.parametrize("first", ["append", "collect"])
def test_an_attachment_reused_while_collected_stays_readable(
    stores: tuple[Any, Any], first: str
) -> None:
    collector, writer = stores
    collector.append_messages("app", "s1", [_message("m1")])
    inside, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def run(call: Callable[[], Any]) -> threading.Thread:
        def target() -> None:
            try:
                call()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    def append() -> None:
        writer.append_messages("app", "s2", [_message("m2")])

    def collect() -> None:
        assert collector.delete_messages("app", "s1", ["m1"]) == 1

    held, other = (append, collect) if first == "append" else (collect, append)
    _hold(writer if first == "append" else collector,
          "_put_blobs" if first == "append" else "_drop_refs", inside, go)  # fmt: skip
    threads = [run(held)]
    assert inside.wait(20)
    threads.append(run(other))
    threads[1].join(1)  # the second waits for the first (or would have gone wrong by now)
    go.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert collector.get_message("app", "s2", "m2")["parts"] == _message("m2")["parts"]
    rows = collector._read(
        "count", lambda tx: tx.all("SELECT count(*) FROM tl_attachments WHERE app = 'app'")
    )
    assert rows[0][0] == 1


def _image_message(mid: str, seed: int) -> dict[str, Any]:
    data = base64.b64encode(random.Random(seed).randbytes(300_000)).decode()
    part = {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64," + data}
    return {"id": mid, "role": "user", "parts": [part]}


@pytest.mark.postgres
def test_two_updates_swapping_attachments_do_not_deadlock(stores: tuple[Any, Any]) -> None:
    """m1 goes from image A to B while m2 goes from B to A: the first update holds both
    attachments' locks from its start, so the second waits instead of closing a cycle (which
    the server would break after ``deadlock_timeout``, rolling one back to be rerun)."""
    first, second = stores
    first.append_messages("app", "s1", [_image_message("m1", 1)])
    first.append_messages("app", "s2", [_image_message("m2", 2)])
    inside, go = threading.Event(), threading.Event()
    _hold(first, "_drop_refs", inside, go)
    errors: list[BaseException] = []
    runs: list[str] = []  # a deadlock is rolled back and rerun: it would show as a third run
    for store in stores:
        counted = store._drop_refs

        def counting(*args: Any, counted: Any = counted) -> None:
            runs.append(args[2])
            counted(*args)

        store._drop_refs = counting

    def update(store: Any, session: str, mid: str, seed: int) -> None:
        try:
            store.update_message("app", session, _image_message(mid, seed))
        except BaseException as exc:
            errors.append(exc)

    one = threading.Thread(target=update, args=(first, "s1", "m1", 2))
    one.start()
    assert inside.wait(20)
    two = threading.Thread(target=update, args=(second, "s2", "m2", 1))
    two.start()
    two.join(1)
    go.set()
    one.join(30)
    two.join(30)
    assert not errors, errors
    assert sorted(runs) == ["s1", "s2"], f"rerun after a deadlock: {runs}"
    assert first.get_message("app", "s1", "m1")["parts"] == _image_message("m1", 2)["parts"]
    assert first.get_message("app", "s2", "m2")["parts"] == _image_message("m2", 1)["parts"]


@pytest.mark.postgres
def test_two_batches_using_two_images_in_opposite_orders_do_not_deadlock(
    stores: tuple[Any, Any],
) -> None:
    """Batches [B, A] and [A, B] of stored images, appended at once to two sessions: the first
    locks both images before its first message, so the second waits instead of closing a cycle."""
    first, second = stores
    first.append_messages("app", "s0", [_image_message("a", 1), _image_message("b", 2)], None)
    inside, go = threading.Event(), threading.Event()
    _hold(first, "_put_blobs", inside, go)
    errors: list[BaseException] = []
    runs: list[str] = []
    counted = second._put_blobs

    def counting(*args: Any) -> None:
        runs.append(args[3])
        counted(*args)

    second._put_blobs = counting

    def append(store: Any, session: str, seeds: list[int]) -> None:
        batch = [_image_message(f"{session}-{seed}", seed) for seed in seeds]
        try:
            store.append_messages("app", session, batch)
        except BaseException as exc:
            errors.append(exc)

    one = threading.Thread(target=append, args=(first, "s1", [2, 1]))
    one.start()
    assert inside.wait(20)
    two = threading.Thread(target=append, args=(second, "s2", [1, 2]))
    two.start()
    two.join(1)
    go.set()
    one.join(30)
    two.join(30)
    assert not errors, errors
    assert runs == ["s2-1", "s2-2"], f"rerun after a deadlock: {runs}"
    for session, seed in (("s1", 1), ("s1", 2), ("s2", 1), ("s2", 2)):
        got = first.get_message("app", session, f"{session}-{seed}")["parts"]
        assert got == _image_message("x", seed)["parts"]
