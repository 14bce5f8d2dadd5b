"""Conformance: which words a search counts, the same on every backend.

Stop words (api.md Amendment 21, clarification 31): one shipped English list
(``threadline._search_query.STOP_WORDS``) is left out of both search passes on both backends;
a query of only stop words is matched as written, as a phrase. Words glued to CJK text
(Amendment 20): a Latin word, accented or not, written against a script without spaces is a
word of its own, in the index and in queries; stores indexed before are split by an upgrade.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest

import threadline
from threadline import _search_query as rules
from threadline.store import Store

APP = "app"


def _add(store: Store, session_id: str = "s1", **texts: str) -> None:
    store.append_messages(
        APP,
        session_id,
        [
            {"id": k, "role": "user", "parts": [{"type": "text", "text": v}]}
            for k, v in texts.items()
        ],
    )


def _ids(store: Store, query: str, session_id: str | None = None) -> set[str]:
    return {hit.id for hit in store.search_messages(APP, query, session_id=session_id)}


def _everywhere(store: Store, query: str) -> set[str]:
    """Hits app-wide, which must be the hits inside the one session written."""
    found = _ids(store, query)
    assert _ids(store, query, "s1") == found, query
    return found


CHATTER = {
    "m1": "this is the plan for today",
    "m2": "the weather is fine",
    "m3": "what is the deal with it",
    "m4": "is it over there?",
}


# --------------------------------------------------------------------------- stop words


def test_a_question_finds_nothing_without_its_content_words(store: Store) -> None:
    """The issue's case: SQLite returned every message holding "is" or "the" (the any-word
    fallback), PostgreSQL nothing."""
    _add(store, **CHATTER)
    assert _everywhere(store, "what is the capital of peru") == set()
    assert _everywhere(store, "What is the capital of Peru?") == set()


def test_a_question_finds_the_message_holding_its_content_words(store: Store) -> None:
    _add(store, **CHATTER, lima="Lima is the capital of Peru")
    assert _everywhere(store, "what is the capital of peru") == {"lima"}
    assert _everywhere(store, "what's the capital of Peru") == {"lima"}


def test_the_any_word_fallback_needs_a_word_that_is_not_a_stop_word(store: Store) -> None:
    """No message holds both "capital" and "narnia": the fallback returns those holding
    either, never those holding only "what", "is", "the" or "of"."""
    _add(store, **CHATTER, caps="capital letters only", lima="Lima is the capital of Peru")
    assert _everywhere(store, "what is the capital of narnia") == {"caps", "lima"}
    assert _everywhere(store, "is the narnia of it") == set()


def test_a_query_of_only_stop_words_is_matched_as_a_phrase(store: Store) -> None:
    _add(
        store,
        **CHATTER,
        scattered="the answer is what it is",  # every word, never in that order
        punct="so what? is the answer yes",  # the words in order, punctuation between
        inside="whatis thereof",  # the letters, not the words
    )
    assert _everywhere(store, "what is the") == {"m3", "punct"}
    assert _everywhere(store, "What IS the") == {"m3", "punct"}
    assert _everywhere(store, '"what is the"') == {"m3", "punct"}
    assert _everywhere(store, 'what "is the"') == {"m3", "punct"}
    assert _everywhere(store, "is it") == {"m4"}
    assert _everywhere(store, "over") == {"m4"}
    assert _everywhere(store, "it is the") == set()


def test_a_phrase_of_stop_words_beside_other_words_is_left_out(store: Store) -> None:
    _add(store, band="a new record by the who", other="the new plan")
    assert _everywhere(store, '"the who" record') == {"band"}
    assert _everywhere(store, '"by the" record') == {"band"}


def test_stop_words_are_left_out_of_entry_search(store: Store) -> None:
    store.put_entry(APP, "notes", "lima", "Lima is the capital of Peru")
    store.put_entry(APP, "notes", "plan", "this is the plan")
    found = {e.key for e in store.search_entries(APP, "notes", "what is the capital of peru")}
    assert found == {"lima"}
    assert {e.key for e in store.search_entries(APP, "notes", "what is the")} == set()
    assert {e.key for e in store.search_entries(APP, "notes", "is the")} == {"lima", "plan"}


def test_a_query_of_only_stop_words_in_a_large_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the thresholds of a large store (docs/search.md, "Cost"), a query of only stop
    words returns ``limit`` messages holding its phrase, and finds a phrase one message has."""
    for name, value in [("LARGE_STORE", 50), ("COMMON_DOCS", 60), ("RANKED_CANDIDATES", 20),
                        ("UNRANKED_CANDIDATES", 10), ("LOCAL_SEARCH_STORE", 50)]:  # fmt: skip
        monkeypatch.setattr(rules, name, value)
    texts = {
        f"c{i}": f"note {i}: " + ("what is the plan" if i % 3 else "is it") for i in range(150)
    }
    _add(store, **texts, rare="it was further down")
    if store.__class__.__name__ == "PostgresStore":  # the planner's count, as autovacuum keeps
        store._write("analyze", lambda tx: tx.execute("ANALYZE tl_messages"))  # type: ignore[attr-defined]
    for session_id in (None, "s1"):
        hits = store.search_messages(APP, "What is the", session_id=session_id, limit=5)
        assert len(hits) == 5 and all("what is the plan" in h.content for h in hits)
        assert _ids(store, "it was further", session_id) == {"rare"}
        assert _ids(store, "was it", session_id) == set()


@pytest.mark.postgres
def test_the_shipped_list_is_what_postgresql_leaves_out(pg_dsn: str) -> None:
    """Every shipped stop word is one PostgreSQL's ``english`` configuration drops, and every
    word it drops from the project's own documentation is a shipped stop word: the lists
    agree, so a query means the same on both backends."""
    import psycopg

    docs = Path(__file__).parents[2] / "docs"
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(docs.glob("*.md")))
    with psycopg.connect(pg_dsn) as conn:
        dropped = conn.execute(
            "SELECT array_agg(w) FROM unnest(%s::text[]) AS w "
            "WHERE ts_lexize('english_stem', w) = '{}'",
            [sorted(rules.STOP_WORDS)],
        ).fetchone()
        found = conn.execute(
            "SELECT DISTINCT lower(token) FROM ts_debug('english', %s) "
            "WHERE lexemes = '{}' AND alias IN ('asciiword', 'word')",
            [text],
        ).fetchall()
    assert dropped is not None and set(dropped[0]) == rules.STOP_WORDS
    assert {row[0] for row in found} <= rules.STOP_WORDS
    assert len({row[0] for row in found}) > 60  # the documentation holds most of them


# --------------------------------------------------------------------------- glued words

GLUED = {
    "ja": unicodedata.normalize("NFD", "私はCaféでADKを使っています"),
    "vi": "東京でPhở Bòを食べた",
    "wide": "私はＰｙｔｈｏｎで書いた",
    "mark": "記号q\u0303の例",  # q + a combining tilde NFC cannot compose
    "en": "a café in Paris",
}


def test_an_accented_word_glued_to_cjk_text_is_a_word(store: Store) -> None:
    """ADK's memory tests: ``Café`` in ``私はCaféで`` (stored decomposed) is found by
    ``Café`` and ``café``, written either way; other Latin-script words too."""
    _add(store, **GLUED)
    for query in ("Café", "café", unicodedata.normalize("NFD", "Café")):
        assert _everywhere(store, query) == {"ja", "en"}, query
    assert _everywhere(store, "ADK") == {"ja"}
    assert _everywhere(store, "Ruby") == set()
    assert _everywhere(store, "thon") == set()
    assert _everywhere(store, "phở") == {"vi"}
    assert _everywhere(store, "Ｐｙｔｈｏｎ") == {"wide"}
    assert _everywhere(store, "q\u0303") == {"mark"}
    # Across the seam, as words and as substrings, as before.
    for query, expected in {"Caféで": "ja", "はCafé": "ja", "でPhở": "vi", "使って": "ja"}.items():
        assert _everywhere(store, query) == {expected}, query


def test_an_accented_word_glued_to_cjk_text_is_a_word_in_entries(store: Store) -> None:
    store.put_entry(APP, "notes", "ja", GLUED["ja"])
    store.put_entry(APP, "notes", "en", "plain notes")
    assert [e.key for e in store.search_entries(APP, "notes", "café")] == ["ja"]


_OLD_LATIN = "[0-9A-Za-z]"


def _old_forms(lower: bool) -> dict[str, str]:
    """The word index's text of each of GLUED's texts -> the text schema 5 (SQLite) / 4
    (PostgreSQL, ``lower``) indexed: only ASCII letters and digits split from scripts
    written without spaces."""
    forms = {}
    for text in GLUED.values():
        text = unicodedata.normalize("NFC", text.lower() if lower else text)
        old = re.sub(f"({rules.NO_SPACE_CLASS})({_OLD_LATIN})", r"\1 \2", text)
        old = re.sub(f"({_OLD_LATIN})({rules.NO_SPACE_CLASS})", r"\1 \2", old)
        forms[rules.split_glued(text)] = old
    return forms


def _write_glued(url: str) -> None:
    with threadline.connect(url) as store:
        # 70 messages: a full batch, indexed now (SQLite), not left pending.
        _add(store, **GLUED, **{f"f{i}": f"filler {i}" for i in range(70)})
        store.put_entry(APP, "notes", "ja", GLUED["ja"])


def _found(url: str) -> tuple[set[str], list[str]]:
    with threadline.connect(url) as store:
        return _ids(store, "café"), [e.key for e in store.search_entries(APP, "notes", "café")]


def test_sqlite_upgrade_splits_accented_words_glued_to_cjk(tmp_path: Path) -> None:
    """The upgrade (``_sqlite_schema._migrate_to_7``) re-splits what an older release
    indexed: here the index is put back in that form, then the migration runs."""
    from threadline.store.sqlite import _schema as _sqlite_schema
    from threadline.store.sqlite._search import _ENTRIES, _MESSAGES

    assert _sqlite_schema._migrate_to_7 in _sqlite_schema.MIGRATIONS
    path = tmp_path / "old.db"
    url = f"sqlite:///{path.as_posix()}"
    _write_glued(url)
    old = _old_forms(lower=False)
    with sqlite3.connect(path) as conn:
        for corpus in (_MESSAGES, _ENTRIES):
            rows = conn.execute(f"SELECT rowid, text FROM {corpus.fts}").fetchall()
            for rowid, text in rows:
                if text in old:
                    conn.execute(corpus.delete_fts, (rowid,))
                    conn.execute(corpus.insert_fts, (rowid, old[text]))
    assert _found(url) == ({"en"}, [])  # the old index: only the spaced word
    with sqlite3.connect(path) as conn:
        _sqlite_schema._migrate_to_7(conn)
    assert _found(url) == ({"ja", "en"}, ["ja"])


@pytest.mark.postgres
def test_postgres_upgrade_splits_accented_words_glued_to_cjk(pg_dsn: str) -> None:
    """The same for PostgreSQL (``_pg_schema._V6``): the search column put back in the form
    an older release wrote, then the migration's statements run."""
    import psycopg

    from threadline.store.postgres import _schema as _pg_schema

    assert _pg_schema._V6 in _pg_schema.MIGRATIONS
    _write_glued(pg_dsn)
    old = _old_forms(lower=True)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for table in ("tl_messages", "tl_entries"):
            for new, was in old.items():
                conn.execute(
                    f"UPDATE {table} SET search_text = %s WHERE search_text = %s", [was, new]
                )
    assert _found(pg_dsn) == ({"en"}, [])
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for statement in _pg_schema._V6:
            conn.execute(statement)
    assert _found(pg_dsn) == ({"ja", "en"}, ["ja"])
