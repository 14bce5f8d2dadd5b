"""Conformance: opening stores.

URL forms, ``:memory:`` independence, context managers, ``Session.create(url)`` owning its store,
lazy table creation, schema versioning and reopening a file store.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import threadline
from threadline import Session
from threadline.store import Store


def msg(mid: str, text: str | None = None) -> dict[str, Any]:
    return {"id": mid, "role": "user", "parts": [{"type": "text", "text": text or f"text {mid}"}]}


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in messages]


def write(store_or_url: Any, *mids: str, session_id: str = "s1") -> None:
    s = Session.create(store_or_url).for_session(session_id)
    for mid in mids:
        s.append_message(msg(mid))


def read(store_or_url: Any, session_id: str = "s1") -> list[str]:
    return ids(Session.create(store_or_url).for_session(session_id).get_history())


def tables(path: Path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()


# --------------------------------------------------------------------------- URL forms


def test_connect_returns_a_store_usable_as_context_manager() -> None:
    with threadline.connect(":memory:") as store:
        assert isinstance(store, Store)
        write(store, "m1", "m2")
        assert read(store) == ["m1", "m2"]


def test_memory_stores_are_independent() -> None:
    with threadline.connect(":memory:") as a, threadline.connect(":memory:") as b:
        write(a, "only-a")
        assert read(a) == ["only-a"]
        assert read(b) == []
        write(b, "only-b")
        assert read(a) == ["only-a"]


def test_sqlite_url_with_three_slashes_is_relative_to_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with threadline.connect("sqlite:///rel.db") as store:
        write(store, "m1")
    assert (tmp_path / "rel.db").is_file()
    with threadline.connect("rel.db") as store:  # bare relative path: the same file
        assert read(store) == ["m1"]
    with threadline.connect(str(tmp_path / "rel.db")) as store:  # bare absolute path
        assert read(store) == ["m1"]


def test_sqlite_url_with_four_slashes_is_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    target = tmp_path / "abs.db"
    url = "sqlite:///" + str(target)
    assert url.startswith("sqlite:////")
    with threadline.connect(url) as store:
        write(store, "m1")
    assert target.is_file()
    assert not any(elsewhere.iterdir())
    with threadline.connect(str(target)) as store:
        assert read(store) == ["m1"]


def test_bare_path_creates_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with threadline.connect("bare.db") as store:
        write(store, "m1")
    assert (tmp_path / "bare.db").is_file()
    with threadline.connect("sqlite:///bare.db") as store:
        assert read(store) == ["m1"]


def test_synchronous_full_option_is_accepted(tmp_path: Path) -> None:
    url = "sqlite:///" + str(tmp_path / "full.db") + "?synchronous=full"
    with threadline.connect(url) as store:
        write(store, "m1")
        assert read(store) == ["m1"]
    assert (tmp_path / "full.db").is_file()
    with threadline.connect(str(tmp_path / "full.db")) as store:
        assert read(store) == ["m1"]


def test_connect_read_only_keyword(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    with threadline.connect(str(path)) as store:
        write(store, "m1")
    for url in (str(path), f"sqlite:///{path}", f"sqlite:///{path}?mode=ro"):
        with threadline.connect(url, read_only=True) as store:
            assert read(store) == ["m1"]
            with pytest.raises(threadline.StoreError):
                write(store, "m2")
    with threadline.connect(str(path)) as store:
        assert read(store) == ["m1"]


def test_a_read_only_open_names_a_missing_or_foreign_schema(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(threadline.StoreError, match="no threadline schema"):
        threadline.connect(str(empty), read_only=True)
    assert empty.read_bytes() == b""
    newer = tmp_path / "newer.db"
    with threadline.connect(str(newer)) as store:
        write(store, "m1")
    con = sqlite3.connect(newer)
    con.execute("UPDATE tl_meta SET value = '999' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(threadline.StoreError, match="newer than this threadline"):
        threadline.connect(str(newer), read_only=True)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://nobody@127.0.0.1:9/none",
        "postgres://nobody@127.0.0.1:9/none",
        ":memory:",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///x.db?mode=rw",
    ],
)
def test_connect_read_only_is_refused_where_it_cannot_hold(url: str) -> None:
    with pytest.raises(threadline.InvalidArgumentError):
        threadline.connect(url, read_only=True)


def test_connect_read_only_must_be_a_bool() -> None:
    with pytest.raises(threadline.InvalidArgumentError):
        threadline.connect(":memory:", read_only="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["mysql://user@host/db", "redis://localhost", "foo://bar",
                                 "http://example.com/db"])
def test_unknown_scheme_raises_value_error_naming_supported(url: str) -> None:
    with pytest.raises(ValueError) as info:
        threadline.connect(url)
    text = str(info.value).lower()
    assert "sqlite" in text
    assert "postgres" in text


@pytest.mark.postgres
def test_postgres_scheme_alias(pg_dsn: str) -> None:
    store_url = pg_dsn  # a fresh schema from tests/conftest.py
    assert store_url.startswith("postgresql://")
    with threadline.connect(store_url) as store:
        write(store, "m1", "m2", session_id="alias")
    alias = "postgres://" + store_url[len("postgresql://"):]
    with threadline.connect(alias) as store:
        assert isinstance(store, threadline.PostgresStore)
        assert read(store, "alias") == ["m1", "m2"]


def test_postgres_store_imports_without_psycopg() -> None:
    # a fresh interpreter where psycopg cannot be imported (None in sys.modules blocks it)
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "sys.modules['psycopg_pool'] = None\n"
        "import threadline\n"
        "from threadline import PostgresStore, ThreadlineError\n"
        "try:\n"
        "    threadline.connect('postgresql://nobody@127.0.0.1:9/none')\n"
        "except ThreadlineError as exc:\n"
        "    print('raised:', exc)\n"
        "else:\n"
        "    print('no error')\n"
    )
    src = str(Path(threadline.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("raised:"), done.stdout
    assert "threadline[postgres]" in done.stdout


def test_sqlite_file_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    with threadline.connect(str(path)) as store:
        write(store, "m1")
        con = sqlite3.connect(path)
        try:
            assert con.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
        finally:
            con.close()


def test_store_classes_are_exported() -> None:
    import threadline.store as store_pkg

    assert threadline.SQLiteStore is store_pkg.SQLiteStore
    assert threadline.PostgresStore is store_pkg.PostgresStore
    assert isinstance(threadline.connect(":memory:"), threadline.SQLiteStore)


def test_backend_class_matches_url(store: Any, store_url: str) -> None:
    is_pg = store_url.startswith(("postgres://", "postgresql://"))
    expected = threadline.PostgresStore if is_pg else threadline.SQLiteStore
    assert isinstance(store, expected)
    assert isinstance(store, Store)


# --------------------------------------------------------------------------- Session.create(url)


def test_session_create_with_url_owns_the_store(tmp_path: Path) -> None:
    path = tmp_path / "owned.db"
    url = "sqlite:///" + str(path)
    session = Session.create(url).for_session("s1")
    session.append_message(msg("m1"))
    session.append_message(msg("m2"))
    session.close()
    # a clean close of the last connection checkpoints and removes the WAL file
    assert not Path(str(path) + "-wal").exists()
    with Session.create(url).for_session("s1") as again:
        assert ids(again.get_history()) == ["m1", "m2"]
        again.append_message(msg("m3"))
    assert not Path(str(path) + "-wal").exists()
    with threadline.connect(str(path)) as store:
        assert read(store) == ["m1", "m2", "m3"]


def test_session_create_with_url_any_backend(store_url: str) -> None:
    with Session.create(store_url).for_session("owned") as session:
        session.append_message(msg("m1"))
        assert ids(session.get_history()) == ["m1"]
    if store_url != ":memory:":
        with Session.create(store_url).for_session("owned") as session:
            assert ids(session.get_history()) == ["m1"]


def test_closing_a_session_leaves_a_passed_store_open(store: Any) -> None:
    session = Session.create(store).for_session("s1")
    session.append_message(msg("m1"))
    session.close()
    assert read(store) == ["m1"]
    write(store, "m2")
    assert read(store) == ["m1", "m2"]


# --------------------------------------------------------------------------- schema


def test_tables_are_created_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    with threadline.connect(str(path)) as store:
        assert read(store) == []  # reading a brand-new file works
        write(store, "m1")
    names = tables(path)
    assert any(name.startswith("tl_") for name in names), names


def _schema_version(path: Path) -> int | None:
    con = sqlite3.connect(path)
    try:
        user_version = con.execute("PRAGMA user_version").fetchone()[0]
        if user_version:
            return int(user_version)
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            if "schema" in name or "meta" in name or "version" in name:
                cols = [r[1] for r in con.execute(f'PRAGMA table_info("{name}")')]
                col = next((c for c in cols if "version" in c), None)
                if col is not None:
                    row = con.execute(f'SELECT MAX("{col}") FROM "{name}"').fetchone()
                elif {"key", "value"} <= set(cols):  # a key/value meta table
                    row = con.execute(
                        f"SELECT value FROM \"{name}\" WHERE key LIKE '%version%'").fetchone()
                else:
                    continue
                if row and row[0] is not None:
                    return int(row[0])
        return None
    finally:
        con.close()


def test_schema_version_is_recorded_and_reopen_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "versioned.db"
    with threadline.connect(str(path)) as store:
        write(store, "m1", "m2")
        Session.create(store).for_session("s1").add_compaction("sum", "m1", "m2")
    version = _schema_version(path)
    assert version is not None and version >= 1
    for _ in range(2):  # reopening runs no destructive upgrade
        with threadline.connect("sqlite:///" + str(path)) as store:
            s = Session.create(store).for_session("s1")
            assert s.get_path_length() == 2
            assert [c.summary for c in s.get_compactions()] == ["sum"]
            assert [h.id for h in s.search("text")] == ["m2", "m1"]
    assert _schema_version(path) == version


def test_reopen_file_store_keeps_head_and_branches(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as store:
        s = Session.create(store).for_session("reopen")
        for mid in ("m1", "m2", "m3"):
            s.append_message(msg(mid))
        s.append_message(msg("b2"), "m1")
        s.checkout("m2")
    with threadline.connect(file_store_url) as store:
        s = Session.create(store).for_session("reopen")
        assert ids(s.get_history()) == ["m1", "m2"]
        assert ids(s.get_branches("m1")) == ["m2", "b2"]
        assert s.get_path_length("m3") == 3


def test_two_stores_on_one_database_see_each_others_writes(file_store_url: str) -> None:
    with threadline.connect(file_store_url) as a, threadline.connect(file_store_url) as b:
        sa = Session.create(a).for_session("shared")
        sb = Session.create(b).for_session("shared")
        sa.append_message(msg("m1", "from store a"))
        assert ids(sb.get_history()) == ["m1"]
        sb.append_message(msg("m2"))  # AUTO: the head written through store a
        sa.append_message(msg("m3"))
        assert ids(sa.get_history()) == ["m1", "m2", "m3"]
        assert ids(sb.get_history()) == ["m1", "m2", "m3"]
        sb.checkout("m1")
        assert sa.get_latest_leaf()["id"] == "m1"
        assert [h.id for h in sb.search("store")] == ["m1"]


# --------------------------------------------------------------------------- threads


def test_store_is_safe_to_share_between_threads(store: Any) -> None:
    errors: list[BaseException] = []
    per_thread = 40

    def worker(k: int) -> None:
        try:
            s = Session.create(store).for_session("threads")
            for i in range(per_thread):
                s.append_message(msg(f"t{k}-{i}"))
                s.get_history(limit=3)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = Session.create(store).for_session("threads")
    path = s.get_history()
    assert len(path) == 4 * per_thread
    assert s.get_path_length() == 4 * per_thread
    assert {m["id"] for m in path} == {f"t{k}-{i}" for k in range(4) for i in range(per_thread)}
    for m in path:
        assert len(s.get_branches(m["id"])) <= 1



def test_a_store_newer_than_the_code_is_a_store_error_naming_both_versions(
    file_store_url: str,
) -> None:
    """Clarification 33: an old worker meets a newer schema with StoreError, not a crash."""
    with threadline.connect(file_store_url) as store:
        write(store, "m1")
    sql = "UPDATE tl_meta SET value = '999' WHERE key = 'schema_version'"
    if file_store_url.startswith("sqlite:///"):
        with sqlite3.connect(file_store_url.removeprefix("sqlite:///")) as con:
            con.execute(sql)
    else:
        import psycopg

        with psycopg.connect(file_store_url, autocommit=True) as con:
            con.execute(sql)
    with pytest.raises(threadline.StoreError, match=r"999.*newer than this threadline \(\d+\)"):
        threadline.connect(file_store_url).list_sessions("a")


def test_a_store_whose_meta_table_was_lost_opens_and_never_reuses_a_generation(
    tmp_path: Path,
) -> None:
    """Every SQLite migration runs again when tl_meta is gone: the generation one must find its
    columns there already, keep the generations given and continue after the highest."""
    path = tmp_path / "lost-meta.db"
    with threadline.connect(str(path)) as store:
        write(store, "m1")
        store.create_session("default", "other")
        before = {i.id: i.generation for i in store.list_sessions("default").sessions}
    con = sqlite3.connect(path)
    con.execute("DROP TABLE tl_meta")
    con.commit()
    con.close()
    with threadline.connect(str(path)) as store:
        after = {i.id: i.generation for i in store.list_sessions("default").sessions}
        assert after == before
        fresh = store.create_session("default", "fresh").generation
        assert fresh > max(before.values())
