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
from collections.abc import Callable
from typing import Any

import pytest

URL = "data:image/png;base64," + base64.b64encode(random.Random(7).randbytes(300_000)).decode()


def _message(mid: str) -> dict[str, Any]:
    part = {"type": "file", "mediaType": "image/png", "url": URL}
    return {"id": mid, "role": "user", "parts": [part]}


def _hold(store: Any, method: str, inside: threading.Event, go: threading.Event) -> None:
    """Make ``store.<method>`` wait for ``go`` after it ran, still inside its transaction."""
    original: Callable[..., Any] = getattr(store, method)

    def held(*args: Any) -> None:
        original(*args)
        inside.set()
        assert go.wait(20)

    setattr(store, method, held)


def _held_then_waiting(
    first: Callable[[], object],
    second: Callable[[], object],
    inside: threading.Event,
    go: threading.Event,
) -> list[BaseException]:
    """Run ``first`` in a thread until it is held (``inside``), start ``second`` and give it a
    second to reach whatever it waits for, then release ``first`` (``go``); wait for both and
    return what they raised."""
    errors: list[BaseException] = []

    def guarded(call: Callable[[], object]) -> None:
        try:
            call()
        except BaseException as exc:
            errors.append(exc)

    one = threading.Thread(target=guarded, args=(first,))
    one.start()
    assert inside.wait(20)
    two = threading.Thread(target=guarded, args=(second,))
    two.start()
    two.join(1)
    go.set()
    one.join(30)
    two.join(30)
    return errors


@pytest.mark.postgres
@pytest.mark.parametrize("first", ["append", "collect"])
def test_an_attachment_reused_while_collected_stays_readable(
    pg_stores: tuple[Any, Any], first: str
) -> None:
    collector, writer = pg_stores
    collector.append_messages("app", "s1", [_message("m1")])
    inside, go = threading.Event(), threading.Event()

    def append() -> None:
        writer.append_messages("app", "s2", [_message("m2")])

    def collect() -> None:
        assert collector.delete_messages("app", "s1", ["m1"]) == 1

    held, other = (append, collect) if first == "append" else (collect, append)
    _hold(writer if first == "append" else collector,
          "_put_blobs" if first == "append" else "_drop_refs", inside, go)  # fmt: skip
    errors = _held_then_waiting(held, other, inside, go)
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
def test_two_updates_swapping_attachments_do_not_deadlock(pg_stores: tuple[Any, Any]) -> None:
    """m1 goes from image A to B while m2 goes from B to A: the first update holds both
    attachments' locks from its start, so the second waits instead of closing a cycle (which
    the server would break after ``deadlock_timeout``, rolling one back to be rerun)."""
    first, second = pg_stores
    first.append_messages("app", "s1", [_image_message("m1", 1)])
    first.append_messages("app", "s2", [_image_message("m2", 2)])
    inside, go = threading.Event(), threading.Event()
    _hold(first, "_drop_refs", inside, go)
    runs: list[str] = []  # a deadlock is rolled back and rerun: it would show as a third run
    for store in pg_stores:
        counted = store._drop_refs

        def counting(*args: Any, counted: Any = counted) -> None:
            runs.append(args[2])
            counted(*args)

        store._drop_refs = counting

    errors = _held_then_waiting(
        lambda: first.update_message("app", "s1", _image_message("m1", 2)),
        lambda: second.update_message("app", "s2", _image_message("m2", 1)),
        inside,
        go,
    )
    assert not errors, errors
    assert sorted(runs) == ["s1", "s2"], f"rerun after a deadlock: {runs}"
    assert first.get_message("app", "s1", "m1")["parts"] == _image_message("m1", 2)["parts"]
    assert first.get_message("app", "s2", "m2")["parts"] == _image_message("m2", 1)["parts"]


@pytest.mark.postgres
def test_two_batches_using_two_images_in_opposite_orders_do_not_deadlock(
    pg_stores: tuple[Any, Any],
) -> None:
    """Batches [B, A] and [A, B] of stored images, appended at once to two sessions: the first
    locks both images before its first message, so the second waits instead of closing a cycle."""
    first, second = pg_stores
    first.append_messages("app", "s0", [_image_message("a", 1), _image_message("b", 2)], None)
    inside, go = threading.Event(), threading.Event()
    _hold(first, "_put_blobs", inside, go)
    runs: list[str] = []
    counted = second._put_blobs

    def counting(*args: Any) -> None:
        runs.append(args[3])
        counted(*args)

    second._put_blobs = counting

    def append(store: Any, session: str, seeds: list[int]) -> None:
        store.append_messages(
            "app", session, [_image_message(f"{session}-{seed}", seed) for seed in seeds]
        )

    errors = _held_then_waiting(
        lambda: append(first, "s1", [2, 1]), lambda: append(second, "s2", [1, 2]), inside, go
    )
    assert not errors, errors
    assert runs == ["s2-1", "s2-2"], f"rerun after a deadlock: {runs}"
    for session, seed in (("s1", 1), ("s1", 2), ("s2", 1), ("s2", 2)):
        got = first.get_message("app", session, f"{session}-{seed}")["parts"]
        assert got == _image_message("x", seed)["parts"]
