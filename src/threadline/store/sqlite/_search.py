"""SQLite search: the corpora (messages, entries, not-yet-indexed messages) and the FTS5 /
trigram query building next to the SQL that runs it."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from threadline._search_query import WIDE_CLASS, MatchMode, Term
from threadline.store._sql.base import Row


def fts5_quote(text: str) -> str:
    """Quote ``text`` as an FTS5 string (internal double quotes doubled).

    >>> print(fts5_quote('a "b" c'))
    "a ""b"" c"
    """
    return '"' + text.replace('"', '""') + '"'


def fts5_term(term: Term, forms: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The FTS5 expression for one term, or None without tokens: a quoted phrase of its
    tokens; a single word ORs its inflections (:func:`word_forms`), one per Porter stem, or
    those of ``forms[word]`` when given (the forms a large index holds: same matches).

    >>> from threadline._search_query import parse_query
    >>> fts5_term(parse_query("bob@example.com")[0])
    '"bob example com"'
    >>> fts5_term(parse_query("deploys")[0])
    '("deploys" OR "deployment")'
    """
    if not term.tokens:
        return None
    if not term.is_phrase and len(term.tokens) == 1:
        word = term.tokens[0]
        found = forms.get(word) if forms is not None else None
        chosen = list(found) if found else single_word_forms(word)
        return (
            "(" + " OR ".join(map(fts5_quote, chosen)) + ")"
            if len(chosen) > 1
            else (fts5_quote(chosen[0]))
        )
    return fts5_quote(" ".join(term.tokens))


def single_word_forms(word: str) -> list[str]:
    """The forms a one-word term matches: :func:`word_forms`, one per Porter stem.

    >>> single_word_forms("deploys")
    ['deploys', 'deployment']
    """
    return _STEMMER.distinct(word_forms(word))


_SUFFIXES = ("ments", "ment", "ings", "ing", "ions", "ion", "ers", "er", "ed", "es", "s", "ly")


_ENDINGS = ("", "s", "ed", "ing", "ment", "er")


def word_forms(word: str) -> list[str]:
    """The word plus common English inflections of its root (for the Porter index).

    Porter stems ``deploying``/``deployed`` to ``deploi`` but ``deployment`` to ``deploy``; matching
    any of a few inflected forms gives the recall users expect from "stemmed" search. Only plain
    ASCII words of four letters or more are expanded.

    >>> word_forms("deploys")
    ['deploys', 'deploy', 'deployed', 'deploying', 'deployment', 'deployer']
    """
    if len(word) < 4 or not (word.isascii() and word.isalpha()):
        return [word]
    root = word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            root = word[: -len(suffix)]
            break
    forms = [word]
    for ending in _ENDINGS:
        form = root + ending
        if form not in forms:
            forms.append(form)
    return forms


class _Corpus:
    """Table names and result columns of one searchable corpus (messages or entries).

    ``index`` names the index tables (``<index>_fts``, ``_tri``, ``_cjk``): the messages'
    own, or the in-memory ones that hold the messages not indexed yet (see
    :meth:`SQLiteStore._search_message_rows`).
    """

    def __init__(self, table: str, columns: str, order: str, index: str | None = None) -> None:
        self.table, self.columns, self.order = table, columns, order
        self.width = columns.count(",") + 1
        index = index or table
        self.fts, self.tri, self.cjk = f"{index}_fts", f"{index}_tri", f"{index}_cjk"
        self.insert_fts = f"INSERT INTO {self.fts} (rowid, text) VALUES (?, ?)"
        self.insert_tri = f"INSERT INTO {self.tri} (rowid, text) VALUES (?, ?)"
        self.delete_fts = f"DELETE FROM {self.fts} WHERE rowid = ?"
        self.delete_tri = f"DELETE FROM {self.tri} WHERE rowid = ?"


_MESSAGES = _Corpus("tl_messages", "x.session_id, x.id, x.role, x.data", "x.seq")
_PENDING = _Corpus("tl_messages", _MESSAGES.columns, _MESSAGES.order, index="tl_pending")
_PENDING_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tl_pending_fts "
    "USING fts5(text, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.tl_pending_tri "
    "USING fts5(text, tokenize='trigram', detail=none, columnsize=0)",
    "CREATE TABLE IF NOT EXISTS temp.tl_pending_cjk "
    "(rowid INTEGER PRIMARY KEY, text TEXT NOT NULL)",
)
_ENTRIES = _Corpus("tl_entries", "x.key, x.content, x.description", "x.updated_at")


# --------------------------------------------------------------------------- search SQL


def _hit_order(row: Row) -> tuple[float, int]:
    """Sort key of message rows ``(..., score, seq)``: best score, then newest, first."""
    return (-float(row[-2]), -int(row[-1]))


class _Stemmer:
    """Porter stems of words, from SQLite's own tokenizer (an in-memory FTS5 table).

    ``word_forms`` gives several inflections of a word; forms with the same stem match the same
    rows, so keeping one per stem gives FTS5 (and bm25) less work for identical results.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, str] = {}
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute("CREATE VIRTUAL TABLE s USING fts5(t, tokenize='porter unicode61')")
            conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'instance')")
            self._conn = conn
        return self._conn

    def distinct(self, words: Sequence[str]) -> list[str]:
        """``words`` without those whose stem an earlier word already has."""
        with self._lock:
            missing = [w for w in words if w not in self._cache]
            if missing:
                conn = self._connection()
                conn.executemany("INSERT INTO s (rowid, t) VALUES (?, ?)", enumerate(missing))
                for doc, stem in conn.execute("SELECT doc, term FROM v").fetchall():
                    self._cache[missing[doc]] = stem
                conn.execute("DELETE FROM s")
                if len(self._cache) > 50_000:
                    self._cache.clear()
            stems = [self._cache.get(w, w) for w in words]
        return [w for i, w in enumerate(words) if stems[i] not in stems[:i]]


_STEMMER = _Stemmer()


def _fts_match(
    terms: Sequence[Term], mode: MatchMode, forms: Mapping[str, Sequence[str]] | None = None
) -> str | None:
    parts = [p for p in (fts5_term(t, forms) for t in terms) if p is not None]
    return (" AND " if mode == "all" else " OR ").join(parts) if parts else None


_LIKE_SPECIAL = re.compile(r"[%_]")

_WIDE = re.compile(WIDE_CLASS)


def _needs_substring(term: Term) -> bool:
    return term.needs_substring and bool(term.substring)


def _like(term: Term) -> tuple[str, list[Any]]:
    """``LIKE`` test of the term's substring on a ``text`` column (``{col}`` = text/+text).

    No ESCAPE clause (it would keep FTS5 from using the trigram index): ``%`` and ``_`` in the
    term widen the pattern, so such terms are re-checked exactly with ``instr``. Never give
    such a pattern to the trigram index itself (see :func:`_substring_source`).
    """
    sub = term.substring
    if "%" in sub or "_" in sub:
        return "{col} LIKE ? AND instr(lower(text), ?) > 0", [f"%{sub}%", sub]
    return "{col} LIKE ?", [f"%{sub}%"]


def _substring_only_rows(corpus: _Corpus, term: Term) -> tuple[str, list[Any]]:
    """Rowids whose text contains the term's substring but that do not match it as words.

    Excluding the word matches first spares FTS5 re-reading their text to verify the LIKE.
    """
    source, test, params = _substring_source(corpus, term)
    words = fts5_term(term)
    if words is None:
        return f"SELECT rowid FROM {source} WHERE {test}", params
    return (
        f"SELECT rowid FROM {source} WHERE rowid NOT IN "
        f"(SELECT rowid FROM {corpus.fts} WHERE {corpus.fts} MATCH ?) AND {test}",
        [words, *params],
    )


def _substring_source(corpus: _Corpus, term: Term) -> tuple[str, str, list[Any]]:
    """Where to look for the term's substring: ``(table, condition, params)``.

    The trigram index serves ``LIKE '%run%'`` for a literal run of three or more characters.
    SQLite 3.40's trigram LIKE crashes on patterns holding ``%``/``_`` between multi-byte
    characters and finds nothing for patterns under three multi-byte characters, so the
    index only ever sees the longest plain run, and ``instr`` checks the exact substring.
    Shorter terms scan ``tl_messages_cjk`` (all texts that can hold them) or the trigram
    table's text without its index (``+text``).
    """
    sub = term.substring
    longest = max(_LIKE_SPECIAL.split(sub), key=len)
    if len(longest) >= 3:
        if longest == sub:
            return corpus.tri, "text LIKE ?", [f"%{sub}%"]
        return corpus.tri, "text LIKE ? AND instr(lower(text), ?) > 0", [f"%{longest}%", sub]
    test, params = _like(term)
    if corpus.table == "tl_messages" and _WIDE.search(sub):
        return corpus.cjk, test.format(col="text"), params  # an ordinary table
    return corpus.tri, test.format(col="+text"), params


def _row_satisfies(corpus: _Corpus, term: Term) -> tuple[str, list[Any]]:
    """Correlated test that row ``x`` satisfies ``term`` (words, or its substring)."""
    parts: list[str] = []
    params: list[Any] = []
    words = fts5_term(term)
    if words is not None:
        parts.append(
            f"EXISTS (SELECT 1 FROM {corpus.fts} WHERE {corpus.fts} MATCH ? "
            f"AND {corpus.fts}.rowid = x.rowid)"
        )
        params.append(words)
    if _needs_substring(term):
        test, like_params = _like(term)
        parts.append(
            f"EXISTS (SELECT 1 FROM {corpus.tri} WHERE {corpus.tri}.rowid = x.rowid "
            f"AND {test.format(col='+text')})"
        )
        params += like_params
    return "(" + " OR ".join(parts) + ")", params


class Bound(NamedTuple):
    """How a large store's search bounds its word matches (None: every match is ranked).

    ``ranked``: score the newest ``candidates`` matches with bm25; otherwise take the newest
    ``candidates`` matches unscored (:data:`UNRANKED_SCORE`), when every term is common.
    """

    candidates: int
    ranked: bool


UNRANKED_SCORE = 1e-9
"""Score of word hits that were not ranked (every term common): above substring-only hits
(0.0), below any bm25 score (FTS5 floors each term's weight at 1e-6)."""


def _word_rows(
    corpus: _Corpus, match: str, scope: str, scope_params: list[Any], bound: Bound | None
) -> tuple[str, list[Any]]:
    """Rows ``(rid, ord, score)`` of messages matching ``match`` as words."""
    # CROSS JOIN and "+": the FTS query must drive (SQLite would otherwise run the MATCH
    # once per scope row).
    score = f"-{corpus.fts}.rank" if bound is None or bound.ranked else repr(UNRANKED_SCORE)
    sql = (
        f"SELECT x.rowid AS rid, {corpus.order} AS ord, {score} AS score "
        f"FROM {corpus.fts} CROSS JOIN {corpus.table} x ON x.rowid = {corpus.fts}.rowid "
        f"WHERE {corpus.fts} MATCH ? AND {scope.format(p='+')}"
    )
    if bound is not None:  # FTS5 walks its doclists newest first and stops (no sort)
        sql = (
            f"SELECT * FROM ({sql} ORDER BY {corpus.fts}.rowid DESC LIMIT {int(bound.candidates)})"
        )
    return sql, [match, *scope_params]


def _search_sql(
    corpus: _Corpus,
    terms: Sequence[Term],
    mode: MatchMode,
    scope: str,
    scope_params: list[Any],
    bound: Bound | None = None,
    forms: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str, list[Any]]:
    """One query: word hits ranked by bm25, plus hits owed to substrings, scored 0.

    Branch 1 drives from the porter index: rows where every term (in "any" mode, some term)
    matches as words. Branch 2 adds rows that satisfy some substring term only through its
    substring; in "all" mode each must also satisfy every other term (checked per row, the
    candidates being few). In "all" mode the branches are disjoint; in "any" mode a row can
    be in both and ``GROUP BY`` keeps its best score.
    """
    match = _fts_match(terms, mode, forms)
    substring_terms = [t for t in terms if _needs_substring(t)]
    if not substring_terms:
        return _word_search_sql(corpus, match, scope, scope_params, bound)
    branches: list[str] = []
    params: list[Any] = []
    # In "all" mode a term without words (emoji...) can only match through its substring:
    # then no row matches every term as words and branch 1 is left out.
    if match is not None and (mode == "any" or all(fts5_term(t) for t in terms)):
        words_sql, words_params = _word_rows(corpus, match, scope, scope_params, bound)
        branches.append(words_sql)
        params += words_params
    drivers = [_substring_only_rows(corpus, t) for t in substring_terms]
    checks = [_row_satisfies(corpus, t) for t in terms] if mode == "all" and len(terms) > 1 else []
    branches.append(
        f"SELECT x.rowid AS rid, {corpus.order} AS ord, 0.0 AS score FROM {corpus.table} x "
        f"WHERE x.rowid IN ({' UNION '.join(sql for sql, _ in drivers)}) "
        f"AND {scope.format(p='+')}" + "".join(f" AND {sql}" for sql, _ in checks)
    )
    for _, driver_params in drivers:
        params += driver_params
    params += scope_params
    for _, check_params in checks:
        params += check_params
    union = " UNION ALL ".join(branches)
    ranked = (
        f"SELECT rid, MAX(score) AS score, ord FROM ({union}) GROUP BY rid"
        if mode == "any"
        else union
    )
    sql = (
        f"SELECT {corpus.columns}, h.score, h.ord FROM ("
        f"SELECT rid, score, ord FROM ({ranked}) "
        "ORDER BY score DESC, ord DESC, rid DESC LIMIT ?"
        f") h JOIN {corpus.table} x ON x.rowid = h.rid "
        "ORDER BY h.score DESC, h.ord DESC, h.rid DESC"
    )
    return sql, params


def _word_search_sql(
    corpus: _Corpus, match: str | None, scope: str, scope_params: list[Any], bound: Bound | None
) -> tuple[str, list[Any]]:
    """Word terms only: rank the porter matches, then load the bodies of the top rows."""
    if match is None:
        return "", []
    if bound is None:
        top = (
            f"SELECT x.rowid AS rid, {corpus.fts}.rank AS r, {corpus.order} AS ord "
            f"FROM {corpus.fts} CROSS JOIN {corpus.table} x ON x.rowid = {corpus.fts}.rowid "
            f"WHERE {corpus.fts} MATCH ? AND {scope.format(p='+')} "
            "ORDER BY r, ord DESC, rid DESC LIMIT ?"
        )
        params = [match, *scope_params]
    else:
        rows, params = _word_rows(corpus, match, scope, scope_params, bound)
        top = f"SELECT rid, -score AS r, ord FROM ({rows}) ORDER BY r, ord DESC, rid DESC LIMIT ?"
    sql = (
        f"SELECT {corpus.columns}, -h.r, h.ord FROM ({top}) h "
        f"JOIN {corpus.table} x ON x.rowid = h.rid ORDER BY h.r, h.ord DESC, h.rid DESC"
    )
    return sql, params
