"""The SQL dialect interface is abstract: a backend that misses a hook fails when it is built,
not later when the hook is first needed."""

from __future__ import annotations

import pytest

from threadline.store._sql import SQLStore
from threadline.store.postgres import PostgresStore
from threadline.store.sqlite import SQLiteStore


def test_a_dialect_missing_hooks_cannot_be_constructed() -> None:
    class Partial(SQLStore):
        def close(self) -> None:
            pass

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]


def test_both_backends_implement_every_hook() -> None:
    assert not SQLiteStore.__abstractmethods__
    assert not PostgresStore.__abstractmethods__
    assert {"_write", "_read", "_search_message_rows"} <= SQLStore.__abstractmethods__
