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
    """The upgrade (``_sqlite_schema._migrate_to_6``) re-splits what an older release
    indexed: here the index is put back in that form, then the migration runs."""
    from threadline.store import _sqlite_schema
    from threadline.store._sqlite_search import _ENTRIES, _MESSAGES

    assert _sqlite_schema._migrate_to_6 in _sqlite_schema.MIGRATIONS
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
        _sqlite_schema._migrate_to_6(conn)
    assert _found(url) == ({"ja", "en"}, ["ja"])


@pytest.mark.postgres
def test_postgres_upgrade_splits_accented_words_glued_to_cjk(pg_dsn: str) -> None:
    """The same for PostgreSQL (``_pg_schema._V5``): the search column put back in the form
    an older release wrote, then the migration's statements run."""
    import psycopg

    from threadline.store import _pg_schema

    assert _pg_schema._V5 in _pg_schema.MIGRATIONS
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
        for statement in _pg_schema._V5:
            conn.execute(statement)
    assert _found(pg_dsn) == ({"ja", "en"}, ["ja"])
