"""SQLite search in large stores: leaving out common terms, and searching one session's rows.

The rules and thresholds are dialect-free (``threadline._search_query``, docs/search.md
"Cost"); this module holds the SQL that applies them to the FTS5 tables.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from threadline import _search_query as rules
from threadline._search_query import MatchMode, Term
from threadline.store._sql.base import Row, _in_list
from threadline.store.sqlite._search import (
    Bound,
    _Corpus,
    _fts_match,
    _needs_substring,
    _substring_source,
    fts5_quote,
    fts5_term,
    single_word_forms,
)

_SQL_SIZE = "SELECT COALESCE(MAX(rowid), 0) FROM tl_messages"
_SQL_SESSION_SIZE = "SELECT message_count FROM tl_sessions WHERE app = ? AND id = ?"
_SQL_SESSION_ROWS = "SELECT rowid, seq FROM tl_messages WHERE app = ? AND session_id = ?"


def store_size(conn: sqlite3.Connection) -> int:
    """An upper bound of the number of messages (the highest rowid: no scan)."""
    return int(conn.execute(_SQL_SIZE).fetchone()[0])


def _doc_count(
    conn: sqlite3.Connection,
    corpus: _Corpus,
    match: str,
    cap: int,
    cache: dict[str, int],
    known: dict[str, tuple[float, int]] | None = None,
) -> int:
    """Messages matching ``match``, counted up to ``cap`` (so the cost is bounded by it).

    ``cache``: counts already made in this database version (the "all" and "any" passes of
    one search count the same terms). ``known``: counts (with ``cap`` above 1) kept across
    searches with the ``time.monotonic`` they were made at, reused for
    :data:`~threadline._search_query.COUNT_MEMORY_SECONDS` (existence checks, ``cap`` 1, are
    always made afresh: a word's new form must be found at once).
    """
    key = f"{corpus.fts} {cap} {match}"
    if key not in cache:
        now = time.monotonic()
        remembered = known.get(key) if known is not None and cap > 1 else None
        if remembered is not None and now - remembered[0] < rules.COUNT_MEMORY_SECONDS:
            return remembered[1]
        sql = (
            f"SELECT count(*) FROM (SELECT 1 FROM {corpus.fts} "
            f"WHERE {corpus.fts} MATCH ? LIMIT {int(cap)})"
        )
        if len(cache) > 1024:
            cache.clear()
        cache[key] = int(conn.execute(sql, (match,)).fetchone()[0])
        if known is not None and cap > 1:
            if len(known) > 4096:
                known.clear()
            known[key] = (now, cache[key])
    return cache[key]


class Plan(NamedTuple):
    """How to search a store: the terms kept, the bound on ranked matches (None: rank every
    match) and, per single word, the forms of it the index holds (None: all of them)."""

    terms: list[Term]
    bound: Bound | None = None
    forms: dict[str, list[str]] | None = None


def plan_terms(
    conn: sqlite3.Connection,
    corpus: _Corpus,
    terms: Sequence[Term],
    limit: int,
    cache: dict[str, int],
    known: dict[str, tuple[float, int]] | None = None,
) -> Plan:
    """The plan of one search pass of a large store.

    Terms of plain words found in more than :data:`~threadline._search_query.COMMON_DOCS`
    messages (phrases: whose every word is) are left out when another term remains; when every
    term is that common, the newest ``limit`` matches are returned unranked. Forms of a word
    that no message holds are left out of its expression (same matches, less to score).
    Stores of at most :data:`~threadline._search_query.LARGE_STORE` messages are searched as
    they always were. ``cache`` and ``known``: see :func:`_doc_count`.
    """
    size = store_size(conn)
    if size <= rules.LARGE_STORE:
        return Plan(list(terms))
    bound = Bound(max(rules.RANKED_CANDIDATES, limit), ranked=True)
    cap = rules.COMMON_DOCS + 1
    counts: list[int | None] = []
    forms: dict[str, list[str]] = {}
    for term in terms:
        if fts5_term(term) is None or _needs_substring(term):
            counts.append(None)
        elif len(term.tokens) > 1:  # a phrase is as common as its rarest word, at most
            # (counting the phrase itself would read the positions of every candidate)
            counts.append(
                min(_doc_count(conn, corpus, fts5_quote(t), cap, cache, known) for t in term.tokens)
            )
        else:
            # The word as written is counted; its other forms are only checked for existence.
            word = term.tokens[0]
            variants = single_word_forms(word)
            counts.append(_doc_count(conn, corpus, fts5_quote(variants[0]), cap, cache, known))
            # A remembered count may be older than the messages: which forms a message holds
            # is always checked afresh, or a form written since would not be found.
            held = [
                f
                for i, f in enumerate(variants)
                if (i == 0 and counts[-1]) or _doc_count(conn, corpus, fts5_quote(f), 1, cache)
            ]
            forms[word] = held or [word]
    if size <= rules.COMMON_DOCS:
        return Plan(list(terms), bound, forms)
    kept, left_out = rules.split_common(counts)
    if not left_out and all(n is not None and n > rules.COMMON_DOCS for n in counts):
        return Plan(list(terms), Bound(limit, ranked=False), forms)
    return Plan([terms[i] for i in kept], bound, forms)


def local_session(conn: sqlite3.Connection, app: str, session_id: str) -> bool:
    """True if a search inside this session should read the session's own rows."""
    if store_size(conn) <= rules.LOCAL_SEARCH_STORE:
        return False
    row = conn.execute(_SQL_SESSION_SIZE, (app, session_id)).fetchone()
    return row is not None and int(row[0]) <= rules.LOCAL_SEARCH_SESSION


def _window_rows(
    conn: sqlite3.Connection, sql: str, params: list[Any], windows: list[tuple[int, int]]
) -> set[int]:
    found: set[int] = set()
    for low, high in windows:
        found.update(r for (r,) in conn.execute(sql, (*params, low, high)))
    return found


def session_search(
    conn: sqlite3.Connection,
    corpora: Sequence[_Corpus],
    terms: Sequence[Term],
    mode: MatchMode,
    app: str,
    session_id: str,
    limit: int,
) -> list[Row]:
    """Search one session through rowid-range scans of its own rows; rows
    ``(session_id, id, role, data, score, seq)``, scored by
    :func:`~threadline._search_query.coverage_scores`.

    The index is read only inside the windows that cover the session's rowids
    (:func:`~threadline._search_query.rowid_windows`), so the cost follows the session's
    size, plus the messages other sessions wrote in between, whatever the size of the store.
    ``corpora[0]`` is the store's index, the others the small in-memory one of pending rows.
    """
    seqs = {int(r): int(s) for r, s in conn.execute(_SQL_SESSION_ROWS, (app, session_id))}
    if not seqs:
        return []
    ordered = sorted(seqs)
    windows = rules.rowid_windows(ordered)
    whole = [(ordered[0], ordered[-1])]  # the in-memory index of pending rows is tiny
    words: list[set[int]] = []
    substrings: list[set[int]] = []
    for term in terms:
        matched, by_substring = set(), set()
        for corpus in corpora:
            spans = windows if corpus is corpora[0] else whole
            expression = fts5_term(term)
            if expression is not None:
                sql = (
                    f"SELECT rowid FROM {corpus.fts} WHERE {corpus.fts} MATCH ? "
                    "AND rowid BETWEEN ? AND ?"
                )
                matched |= _window_rows(conn, sql, [expression], spans)
            if _needs_substring(term):
                source, test, params = _substring_source(corpus, term)
                sql = f"SELECT rowid FROM {source} WHERE {test} AND rowid BETWEEN ? AND ?"
                by_substring |= _window_rows(conn, sql, params, spans)
        matched &= seqs.keys()
        words.append(matched)
        substrings.append((by_substring & seqs.keys()) - matched)
    scores = rules.coverage_scores(words, substrings, len(seqs), mode)
    return _top_hits(conn, scores, seqs, limit)


def _top_hits(
    conn: sqlite3.Connection, scores: dict[int, float], seqs: dict[int, int], limit: int
) -> list[Row]:
    """The best ``limit`` of the scored rowids as rows ``(session_id, id, role, data, score,
    seq)``, read by rowid (500 per statement)."""
    top = rules.top_rows(scores, seqs, limit)
    loaded: dict[int, Row] = {}
    sql = "SELECT rowid, session_id, id, role, data FROM tl_messages WHERE rowid IN "
    for start in range(0, len(top), 500):
        batch = top[start : start + 500]
        for row in conn.execute(sql + _in_list(len(batch)), batch):
            loaded[int(row[0])] = row[1:]
    return [(*loaded[r], scores[r], seqs[r]) for r in top if r in loaded]


def any_word_search(
    conn: sqlite3.Connection,
    corpora: Sequence[_Corpus],
    plan: Plan,
    scope: str,
    scope_params: list[Any],
    limit: int,
) -> list[Row]:
    """The any-word pass of a large store, for word terms: rows ``(session_id, id, role,
    data, score, seq)`` scored by :func:`~threadline._search_query.coverage_scores`.

    The candidates are the newest ``plan.bound.candidates`` messages in scope holding some
    term (as the bm25 pass takes them); each term's matches among them come from a rowid walk
    of its doclist from the oldest candidate on. Ranking them by bm25 would read every
    candidate's positions and length: several times the cost, for an order in which a
    message repeating one term can beat one holding more of the terms. ``corpora[0]`` is the
    store's index, the others the small in-memory one of pending rows.
    """
    assert plan.bound is not None
    seqs: dict[int, int] = {}
    words: list[set[int]] = [set() for _ in plan.terms]
    for corpus in corpora:
        # The forms the store's index holds say nothing of the pending rows: all forms there.
        forms = plan.forms if corpus is corpora[0] else None
        match = _fts_match(plan.terms, "any", forms)
        if match is None:
            return []
        found = {
            int(rowid): int(seq)
            for rowid, seq in conn.execute(
                f"SELECT x.rowid, {corpus.order} FROM {corpus.fts} CROSS JOIN {corpus.table} x "
                f"ON x.rowid = {corpus.fts}.rowid WHERE {corpus.fts} MATCH ? "
                f"AND {scope.format(p='+')} ORDER BY {corpus.fts}.rowid DESC "
                f"LIMIT {int(plan.bound.candidates)}",
                [match, *scope_params],
            )
        }
        if not found:
            continue
        seqs.update(found)
        low = min(found)
        sql = f"SELECT rowid FROM {corpus.fts} WHERE {corpus.fts} MATCH ? AND rowid >= ?"
        for term, matched in zip(plan.terms, words, strict=True):
            expression = fts5_term(term, forms)
            if expression is not None:
                matched.update(r for (r,) in conn.execute(sql, (expression, low)) if r in found)
    scores = rules.coverage_scores(words, [set() for _ in words], len(seqs), "any")
    return _top_hits(conn, scores, seqs, limit)
