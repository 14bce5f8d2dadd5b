"""Search query parsing: user text is never query syntax, and every expression is valid."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline._search_query import MAX_TERM_CHARS, MAX_TERMS, Term, parse_query, tokenize
from threadline.store.postgres._search import like_pattern, pg_tsquery_parts
from threadline.store.sqlite._search import _STEMMER, fts5_quote, fts5_term, word_forms


def fts5_match(terms: list[Term], mode: str) -> str | None:
    """The terms' FTS5 expressions joined the way the SQLite store joins them."""
    parts = [p for p in (fts5_term(t) for t in terms) if p is not None]
    return {"all": " AND ", "any": " OR "}[mode].join(parts) if parts else None


def substring_terms(terms: list[Term]) -> list[str]:
    return [t.substring or t.text.lower() for t in terms if t.needs_substring]


# Every expression is quoted strings joined by AND/OR — no bare operators anywhere.
QUOTED = r'"(?:[^"]|"")*"'
# A term is one quoted string, or (for single words) a parenthesised OR of quoted word forms.
TERM = rf"(?:{QUOTED}|\({QUOTED}(?: OR {QUOTED})+\))"
EXPRESSION = re.compile(rf"{TERM}(?: (?:AND|OR) {TERM})*")

DOCS = [
    "Deploy on Friday after the review",
    "friday deploys are risky",
    "mail bob@example.com about it",
    "see https://example.com/docs/page?x=1 for details",
    "upgrade python to 3.11.7 today",
    "東京タワーに行きました",
    "party time 🎉 tonight",
    "the path is /usr/local/bin",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5(content, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO docs(content) VALUES (?)", [(d,) for d in DOCS])
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, query: str, mode: str = "all") -> list[str]:
    """Reference use of the module: per term, FTS phrase OR substring; terms ANDed/ORed."""
    terms = parse_query(query)
    if not terms:
        return []
    rows = conn.execute("SELECT rowid, content FROM docs").fetchall()
    hits = []
    for rowid, content in rows:
        results = []
        for term in terms:
            expr = fts5_term(term)
            found = bool(expr) and bool(
                conn.execute(
                    "SELECT 1 FROM docs WHERE docs MATCH ? AND rowid = ?", (expr, rowid)
                ).fetchone()
            )
            if term.needs_substring and term.substring in content.lower():
                found = True
            results.append(found)
        if (all if mode == "all" else any)(results):
            hits.append(content)
    return hits


def run_match(conn: sqlite3.Connection, expr: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT content FROM docs WHERE docs MATCH ?", (expr,))]


# --------------------------------------------------------------------------- parsing


def test_words_and_phrases() -> None:
    terms = parse_query('deploy "on Friday"  review')
    assert [(t.text, t.is_phrase, t.tokens) for t in terms] == [
        ("deploy", False, ("deploy",)),
        ("on Friday", True, ("on", "friday")),
        ("review", False, ("review",)),
    ]


def test_unterminated_quote_is_ignored() -> None:
    assert [(t.text, t.is_phrase) for t in parse_query('deploy "next friday')] == [
        ("deploy", False),
        ("next", False),
        ("friday", False),
    ]
    assert parse_query('"') == []
    assert parse_query('""') == []


def test_phrase_whitespace_collapsed() -> None:
    [term] = parse_query('"  deploy \n\t friday "')
    assert term.text == "deploy friday" and term.is_phrase


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", "\x00", "\x00 \x01\x1f", '" "', "( ) * ; --"])
def test_blank_or_punctuation_only_gives_no_terms(blank: str) -> None:
    assert parse_query(blank) == []
    assert fts5_match(parse_query(blank), "all") is None
    assert pg_tsquery_parts(parse_query(blank)) == []
    assert substring_terms(parse_query(blank)) == []


def test_operators_are_plain_words() -> None:
    terms = parse_query("AND ( OR NOT * XOR")  # stop words (and, or, not) left out
    assert [t.tokens for t in terms] == [("xor",)]
    assert fts5_match(parse_query("AND ( OR NOT *"), "all") == '"and or not"'  # only those


def test_near_and_star_and_column_filter() -> None:
    assert fts5_match(parse_query("NEAR(deploy friday, 5)"), "all") == (
        '"near deploy" AND ' + _forms("friday") + ' AND "5"'
    )
    assert fts5_match(parse_query("deplo*"), "all") == _forms("deplo")
    assert fts5_match(parse_query("content:deploy"), "all") == '"content deploy"'
    assert fts5_match(parse_query("^start +must -never"), "any") == (
        f'{_forms("start")} OR {_forms("must")} OR "never"'
    )


def _forms(word: str) -> str:
    """The store's expression for one word: its inflections, one per Porter stem."""
    return "(" + " OR ".join(f'"{w}"' for w in _STEMMER.distinct(word_forms(word))) + ")"


def test_sql_injection_text() -> None:
    terms = parse_query("'; DROP TABLE x; --")
    assert [t.tokens for t in terms] == [("drop",), ("table",), ("x",)]
    assert fts5_match(terms, "all") == f'{_forms("drop")} AND {_forms("table")} AND "x"'


def test_nul_and_controls_are_whitespace() -> None:
    terms = parse_query("deploy\x00friday\x07later")
    assert [t.text for t in terms] == ["deploy", "friday", "later"]


def test_lone_surrogates_are_whitespace() -> None:
    terms = parse_query("x\ud800b")
    assert [t.text for t in terms] == ["x", "b"]


def test_very_long_query_is_capped() -> None:
    words = " ".join(f"w{i}" for i in range(5000))
    terms = parse_query(words)
    assert len(terms) == MAX_TERMS
    [long_term] = parse_query("x" * 10_000)
    assert len(long_term.text) == MAX_TERM_CHARS
    assert parse_query("y" * 10_000 + " z")[1].text == "z"


def test_emoji_only_term_is_substring_only() -> None:
    [term] = parse_query("🎉")
    assert term.tokens == () and term.needs_substring and term.substring == "🎉"
    assert fts5_match([term], "all") is None
    assert substring_terms([term]) == ["🎉"]
    assert pg_tsquery_parts([term]) == []


def test_cjk_needs_substring() -> None:
    [term] = parse_query("東京")
    assert term.tokens == ("東京",) and term.needs_substring
    [hangul] = parse_query("서울")
    assert hangul.needs_substring


@pytest.mark.parametrize(
    ("text", "substring", "tokens"),
    [
        ("bob@example.com", "bob@example.com", ("bob", "example", "com")),
        ("(Bob@Example.com).", "bob@example.com", ("bob", "example", "com")),
        (
            "https://example.com/docs/page?x=1",
            "https://example.com/docs/page?x=1",
            ("https", "example", "com", "docs", "page", "x", "1"),
        ),
        ("3.11.7", "3.11.7", ("3", "11", "7")),
        ("/usr/local/bin", "usr/local/bin", ("usr", "local", "bin")),
        ("snake_case", "snake_case", ("snake", "case")),
    ],
)
def test_structured_strings_need_substring(
    text: str, substring: str, tokens: tuple[str, ...]
) -> None:
    [term] = parse_query(text)
    assert term.needs_substring
    assert term.substring == substring
    assert term.tokens == tokens


def test_plain_words_do_not_need_substring() -> None:
    terms = parse_query('deploy, "friday review" café naïve! (ok)')
    assert not any(t.needs_substring for t in terms)
    assert substring_terms(terms) == []


def test_tokenize_keeps_combining_marks_inside_words() -> None:
    assert tokenize("हिन्दी भाषा") == ("हिन्दी", "भाषा")
    # Tokens are in NFC (the form the index holds): the mark composes where it can.
    assert tokenize("Cafe\u0301 OK") == ("caf\u00e9", "ok")
    assert tokenize("T\u0308EST") == ("\u1e97est",)  # only the lowercase is precomposed


# --------------------------------------------------------------------------- FTS5


def test_fts5_quote_doubles_quotes() -> None:
    assert fts5_quote('a "b"') == '"a ""b"""'


def test_fts5_match_modes() -> None:
    terms = parse_query('"deploy friday" bob@example.com')
    assert fts5_match(terms, "all") == '"deploy friday" AND "bob example com"'
    assert fts5_match(terms, "any") == '"deploy friday" OR "bob example com"'


def test_fts5_phrase_matches_as_phrase(fts: sqlite3.Connection) -> None:
    phrase = fts5_match(parse_query('"deploy on friday"'), "all")
    assert phrase is not None
    assert run_match(fts, phrase) == ["Deploy on Friday after the review"]
    words = fts5_match(parse_query("deploy friday"), "all")
    assert words is not None
    assert sorted(run_match(fts, words)) == sorted(DOCS[:2])  # stemmed: deploys → deploy


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("bob@example.com", [DOCS[2]]),
        ("example.com/docs", [DOCS[3]]),
        ("3.11.7", [DOCS[4]]),
        ("東京", [DOCS[5]]),
        ("タワー", [DOCS[5]]),
        ("🎉", [DOCS[6]]),
        ("/usr/local", [DOCS[7]]),
        ('"deploy on friday" review', [DOCS[0]]),
        ("AND (", []),
    ],
)
def test_reference_search(fts: sqlite3.Connection, query: str, expected: list[str]) -> None:
    assert search(fts, query) == expected


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"""',
        "AND (",
        "*",
        "NEAR(",
        "NEAR(a b, 3)",
        "'; DROP TABLE x; --",
        "a\x00b",
        "x" * 10_000,
        "🎉🎉",
        "東京 タワー",
        "bob@example.com",
        "https://x.y/z?q=1&r=2",
        "3.11.7",
        "content:foo",
        "-foo +bar",
        "{a b}:c",
        "a OR b NOT c",
        "^x",
        "a\\b",
        "\u200b",
    ],
)
def test_hostile_queries_are_valid_fts5(fts: sqlite3.Connection, query: str) -> None:
    for mode in ("all", "any"):
        expr = fts5_match(parse_query(query), mode)
        if expr is not None:
            assert EXPRESSION.fullmatch(expr)
            run_match(fts, expr)
    search(fts, query)


# --------------------------------------------------------------------------- substrings, PG


def test_like_pattern_escapes_wildcards(fts: sqlite3.Connection) -> None:
    assert like_pattern("50%_off\\") == "%50\\%\\_off\\\\%"
    rows = ["50%_off\\ sale", "500 off sale", "5a%_off\\"]
    for text in rows:
        matched = fts.execute(
            "SELECT ? LIKE ? ESCAPE '\\'", (text, like_pattern("50%_off\\"))
        ).fetchone()[0]
        assert bool(matched) == (text == rows[0])


def test_pg_tsquery_parts() -> None:
    terms = parse_query('"deploy friday" (bob@example.com), 🎉 NEAR')
    assert pg_tsquery_parts(terms) == [
        ("phraseto_tsquery", "deploy friday"),
        ("plainto_tsquery", "(bob@example.com),"),
        ("plainto_tsquery", "near"),  # in the column's form (lowered_form)
    ]


# --------------------------------------------------------------------------- properties

ANY_TEXT = st.text() | st.text(alphabet=st.sampled_from(list('"*()^:+-{}, \x00\tabNEAR東🎉.@/')))
ALL_CHARS = st.text(alphabet=st.characters(blacklist_categories=()))  # surrogates included


@given(ALL_CHARS)
def test_parse_query_never_raises_even_with_surrogates(text: str) -> None:
    terms = parse_query(text)
    assert len(terms) <= MAX_TERMS
    for term in terms:
        assert isinstance(term, Term)
        assert term.tokens or term.needs_substring
        assert len(term.text) <= MAX_TERM_CHARS
        term.text.encode("utf-8")  # no lone surrogates reach a backend
        assert all(tok == tok.lower() and tok for tok in term.tokens)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(ANY_TEXT, st.sampled_from(["all", "any"]))
def test_fts5_match_is_always_valid(fts: sqlite3.Connection, text: str, mode: str) -> None:
    expr = fts5_match(parse_query(text), mode)
    if expr is None:
        return
    assert EXPRESSION.fullmatch(expr)
    try:
        run_match(fts, expr)
    except sqlite3.Error as exc:  # pragma: no cover - the property under test
        pytest.fail(f"FTS5 rejected {expr!r}: {exc}")


@given(ANY_TEXT)
def test_fts5_terms_are_quoted_tokens(text: str) -> None:
    for term in parse_query(text):
        expr = fts5_term(term)
        if expr is None:
            assert term.tokens == ()
            continue
        forms = _STEMMER.distinct(word_forms(term.tokens[0])) if len(term.tokens) == 1 else []
        if not term.is_phrase and len(forms) > 1:
            assert expr == "(" + " OR ".join(f'"{f}"' for f in forms) + ")"
        elif not term.is_phrase and forms:
            assert expr == f'"{forms[0]}"'
        else:
            assert expr == '"' + " ".join(term.tokens) + '"'
            assert '"' not in expr[1:-1]


def test_word_forms_bridge_porter_stems() -> None:
    # Porter stems "deploying" to "deploi" but "deployment" to "deploy": the forms cover both.
    assert {"deploy", "deploying", "deployment"} <= set(word_forms("deployed"))
    assert word_forms("ran") == ["ran"]  # short words are left to the stemmer
    assert word_forms("東京都庁") == ["東京都庁"]


@given(st.text())
def test_like_pattern_matches_itself(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return
    got = conn.execute(
        "SELECT ? LIKE ? ESCAPE '\\'", ("<" + text + ">", like_pattern(text))
    ).fetchone()
    assert got[0] == 1
