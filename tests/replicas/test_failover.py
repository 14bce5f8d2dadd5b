"""Failover through a multi-host URL (integrations.md §20): the primary dies, the synchronous
standby is promoted, and the same store object, never reopened, keeps appending.

- while no server is writable, appends fail with ``StoreError``, none taking more than 8 s;
- appends succeed again within 10 s of the promotion;
- every append that returned (``synchronous_commit=on`` with a synchronous standby) is on the
  promoted server.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import threadline
from threadline import StoreError
from threadline.messages import normalize_message

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_a_promoted_standby_takes_over_with_every_acknowledged_append(
    failover_pair: Any,
) -> None:
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    slowest = 0.0
    resumed_at: list[float] = []
    promoted_at: list[float] = []
    stop = threading.Event()

    with threadline.connect(failover_pair.url) as store:

        def append_forever() -> None:
            nonlocal slowest
            n = 0
            while not stop.is_set():
                n += 1
                message = normalize_message({"id": f"m{n}", "role": "user", "content": str(n)})
                started = time.monotonic()
                try:
                    store.append_messages("app", "s", [message])
                except StoreError as exc:
                    failures.append(exc)
                    time.sleep(0.05)
                except BaseException as exc:  # anything else is a defect
                    failures.append(exc)
                    raise
                else:
                    acknowledged.append(message["id"])
                    if promoted_at and not resumed_at:
                        resumed_at.append(time.monotonic())
                finally:
                    slowest = max(slowest, time.monotonic() - started)

        writer = threading.Thread(target=append_forever, daemon=True)
        writer.start()
        try:
            while len(acknowledged) < 20:
                time.sleep(0.01)
            failover_pair.ctl("primary", "-w", "-t", "30", "-m", "immediate", "stop")
            time.sleep(6.0)  # longer than a call may wait: appends fail meanwhile
            failover_pair.ctl("standby", "-w", "-t", "30", "promote")
            promoted_at.append(time.monotonic())
            deadline = promoted_at[0] + 15
            while not resumed_at and time.monotonic() < deadline:
                time.sleep(0.05)
            before = len(acknowledged)
            while len(acknowledged) < before + 20 and time.monotonic() < deadline + 5:
                time.sleep(0.01)
        finally:
            stop.set()
            writer.join(timeout=30)

        kinds = sorted({f"{type(exc).__name__}: {exc}"[:200] for exc in failures})
        assert resumed_at, f"appends did not resume after the promotion; failures: {kinds}"
        assert resumed_at[0] - promoted_at[0] < 10, (resumed_at[0] - promoted_at[0], kinds)
        assert slowest < 8, f"a call took {slowest:.1f} s"
        assert failures, f"no append failed while no server was writable (slowest: {slowest:.1f} s)"
        assert all(isinstance(exc, StoreError) for exc in failures), kinds
        with threadline.connect(failover_pair.dsn("standby")) as promoted:
            stored = {m["id"] for m in promoted.get_path("app", "s")}
        assert set(acknowledged) <= stored, sorted(set(acknowledged) - stored)[:5]


def test_a_connection_the_dead_primary_left_in_the_pool_fails_the_next_append_fast(
    failover_pair: Any,
) -> None:
    # The idle pooled connection fails its check: psycopg_pool's own check loop would wait
    # its whole timeout (10 s) for a connection no server gives, or through the outage.
    with threadline.connect(failover_pair.url) as store:
        message = normalize_message({"id": "m0", "role": "user", "content": "0"})
        store.append_messages("app", "s", [message])
        failover_pair.ctl("primary", "-w", "-t", "30", "-m", "immediate", "stop")
        started = time.monotonic()
        with pytest.raises(StoreError):
            store.append_messages("app", "s", [{**message, "id": "m1"}])
        assert time.monotonic() - started < 8
