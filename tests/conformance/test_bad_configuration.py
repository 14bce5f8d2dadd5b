"""Amendment 14: bad configuration is a typed error. ``connect()`` with an unknown option,
an invalid value or a wrong type raises ``InvalidArgumentError`` naming the option; a bare
path takes the ``?option=`` suffix a URL takes; a corrupt ``schema_version`` is a
``StoreError`` on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline.errors import InvalidArgumentError, StoreError


def _sqlite(tmp_path: Path, query: str) -> str:
    return f"sqlite:///{(tmp_path / 'c.db').as_posix()}?{query}"


@pytest.mark.parametrize(
    ("query", "option"),
    [
        ("unknown=1", "unknown"),
        ("synchronous=bogus", "synchronous"),
        ("mode=bogus", "mode"),
        ("busy_timeout=-1", "busy_timeout"),
        ("busy_timeout=abc", "busy_timeout"),
        ("busy_timeout=nan", "busy_timeout"),
        ("max_message_bytes=abc", "max_message_bytes"),
        ("max_message_bytes=-5", "max_message_bytes"),
        ("size_policy=bogus", "size_policy"),
        ("size_policy=error&size_policy=attach", "size_policy"),  # which one was meant?
    ],
)
def test_a_bad_url_option_names_itself(tmp_path: Path, query: str, option: str) -> None:
    for url in (_sqlite(tmp_path, query), f"{(tmp_path / 'c.db').as_posix()}?{query}"):
        with pytest.raises(InvalidArgumentError, match=option):
            threadline.connect(url)
    assert list(tmp_path.iterdir()) == []  # nothing created


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"size_policy": 5}, "size_policy"),
        ({"max_message_bytes": "10"}, "max_message_bytes"),
        ({"max_message_bytes": 1.5}, "max_message_bytes"),
        ({"read_only": "yes"}, "read_only"),
        ({"clock": 5}, "clock"),
    ],
)
def test_a_keyword_of_the_wrong_type_names_itself(options: dict[str, Any], option: str) -> None:
    with pytest.raises(InvalidArgumentError, match=option):
        threadline.connect(":memory:", **options)


@pytest.mark.parametrize("url", [5, None, b"/tmp/x.db", "", "/tmp/a\x00b.db", "mysql://x/y"])
def test_a_url_that_is_no_store_url_is_a_typed_error(url: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        threadline.connect(url)


def test_a_bare_path_takes_the_options_of_a_url(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    with threadline.connect(f"{path}?size_policy=error&max_message_bytes=5000") as store:
        message = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "x" * 6000}]}
        with pytest.raises(threadline.errors.MessageTooLargeError):
            store.append_messages("a", "s", [message])
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["agent.db"]
    with threadline.connect(f"{path}?mode=ro") as reader, pytest.raises(StoreError):
        reader.append_messages("a", "s", [{"id": "m", "role": "user", "parts": []}])
    with threadline.connect(":memory:?size_policy=truncate") as memory:
        assert memory._size_policy == "truncate"


def test_a_postgres_url_option_given_twice_names_itself(pg_dsn: str) -> None:
    joiner = "&" if "?" in pg_dsn else "?"
    for query in ("size_policy=error&size_policy=attach", "pool_max_size=2&pool_max_size=3"):
        with pytest.raises(InvalidArgumentError, match=query.split("=")[0]):
            threadline.connect(pg_dsn + joiner + query)


@pytest.mark.parametrize("option", ["min_size", "pool_min"])
def test_an_unknown_postgres_url_option_names_itself(pg_dsn: str, option: str) -> None:
    # libpq refuses options it does not know: a typo of pool_min_size is bad configuration.
    joiner = "&" if "?" in pg_dsn else "?"
    with pytest.raises(InvalidArgumentError, match=f"'{option}'.*pool_min_size"):
        threadline.connect(f"{pg_dsn}{joiner}{option}=1")
    with pytest.raises(StoreError, match="connect"):  # a server that is not there: no typo
        threadline.connect("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2")


@pytest.mark.parametrize("value", ["abc", "", "-1", "5.0", " 5"])
def test_a_corrupt_schema_version_is_a_store_error(file_store_url: str, value: str) -> None:
    threadline.connect(file_store_url).close()
    _set_schema_version(file_store_url, value)
    with pytest.raises(StoreError, match="schema_version"):
        threadline.connect(file_store_url)
    if file_store_url.startswith("sqlite:///"):
        with pytest.raises(StoreError, match="schema_version"):
            threadline.connect(file_store_url, read_only=True)


def _set_schema_version(url: str, value: str) -> None:
    sql = f"UPDATE tl_meta SET value = '{value}' WHERE key = 'schema_version'"
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute(sql)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[call-overload]


def test_size_options_leave_the_other_url_options_as_written(pg_dsn: str) -> None:
    # The test DSN names its schema with options=-csearch_path%3D...: libpq needs it encoded.
    joiner = "&" if "?" in pg_dsn else "?"
    with threadline.connect(f"{pg_dsn}{joiner}size_policy=error") as store:
        assert store._size_policy == "error"  # type: ignore[attr-defined]
        store.append_messages("a", "s", [{"id": "m", "role": "user", "parts": []}])
        assert store.get_path_ids("a", "s") == ["m"]
