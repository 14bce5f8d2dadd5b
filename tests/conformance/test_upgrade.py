"""Databases written by earlier releases open, upgrade in place and keep every record.

The fixtures in ``tests/fixtures/upgrade/`` were written with ``populate.py`` by threadline 0.1.0
(schema version 1), by main before API keys (schema version 2), for SQLite by main before the
partial per-user listing index (schema version 3), by main before search text in NFC (SQLite
schema 4, PostgreSQL schema 3), and by main before session generations (SQLite schema 5,
PostgreSQL schema 4); each later schema change adds a fixture of the release before it.
Every test runs on each of them.
"""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

import threadline
from threadline.messages import text_of, user

FIXTURES = Path(__file__).parent.parent / "fixtures" / "upgrade"
# One fixture per schema version a user may upgrade from.
OLD_VERSIONS = {"sqlite-file": (1, 2, 3, 4, 5), "postgres": (1, 2, 3, 4)}
# Sessions that populate.py writes into the fixtures from SQLite schema 4 / PostgreSQL 3 on.
LATER = {"nfd"}


def _current_version(store: object) -> int:
    from threadline.store.postgres import _schema as _pg_schema
    from threadline.store.sqlite import _schema as _sqlite_schema

    is_sqlite = isinstance(store, threadline.SQLiteStore)
    return (_sqlite_schema if is_sqlite else _pg_schema).SCHEMA_VERSION


def _sqlite_fixture(tmp_path: Path, version: int) -> str:
    target = tmp_path / "upgraded.db"
    shutil.copy(FIXTURES / f"schema_v{version}.sqlite3", target)
    return f"sqlite:///{target.as_posix()}"


def _postgres_fixture(pg_dsn: str, version: int) -> str:
    """Load the dump into the test's fresh schema (the first on the DSN's search path)."""
    import psycopg

    fixture_schema = f"threadline_v{version}_fixture"  # the schema name inside the dump
    with psycopg.connect(pg_dsn) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
    dump = (FIXTURES / f"schema_v{version}.postgres.sql").read_text(encoding="utf-8")
    dump = dump.replace(f"CREATE SCHEMA {fixture_schema};", "").replace(fixture_schema, schema)
    base = pg_dsn.split("?", 1)[0]
    done = subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", base],
        input=dump,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return pg_dsn


@pytest.fixture(
    params=[
        *(("sqlite-file", v) for v in OLD_VERSIONS["sqlite-file"]),
        *(
            pytest.param(("postgres", v), marks=pytest.mark.postgres)
            for v in OLD_VERSIONS["postgres"]
        ),
    ],
    ids=lambda p: f"{p[0]}-v{p[1]}",
)
def v1_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store written by an earlier release (every fixture holds populate.py's data set)."""
    backend, version = request.param
    if backend == "sqlite-file":
        return _sqlite_fixture(tmp_path, version)
    return _postgres_fixture(request.getfixturevalue("pg_dsn"), version)


def test_v1_sessions_and_usage_survive(v1_url: str) -> None:
    with threadline.SessionManager(v1_url, app_name="fixture") as manager:
        info = manager.get("trip")
        assert info is not None
        assert (info.name, info.user_id, info.model, info.source) == (
            "Lisbon trip (booked)", "ana", "gpt-x", "cli",
        )  # fmt: skip
        assert (info.input_tokens, info.output_tokens) == (120, 45)
        assert info.estimated_cost == pytest.approx(0.0123)
        assert info.message_count == 5
        assert [s.id for s in manager.list(user_id="bob").sessions] == ["tokyo"]
        assert {s.id for s in manager.list().sessions} - LATER == {"trip", "tokyo", "anon"}


def test_v1_tree_overlays_and_state_survive(v1_url: str) -> None:
    with threadline.SessionManager(v1_url, app_name="fixture") as manager:
        chat = manager.get_session("trip")
        store = chat.store
        assert store is not None
        assert store.get_path_ids("fixture", "trip") == ["u1", "a2", "u2", "a3"]
        assert [m["id"] for m in chat.get_branches("u1")] == ["a1", "a2"]
        history = chat.get_history()
        assert "Príncipe Real" in text_of(history[0])  # the compaction summary overlay
        assert history[-1]["id"] == "a3"
        assert history[-1]["parts"][0]["toolCallId"] == "call_1"
        assert chat.state["booked"] is True
        assert chat.state["user:tier"] == "gold"
        assert chat.state["app:season"] == "spring"
        assert manager.get_history("tokyo")[0]["createdAt"].startswith("2026-01-02T03:06")


def test_v1_blocks_prompt_and_entries_survive(v1_url: str) -> None:
    with threadline.connect(v1_url) as store:
        assert store.get_block("fixture", "session", "trip", "memory") == "prefers quiet areas"
        assert store.get_block("fixture", "user", "ana", "profile") == "Ana, vegetarian"
        prompt = store.get_prompt("fixture", "trip")
        assert prompt is not None and "careful travel agent" in prompt
        entry = store.get_entry("fixture", "skills", "pdf")
        assert entry is not None and entry.content == "Extract tables from PDFs."


def test_v1_search_finds_old_messages_and_new_writes_work(v1_url: str) -> None:
    with threadline.SessionManager(v1_url, app_name="fixture") as manager:
        assert [h.id for h in manager.search("zebrafish")] == ["u2"]
        assert "t1" in [h.id for h in manager.search("東京")]
        manager.append("trip", user("Also a dinner tip near the okapi statue", id="u3"))
        assert manager.get_session("trip").get_history()[-1]["id"] == "u3"
        assert [h.id for h in manager.search("okapi")] == ["u3"]
        manager.create("fresh", session_id="new-after-upgrade")
        manager.append("new-after-upgrade", user("hello again"))
        assert manager.get_message_count("new-after-upgrade") == 1


def test_a_v1_database_upgrades_to_attachments_and_long_text_search(v1_url: str) -> None:
    """Schema 2 (attachments, chunked word index) is added in place to a v1 database."""
    import base64

    image = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 2048).decode()
    text = "filler words " * 100_000 + "quasarbeacon"
    with threadline.connect(v1_url) as store:
        session = threadline.Session(store, app_name="fixture", session_id="upgraded")
        written = session.append_messages(
            [
                {
                    "role": "user",
                    "parts": [{"type": "file", "mediaType": "image/png", "url": image}],
                },
                {"role": "user", "content": text},
            ]
        )
        assert session.get_history() == written
        assert [h.id for h in session.search("quasarbeacon")] == [written[1]["id"]]
        version = store._read(  # type: ignore[attr-defined]
            "v", lambda tx: tx.one("SELECT value FROM tl_meta WHERE key = 'schema_version'")
        )
        assert version[0] == str(_current_version(store))


def test_an_old_database_upgrades_to_api_keys(v1_url: str) -> None:
    """Schema 3 (API keys, by hash) is added in place; keys work right after the upgrade."""
    with threadline.connect(v1_url) as store:
        assert store.list_api_keys() == []
        added = store.add_api_key("k1", "fixture", "ana", "ab" * 32)
        assert store.find_api_key("ab" * 32) == added
        assert store.revoke_api_key("k1") and store.list_api_keys()[0].revoked


def test_an_old_sqlite_database_gets_the_partial_listing_indexes(v1_url: str) -> None:
    """Schema 4 (SQLite): the per-user listing index leaves out sessions without a user (their
    appends no longer rewrite it), which get an index of their own; listings, counts and
    owner-scoped search answer as before, through those indexes."""
    if not v1_url.startswith("sqlite"):
        pytest.skip("a SQLite schema change (PostgreSQL keeps its indexes)")
    with threadline.connect(v1_url) as store:
        indexes = store._read(  # type: ignore[attr-defined]
            "i", lambda tx: tx.all("SELECT name FROM sqlite_master WHERE type = 'index'")
        )
        names = {row[0] for row in indexes}
        assert {"tl_sessions_owned", "tl_sessions_ownerless"} <= names
        assert "tl_sessions_user" not in names
        store.append_messages("fixture", "anon", [user("a note about the capybara")])
        assert [s.id for s in store.list_sessions("fixture", user_id="bob").sessions] == ["tokyo"]
        assert store.count_sessions("fixture", without_user=True) == 1
        ana = {s.id for s in store.list_sessions("fixture", user_id="ana").sessions}
        assert ana - LATER == {"trip"}
        assert store.count_sessions("fixture", user_id="ana") == len(ana)
        assert [
            h.session_id for h in store.search_messages("fixture", "capybara", without_user=True)
        ] == ["anon"]
        assert store.search_messages("fixture", "capybara", user_id="ana") == []


def test_text_indexed_decomposed_is_found_in_either_form_after_the_upgrade(v1_url: str) -> None:
    """SQLite schema 5 / PostgreSQL schema 4: the search index holds text in NFC, as queries
    are read. A message and an entry an older release indexed as written, decomposed, are
    indexed again in NFC by the upgrade: either spelling of a query finds them."""
    with threadline.connect(v1_url) as store:
        if store.get_session("fixture", "nfd") is None:
            pytest.skip("written before populate.py stored decomposed text")
        for word in ("café", "crème", "がっこう", "한국어"):
            for form in ("NFC", "NFD"):
                hits = store.search_messages("fixture", unicodedata.normalize(form, word))
                assert [h.id for h in hits] == ["d1"], (word, form)
        for form in ("NFC", "NFD"):
            query = unicodedata.normalize(form, "Jürgen")
            assert [e.key for e in store.search_entries("fixture", "skills", query)] == ["nfd"]


@pytest.mark.postgres
def test_postgres_upgrade_renormalizes_the_chunks_of_a_long_text(pg_dsn: str) -> None:
    """The PostgreSQL upgrade to NFC also indexes again the chunks of a long text (past the
    first 250,000 characters): made here by writing one, then putting its search text and
    chunks back in the decomposed form an older release stored, at schema version 3."""
    import psycopg

    from threadline.store.postgres._schema import CHUNK_TSV

    word = unicodedata.normalize("NFD", "pâtisserie")
    text = "filler words " * 25_000 + f"the {word} at the end"
    with threadline.connect(pg_dsn) as store:
        store.append_messages("fixture", "long", [user(text, id="long1")])
    decomposed = text.lower()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tl_messages SET search_text = %s", [decomposed])
        conn.execute(
            f"UPDATE tl_message_chunks SET tsv = {CHUNK_TSV.replace('?', '%s')}",
            [decomposed[249_800:], decomposed[249_800:]],
        )
        conn.execute("UPDATE tl_meta SET value = '3' WHERE key = 'schema_version'")
    with threadline.connect(pg_dsn) as store:
        for form in ("NFC", "NFD"):
            query = unicodedata.normalize(form, "pâtisserie")
            assert [h.id for h in store.search_messages("fixture", query)] == ["long1"], form


def test_an_ascii_word_glued_to_cjk_is_found_after_the_upgrade(v1_url: str) -> None:
    """The same upgrade splits, in the word index, ASCII words glued to CJK text that an
    older release indexed whole; substrings across the seam are still found."""
    with threadline.connect(v1_url) as store:
        if store.get_session("fixture", "nfd") is None:
            pytest.skip("written before populate.py stored glued text")
        for query in ("Python", "2024", "はPythonで", "年に書"):
            assert [h.id for h in store.search_messages("fixture", query)] == ["g1"], query


@pytest.mark.postgres
def test_postgres_upgrade_drops_the_chunks_of_a_text_nfc_makes_short(pg_dsn: str) -> None:
    """Decomposed Hangul is about three times longer than composed: a text past the chunked
    length when stored decomposed by an older release may fit in one tsv after NFC, and then
    keeps no chunk row."""
    import psycopg

    from threadline.store.postgres._schema import CHUNK_TSV

    with threadline.connect(pg_dsn) as store:
        store.append_messages("fixture", "ko", [user("placeholder", id="ko1")])
    decomposed = unicodedata.normalize("NFD", "한국어 " * 40_000)  # 360,000 characters
    assert len(decomposed) > 250_000 > len(unicodedata.normalize("NFC", decomposed))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tl_messages SET search_text = %s", [decomposed])
        conn.execute(
            "INSERT INTO tl_message_chunks (app, session_id, message_id, idx, tsv) "
            f"VALUES ('fixture', 'ko', 'ko1', 1, {CHUNK_TSV.replace('?', '%s')})",
            [decomposed[249_800:], decomposed[249_800:]],
        )
        conn.execute("UPDATE tl_meta SET value = '3' WHERE key = 'schema_version'")
    with threadline.connect(pg_dsn) as store:
        chunks = store._read(  # type: ignore[attr-defined]
            "c", lambda tx: tx.one("SELECT count(*) FROM tl_message_chunks")
        )
        assert chunks[0] == 0


def test_old_sessions_get_distinct_generations_and_new_ones_continue(v1_url: str) -> None:
    """SQLite schema 6 / PostgreSQL schema 5: every session an older release wrote gets a
    generation, all distinct; sessions created after the upgrade get new ones, and a session
    deleted and created again is told apart from the old one (docs/guarantees.md)."""
    with threadline.connect(v1_url) as store:
        old = {s.id: s.generation for s in store.list_sessions("fixture", limit=100).sessions}
        assert {"trip", "tokyo", "anon"} <= set(old)
        assert all(g > 0 for g in old.values()) and len(set(old.values())) == len(old)
        chat = threadline.Session(store, app_name="fixture", session_id="trip")
        assert chat.get_history()[-1]["id"] == "a3"  # binds to the upgraded session
        fresh = store.create_session("fixture", "after-upgrade").generation
        assert fresh not in old.values()
        assert store.delete_session("fixture", "trip")
        store.append_messages("fixture", "trip", [user("a new trip")])
        again = store.get_session("fixture", "trip")
        assert again is not None and again.generation not in {*old.values(), fresh}
        with pytest.raises(threadline.SessionNotFoundError):
            chat.get_history()
        with pytest.raises(threadline.SessionNotFoundError):
            store.get_head("fixture", "tokyo", generation=old["trip"])
        assert store.get_head("fixture", "tokyo", generation=old["tokyo"]) is not None
