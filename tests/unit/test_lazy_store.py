"""``connect_lazily``: what it returns, what its ``repr`` shows, what it tells apart unopened."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadline.store import LazyStore, SQLiteStore, Store, _is_sqlite, connect, connect_lazily


def test_connect_lazily_returns_the_exported_lazy_store(tmp_path: Path) -> None:
    store = connect_lazily(tmp_path / "a.db")
    assert type(store) is LazyStore and isinstance(store, Store)
    assert store.opened is False
    assert store.count_sessions("default") == 0 and store.opened is True
    store.close()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:s3cret@db.example:5432/prod",
        "postgres://app:s3cret@db.example/prod?sslmode=require",
        "postgresql://app@db.example/prod?password=s3cret",
        "postgresql://app@db.example/prod?sslmode=require&password=s3cret&connect_timeout=3",
    ],
)
def test_a_lazy_store_repr_never_shows_the_password(url: str) -> None:
    store = connect_lazily(url)  # nothing is opened: no server is needed
    shown = repr(store)
    assert "s3cret" not in shown and str(store) == shown
    assert "***" in shown and "db.example" in shown and "app" in shown


def test_a_lazy_store_repr_keeps_urls_without_a_password(tmp_path: Path) -> None:
    path = str(tmp_path / "user:name@host.db")  # a file name that looks like credentials
    assert repr(connect_lazily(path)) == f"LazyStore({path!r}, not opened)"
    url = "sqlite:///agent.db"
    assert repr(connect_lazily(url)) == f"LazyStore({url!r}, not opened)"


def test_sqlite_is_told_apart_without_opening(tmp_path: Path) -> None:
    file = tmp_path / "a.db"
    assert _is_sqlite(str(file)) and _is_sqlite(file) and _is_sqlite("sqlite:///x.db")
    assert not _is_sqlite("postgresql://db/x") and not _is_sqlite("POSTGRES://db/x")
    lazy_sqlite, lazy_pg = connect_lazily(file), connect_lazily("postgresql://app:pw@db/x")
    assert _is_sqlite(lazy_sqlite) and not _is_sqlite(lazy_pg)
    assert not lazy_sqlite.opened and not lazy_pg.opened
    with connect(file) as opened:
        assert isinstance(opened, SQLiteStore) and _is_sqlite(opened)
    lazy_sqlite.close()
