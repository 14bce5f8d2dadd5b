"""PostgreSQL search: user terms compiled to ``tsquery`` / ``LIKE`` conditions and scores,
next to the SQL that runs them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from threadline import _search_query as rules
from threadline._search_query import (
    WIDE_CLASS,
    MatchMode,
    Term,
    is_stop_term,
    search_form,
    split_glued,
)
from threadline.store._sql.base import OwnerFilter, owner_clause
from threadline.store.postgres._schema import WIDE_TEXT

if TYPE_CHECKING:  # psycopg is an optional extra: imported lazily at run time
    from psycopg import Connection

    PgConn = Connection[tuple[Any, ...]]


_WIDE = re.compile(WIDE_CLASS)


def like_pattern(text: str) -> str:
    """A ``LIKE ... ESCAPE '\\'`` pattern matching ``text`` anywhere.

    >>> like_pattern("50%_off")
    '%50\\\\%\\\\_off%'
    """
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def lowered_form(text: str) -> str:
    """``text`` as PostgreSQL's ``search_text`` column holds it: lowercased, then NFC (the
    lowercase of ``T`` + U+0308 composes, the capital does not), glued scripts split
    (``split_glued``: one column serves words and substrings). Query text compared with the
    column, as words or as a substring, is put in the same form.

    >>> lowered_form("T\u0308EST: 私はPythonで") == "\u1e97est: 私は python で"
    True
    """
    return split_glued(search_form(text.lower()))


# Spaces and ASCII punctuation: what may separate the words of a stop-word phrase. A class
# this small lets pg_trgm read trigrams such as " is" from the pattern (a class of every
# non-alphanumeric character would make it scan the whole table for short words).
_GAP = "[" + "".join(sorted(set(" \t\n\r\f\v!\"#$%&'()*+,./:;<=>?@_`{|}~"))) + "-]"


def stop_phrase_regex(term: Term) -> str:
    """A regular expression (PostgreSQL's ``~``) matching ``term``'s words in order, as
    whole words, in the ``search_text`` column: a term of only stop words, which the
    ``english`` word index leaves out, is matched so (docs/search.md, rule 3). The words may
    be separated by spaces and ASCII punctuation.

    >>> from threadline._search_query import parse_query
    >>> stop_phrase_regex(parse_query("What IS")[0]).replace(_GAP, "~")
    '(^|~)what~+is(~|$)'
    """
    if not all(re.fullmatch("[a-z]+", token) for token in term.tokens):
        raise AssertionError(f"not a stop-word term: {term.tokens!r}")
    return f"(^|{_GAP}){(_GAP + '+').join(term.tokens)}({_GAP}|$)"


def pg_tsquery_parts(terms: Iterable[Term]) -> list[tuple[str, str]]:
    """``(function, text)`` pairs for PostgreSQL, to be used as ``fn('english', %s)``.

    Phrases use ``phraseto_tsquery``, words ``plainto_tsquery``; both treat their input as
    plain text. The text is the term's own text (control characters removed, punctuation kept)
    so that PostgreSQL's parser sees e-mails, URLs, paths and versions exactly as
    ``to_tsvector`` does: ``plainto_tsquery('english', 'bob@example.com')`` is the single
    lexeme ``bob@example.com``, which splitting into words would never match.
    Terms without tokens, and terms of only stop words (:func:`stop_phrase_regex`), are left
    out. Combine with ``&&`` (all) or ``||`` (any).

    >>> from threadline._search_query import parse_query
    >>> pg_tsquery_parts(parse_query('"deploy friday" bob@example.com'))
    [('phraseto_tsquery', 'deploy friday'), ('plainto_tsquery', 'bob@example.com')]
    """
    parts: list[tuple[str, str]] = []
    for term in terms:
        if not term.tokens or is_stop_term(term):
            continue
        fn = "phraseto_tsquery" if term.is_phrase else "plainto_tsquery"
        parts.append((fn, lowered_form(term.text)))
    return parts


# --------------------------------------------------------------------------- search SQL


class _TermSQL(NamedTuple):
    """One search term as SQL pieces: its tsquery function and text, and its LIKE pattern
    (``wide``: a one- or two-character substring, looked for among :data:`WIDE_TEXT` only;
    ``regex``: the pattern is a :func:`stop_phrase_regex`, a match as words).
    """

    function: str | None
    text: str
    pattern: str | None
    wide: bool = False
    regex: bool = False


_TSQUERY_FUNCTIONS = frozenset({"plainto_tsquery", "phraseto_tsquery"})


def _compile_terms(terms: Sequence[Term]) -> list[_TermSQL]:
    out: list[_TermSQL] = []
    for term in terms:
        if is_stop_term(term):
            out.append(_TermSQL(None, "", stop_phrase_regex(term), regex=True))
            continue
        parts = pg_tsquery_parts([term])
        function, text = parts[0] if parts else (None, "")
        if function is not None and function not in _TSQUERY_FUNCTIONS:
            raise AssertionError(f"unexpected tsquery function {function!r}")
        sub = lowered_form(term.substring)  # split at the column's very places
        pattern = like_pattern(sub) if term.needs_substring and term.substring else None
        wide = (
            pattern is not None and len(term.substring) < 3 and bool(_WIDE.search(term.substring))
        )
        if function is not None or pattern is not None:
            out.append(_TermSQL(function, text, pattern, wide))
    return out


def _tsquery(terms: Sequence[_TermSQL], joiner: str) -> tuple[str, list[Any]]:
    sql = f" {joiner} ".join(f"{t.function}('english', ?)" for t in terms)
    return f"({sql})", [t.text for t in terms]


def _like(text_col: str, wide: bool = False, regex: bool = False) -> str:
    if regex:
        # Kept off the trigram index ("|| ''"): a stop word's trigrams are in nearly every
        # text, so its bitmap would read whole posting lists; a scan that stops at the first
        # matches (plan_terms) reads a few pages.
        return f"({text_col} || '') ~ ?"
    like = f"{text_col} LIKE ? ESCAPE '\\'"
    # Trigrams cannot find a substring under three characters: the partial index of the
    # texts holding CJK or symbols can (the planner needs the index's exact condition).
    return f"({WIDE_TEXT} AND {like})" if wide else like


_IN_CHUNKS = (
    "EXISTS (SELECT 1 FROM tl_message_chunks c WHERE c.app = m.app "
    "AND c.session_id = m.session_id AND c.message_id = m.id AND c.tsv @@ {query})"
)


def _matches(tsv: str, query: str, params: list[Any], chunks: bool) -> tuple[str, list[Any]]:
    """``tsv @@ query``; with ``chunks``, also true when a word chunk of a long text matches."""
    if not chunks:
        return f"{tsv} @@ {query}", list(params)
    return f"({tsv} @@ {query} OR {_IN_CHUNKS.format(query=query)})", [*params, *params]


def _condition(
    terms: Sequence[_TermSQL],
    mode: MatchMode,
    tsv: str,
    text_col: str,
    chunks: bool = False,
    indexed: bool = True,
) -> tuple[str, list[Any]]:
    """WHERE clause selecting rows that satisfy all (or any) terms, using the GIN indexes.

    A term matches by its word query, or (terms needing it) by a case-insensitive substring.
    A word query of only stop words is empty: PostgreSQL drops it from ``&&``/``||``.
    ``indexed``: False when the rows are tested one by one (no index to serve the test of
    short CJK/symbol substrings, so it goes without the partial index's condition).
    ``chunks``: words beyond the first ``_TSV_CHARS`` characters of a long text count too
    (``tl_message_chunks``), term by term, so the terms of "all" may sit in different chunks.
    """
    clauses: list[str] = []
    params: list[Any] = []
    if mode == "any":
        words = [t for t in terms if t.function]
        if words:
            query, query_params = _tsquery(words, "||")
            clause, params = _matches(tsv, query, query_params, chunks)
            clauses.append(clause)
        for t in terms:
            if t.pattern:
                clauses.append(_like(text_col, t.wide and indexed, t.regex))
                params.append(t.pattern)
        return " OR ".join(clauses), params
    words_only = [t for t in terms if t.function and not t.pattern]
    if words_only and chunks:  # each word separately: they may be in different chunks
        for t in words_only:
            query = f"{t.function}('english', ?)"
            clause, term_params = _matches(tsv, query, [t.text], chunks)
            clauses.append(f"(numnode({query}) = 0 OR {clause})")
            params += [t.text, *term_params]
    elif words_only:
        query, params = _tsquery(words_only, "&&")
        if len(words_only) < len(terms):  # stop-word-only words must not veto substring terms
            clauses.append(f"(numnode({query}) = 0 OR {tsv} @@ {query})")
            params = params * 2
        else:
            clauses.append(f"{tsv} @@ {query}")
    for t in terms:
        if t.pattern and t.function:
            clause, term_params = _matches(tsv, f"{t.function}('english', ?)", [t.text], chunks)
            clauses.append(f"({clause} OR {_like(text_col, t.wide and indexed)})")
            params += [*term_params, t.pattern]
        elif t.pattern:
            clauses.append(_like(text_col, t.wide and indexed, t.regex))
            params.append(t.pattern)
    return " AND ".join(clauses), params


def _score(terms: Sequence[_TermSQL], tsv: str, text_col: str) -> tuple[str, list[Any]]:
    """Relevance: 1 per term matched as words (a stop-word phrase: by its regex), 0.5 per
    term matched only as a substring, plus ``ts_rank`` against all word terms (below 1), so
    substring-only hits rank lower."""
    pieces: list[str] = []
    params: list[Any] = []
    for t in terms:
        whens = []
        if t.function:
            whens.append(f"WHEN {tsv} @@ {t.function}('english', ?) THEN 1.0")
            params.append(t.text)
        if t.pattern:
            whens.append(f"WHEN {_like(text_col, regex=t.regex)} THEN {1.0 if t.regex else 0.5}")
            params.append(t.pattern)
        pieces.append(f"CASE {' '.join(whens)} ELSE 0.0 END")
    words = [t for t in terms if t.function]
    if words:
        query, query_params = _tsquery(words, "||")
        pieces.append(f"ts_rank({tsv}, {query})")
        params += query_params
    return "CAST(" + " + ".join(pieces) + " AS DOUBLE PRECISION)", params


def message_search_sql(
    app: str,
    terms: Sequence[Term],
    mode: MatchMode,
    session_id: str | None,
    owner: OwnerFilter,
    limit: int,
    *,
    long_texts: bool = False,
    candidates: int | None = None,
    scan_session: bool = False,
) -> tuple[str, list[Any]] | None:
    """SQL (``?`` placeholders) and parameters of one message-search pass; None if no term.

    Rows: ``(session_id, id, role, data, score)``, best first, ties newest ``seq`` first.
    ``long_texts``: only messages whose text is longer than one word index holds, matched
    against all their word chunks (a second, small pass; the first one skips no message).
    ``candidates``: score only that many matching messages (any ones: PostgreSQL has no
    store-wide order to pick the newest by). ``scan_session``: read the session's rows and
    test each (cost in step with the session) instead of the store-wide indexes, when the
    session holds at most :data:`~threadline._search_query.LOCAL_SEARCH_SESSION` messages
    (decided inside the statement).

    >>> from threadline._search_query import parse_query
    >>> sql, _ = message_search_sql("a", parse_query("x"), "all", None, None, 10, candidates=99)
    >>> "LIMIT 99" in sql
    True
    """
    compiled = _compile_terms(terms)
    if not compiled:
        return None
    where, where_params = _condition(compiled, mode, "m.tsv", "m.search_text", long_texts)
    tested = where  # the test of each row (without index conditions when none can serve it)
    score, score_params = _score(compiled, "m.tsv", "m.search_text")
    scope, scope_params = ["m.app = ?"], [app]
    if long_texts:
        scope.append(
            "EXISTS (SELECT 1 FROM tl_message_chunks c0 WHERE c0.app = m.app "
            "AND c0.session_id = m.session_id AND c0.message_id = m.id AND c0.idx = 1)"
        )
    source, source_params = "tl_messages m", []
    if session_id is not None:
        scope.append("m.session_id = ?")
        scope_params.append(session_id)
        if scan_session:
            # A session of at most LOCAL_SEARCH_SESSION messages: its rows, each tested
            # (OFFSET 0 is a fence the planner cannot push the text tests through); a larger
            # one: the store-wide indexes. The size is read once (an InitPlan), in the same
            # statement, and only one branch runs.
            size = "(SELECT message_count FROM tl_sessions WHERE app = ? AND id = ?)"
            most = int(rules.LOCAL_SEARCH_SESSION)
            source = (
                "(SELECT * FROM (SELECT * FROM tl_messages WHERE app = ? AND session_id = ? "
                f"OFFSET 0) a WHERE {size} <= {most} UNION ALL "
                f"SELECT * FROM tl_messages m WHERE m.app = ? AND m.session_id = ? "
                f"AND {size} > {most} AND ({where})) m"
            )
            source_params = [app, session_id, app, session_id]
            source_params += [app, session_id, app, session_id, *where_params]
            tested, _ = _condition(compiled, mode, "m.tsv", "m.search_text", long_texts, False)
    join = ""
    if owner is not None:
        join = " JOIN tl_sessions s ON s.app = m.app AND s.id = m.session_id"
        owner_where, owner_params = owner_clause(owner, "s.user_id")
        scope.append("TRUE" + owner_where)
        scope_params += owner_params
    order = "ORDER BY score DESC, m.seq DESC, m.session_id, m.id LIMIT ?"
    if candidates is not None:
        sql = (
            f"SELECT m.session_id, m.id, m.role, m.data, {score} AS score FROM ("
            f"SELECT m.* FROM {source}{join} WHERE {' AND '.join(scope)} AND ({tested}) "
            f"LIMIT {int(candidates)}) m {order}"
        )
    else:
        sql = (
            f"SELECT m.session_id, m.id, m.role, m.data, {score} AS score FROM {source}{join} "
            f"WHERE {' AND '.join(scope)} AND ({tested}) {order}"
        )
    params = [*score_params, *source_params, *scope_params, *where_params, limit]
    return sql, params


# One round trip: the planner's row count of tl_messages and, per text, its number of
# lexemes and an estimate of the messages holding all of them, from the frequencies of the
# most common lexemes that ANALYZE keeps (a lexeme not among them counts as rare).
_SQL_ESTIMATES = """
WITH n AS (SELECT GREATEST(reltuples, 0) AS n FROM pg_class WHERE oid = 'tl_messages'::regclass),
common AS (
    SELECT unnest(most_common_elems::text::text[]) AS lexeme,
        unnest(most_common_elem_freqs) AS freq
    FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'tl_messages'
    AND attname = 'tsv'),
terms AS (
    SELECT i, tsvector_to_array(to_tsvector('english', txt)) AS lexemes
    FROM unnest(?::text[]) WITH ORDINALITY AS t(txt, i))
SELECT (SELECT n FROM n)::bigint,
    ARRAY(SELECT cardinality(lexemes) FROM terms ORDER BY i),
    ARRAY(SELECT COALESCE((SELECT min(COALESCE(c.freq, 0)) FROM unnest(lexemes) AS l(lexeme)
        LEFT JOIN common c USING (lexeme)), 0) * (SELECT n FROM n) FROM terms ORDER BY i)
"""


class _Reader(Protocol):
    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...


class _SearchTx(_Reader, Protocol):
    #: The plan of a search's "all" pass, reused by its "any" pass: (key, plan, scan,
    #: the "any" pass's rows when the "all" pass already read them).
    search_plan: tuple[Any, Plan, bool, list[tuple[Any, ...]] | None] | None

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...


class Plan(NamedTuple):
    """How to search a store: the terms kept and how many matches to score (None: all)."""

    terms: list[Term]
    candidates: int | None = None


def plan_terms(tx: _Reader, terms: Sequence[Term]) -> Plan:
    """The plan of one app- or user-wide search pass (docs/search.md, "Cost").

    In a store of more than :data:`~threadline._search_query.LARGE_STORE` messages (by the
    planner's count), at most :data:`~threadline._search_query.RANKED_CANDIDATES` matches are
    scored. In a store of more than
    :data:`~threadline._search_query.COMMON_DOCS`, terms of words estimated in more than that
    many messages are left out when another term remains (when every term is that common,
    only :data:`~threadline._search_query.UNRANKED_CANDIDATES` matches are scored), and
    terms of stop words only (which match nothing) are dropped. A query of only stop words
    (one phrase, :func:`stop_phrase_regex`) scores the first ``limit`` matches found.
    """
    compiled = [_compile_terms([term]) for term in terms]
    plain = [bool(c and c[0].function and not c[0].pattern) for c in compiled]
    texts = [c[0].text for c, is_plain in zip(compiled, plain, strict=True) if is_plain]
    row = tx.one(_SQL_ESTIMATES, [texts])
    size = int(row[0]) if row else 0
    if size <= rules.LARGE_STORE:
        return Plan(list(terms))
    if all(is_stop_term(term) for term in terms):
        # A query of only stop words carries no ranking information: the first `limit`
        # matches found (candidates are at least `limit`), as SQLite's newest `limit`.
        return Plan(list(terms), 0)
    if size <= rules.COMMON_DOCS or row is None:
        return Plan(list(terms), rules.RANKED_CANDIDATES)
    lexemes, estimates = iter(row[1]), iter(row[2])
    kept_terms: list[Term] = []
    counts: list[int | None] = []
    for term, is_plain in zip(terms, plain, strict=True):
        if is_plain:
            estimate = next(estimates)
            if not next(lexemes):
                continue  # only stop words: matches nothing, ignored by && and || anyway
            counts.append(int(estimate))
        else:
            counts.append(None)
        kept_terms.append(term)
    kept, common = rules.split_common(counts)
    if not common and all(n is not None and n > rules.COMMON_DOCS for n in counts):
        return Plan(kept_terms, rules.UNRANKED_CANDIDATES)
    return Plan([kept_terms[i] for i in kept], rules.RANKED_CANDIDATES)


def entry_search_sql(
    app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
) -> tuple[str, list[Any]] | None:
    """SQL and parameters of one entry-search pass: rows ``(key, content, description)``."""
    compiled = _compile_terms(terms)
    if not compiled:
        return None
    where, where_params = _condition(compiled, mode, "tsv", "search_text")
    score, score_params = _score(compiled, "tsv", "search_text")
    sql = (
        f"SELECT key, content, description FROM tl_entries WHERE app = ? AND label = ? "
        f"AND ({where}) ORDER BY {score} DESC, updated_at DESC, key LIMIT ?"
    )
    return sql, [app, label, *where_params, *score_params, limit]


def search_message_rows(
    tx: _SearchTx,
    app: str,
    terms: Sequence[Term],
    mode: MatchMode,
    session_id: str | None,
    owner: OwnerFilter,
    limit: int,
) -> list[tuple[Any, ...]]:
    """One search pass (``SQLStore._search_message_rows``): rows ``(session_id, id, role,
    data, score)``, best first, in one round trip after the plan's (two when an app- or
    user-wide "all" pass has terms that match as words or substrings; inside one session
    the "all" pass also answers the "any" pass that follows it when it finds nothing)."""
    # In one session, test its own rows if it is not huge (docs/search.md, "Cost"); else
    # bound the work.
    key = (tuple(terms), session_id)
    if mode == "any" and tx.search_plan is not None and tx.search_plan[0] == key:
        _, plan, scan, answered = tx.search_plan
        if answered is not None:
            return answered
    else:
        scan = session_id is not None  # the statement picks rows or indexes by size
        plan = Plan(list(terms)) if session_id is not None else plan_terms(tx, terms)
        tx.search_plan = (key, plan, scan, None)
    terms = plan.terms
    args = (app, session_id, owner, limit, plan, scan)
    if mode == "all" and scan and len(terms) > 1:
        # The session's rows are read once for both passes: the "any" rows come back only
        # when no row holds every term (the second branch is skipped otherwise).
        every, some = _pass_sql(terms, "all", *args), _pass_sql(terms, "any", *args)
        if every is not None and some is not None:
            rows = tx.all(
                f"WITH a AS ({every[0]}), b AS ({some[0]}) SELECT 0, a.* FROM a "
                "UNION ALL SELECT 1, b.* FROM b WHERE NOT EXISTS (SELECT 1 FROM a)",
                [*every[1], *some[1]],
            )
            found = [row[1:] for row in rows if row[0] == 0]
            if found:
                return _merge(found, limit)
            tx.search_plan = (key, plan, scan, _merge([row[1:] for row in rows], limit))
            return []
    if mode == "all" and not scan and any(t.needs_substring for t in terms):
        # A hit holding every term as words outscores any hit holding one only as a
        # substring (1 per term against 0.5; ts_rank stays below 0.1 with unweighted
        # vectors), so when there are `limit` of those they are the answer, and the trigram
        # index, whose common trigrams (`` a ``, ``om ``...) cost the most, is not read.
        words = [replace(t, needs_substring=False) for t in terms]
        if all(t.tokens for t in terms):
            rows = _run_pass(tx, _pass_sql(words, mode, *args), limit)
            if len(rows) >= limit:
                return rows
    return _run_pass(tx, _pass_sql(terms, mode, *args), limit)


def _pass_sql(
    terms: Sequence[Term],
    mode: MatchMode,
    app: str,
    session_id: str | None,
    owner: OwnerFilter,
    limit: int,
    plan: Plan,
    scan: bool,
) -> tuple[str, list[Any]] | None:
    """One pass as one statement: rows ``(part, n, session_id, id, role, data, score)``
    for :func:`_merge` (part 1: the long texts' word chunks), or None without terms."""
    built = message_search_sql(
        app, terms, mode, session_id, owner, limit,
        candidates=None if plan.candidates is None else max(plan.candidates, limit),
        scan_session=scan,
    )  # fmt: skip
    if built is None:
        return None
    # Long texts are also matched against every word chunk: a small second pass over
    # only the messages that have chunks (in the same statement), merged by score.
    more = message_search_sql(app, terms, mode, session_id, owner, limit, long_texts=True)
    assert more is not None
    return (
        f"SELECT 0 AS part, row_number() OVER () AS n, a.* FROM ({built[0]}) a "
        f"UNION ALL SELECT 1, row_number() OVER (), b.* FROM ({more[0]}) b",
        [*built[1], *more[1]],
    )


def _merge(both: list[tuple[Any, ...]], limit: int) -> list[tuple[Any, ...]]:
    """The rows of :func:`_pass_sql`, best first: the main part, then chunk hits it lacks."""
    both.sort(key=lambda row: (row[0], row[1]))
    rows = [row[2:] for row in both if row[0] == 0]
    extra = [row[2:] for row in both if row[0] == 1]
    if not extra:
        return rows
    seen = {(row[0], row[1]) for row in rows}
    rows += [row for row in extra if (row[0], row[1]) not in seen]
    rows.sort(key=lambda row: -float(row[4]))
    return rows[:limit]


def _run_pass(
    tx: _SearchTx, built: tuple[str, list[Any]] | None, limit: int
) -> list[tuple[Any, ...]]:
    """Run one statement of :func:`_pass_sql` (``None``: no terms, no rows)."""
    return [] if built is None else _merge(tx.all(*built), limit)
