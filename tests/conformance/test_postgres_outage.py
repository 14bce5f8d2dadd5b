"""PostgreSQL outage: operations fail fast while the server is down, the first one after it is
back succeeds, and the ``threadline`` logger says each change of state once (psycopg_pool's
own warnings about our pools are silenced). Recovery time is measured by
``benchmarks/pg_outage.py``, not here.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import threadline
from threadline import StoreError
from threadline.messages import normalize_message

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _append(store: Any, text: str) -> None:
    store.append_messages("app", "s", [normalize_message({"role": "user", "content": text})])


def test_outage_fails_fast_recovers_at_once_and_logs_each_change_once(
    pg_dsn: str, pg_ctl: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with threadline.connect(pg_dsn) as store:
        _append(store, "before")
        pg_ctl.stop(mode="immediate")
        try:
            for i in range(5):  # the first may wait for the pool; the rest fail at once
                with pytest.raises(StoreError):
                    _append(store, f"during {i}")
                with pytest.raises(StoreError):
                    store.get_path("app", "s")
        finally:
            pg_ctl.start()
        _append(store, "after")  # first try: no back-off left to wait out
        texts = [m["parts"][0]["text"] for m in store.get_path("app", "s")]
        assert texts == ["before", "after"]

    ours = [r.getMessage() for r in caplog.records if r.name == "threadline"]
    assert len([m for m in ours if "unreachable" in m]) == 1, ours
    assert len([m for m in ours if "reachable again" in m]) == 1, ours
    assert not [r for r in caplog.records if r.name.startswith("psycopg")]
