"""Turn user search text into bounded, safe search terms (no backend syntax here).

User text is never parsed as query syntax: operators, ``*``, ``NEAR``, column filters and
parentheses are just words or separators. Any string is accepted and yields a (possibly empty)
list of terms, from which each backend builds its own query next to its search SQL
(``store/sqlite/_search.py``, ``store/postgres/_search.py``).

Terms: double-quoted phrases (``"deploy friday"``; an unterminated quote is ignored) and
whitespace-separated words. NUL, other control characters and lone surrogates count as
whitespace. Terms of only :data:`STOP_WORDS` are left out, unless the query has nothing else:
then it is one phrase of all its words.

The work one query can cause is bounded, by these rules in this order: only the first
:data:`MAX_QUERY_CHARS` characters are read; each term is cut to :data:`MAX_TERM_CHARS`
characters; stop words are left out (above); a term equal to an earlier one (same words,
same substring, both phrases or both not) is dropped; only the first
:data:`MAX_SUBSTRING_TERMS` terms keep their substring match (later ones match by their
words only, or are dropped when they have none); and the first :data:`MAX_TERMS` remaining
terms are kept.

Backends should treat one term as matching a message when its full-text expression matches
(built from ``term.tokens``), **or** — for terms with
``needs_substring`` — the lowercased message text contains ``term.substring``. "all" mode ANDs
the terms, "any" mode ORs them.

>>> [t.tokens for t in parse_query('"Deploy Friday" bob@example.com NEAR (')]
[('deploy', 'friday'), ('bob', 'example', 'com'), ('near',)]
>>> [t.needs_substring for t in parse_query("see https://x.io/a_b today")]
[False, True, False]
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Literal

MAX_TERMS = 16
"""Distinct terms beyond this many are ignored."""

MAX_SUBSTRING_TERMS = 4
"""Terms beyond this many that need a substring match (LIKE/trigram scans, the expensive
kind) are matched by their words only."""

MAX_TERM_CHARS = 256
"""Each term's text is cut to this many characters before tokenising."""

MAX_QUERY_CHARS = 65_536
"""Only this many characters of a query are read."""

MatchMode = Literal["all", "any"]

# Code point ranges of scripts written without spaces between words (CJK, Kana, Hangul,
# Thai, Lao, Khmer, Myanmar). FTS tokenizers keep whole runs of these as one token, so
# word matching cannot find a word inside a sentence: such terms need a substring search.
_NO_SPACE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x31FF),  # Hiragana, Katakana, Bopomofo, Hangul compat, Kanbun, ext.
    (0x3400, 0x4DBF),  # CJK ext. A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo ext. A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo ext. B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFFDC),  # half-width Katakana and Hangul
    (0x20000, 0x3FFFF),  # CJK ext. B and later
)

# A superset of the characters that make a one- or two-character term need a substring
# search (scripts written without spaces, and symbols such as emoji, Unicode
# category So). Texts containing none of them cannot match such a term.
WIDE_RANGES = (
    (0x00A6, 0x00B0), (0x0482, 0x0482), (0x058D, 0x058E), (0x060E, 0x060F), (0x06DE, 0x06FE),
    (0x07F6, 0x07F6), (0x09FA, 0x09FA), (0x0B70, 0x0B70), (0x0BF3, 0x0BFA), (0x0C7F, 0x0C7F),
    (0x0D4F, 0x0D79), (0x0E00, 0x0FFF), (0x1000, 0x11FF), (0x1390, 0x1399), (0x166D, 0x166D),
    (0x1780, 0x17FF), (0x1940, 0x1940), (0x19DE, 0x19FF), (0x1B61, 0x1B7C), (0x2100, 0x21FF),
    (0x2300, 0x2BFF), (0x2CE5, 0x2CEA), (0x2E50, 0xA4CF), (0xA828, 0xA839), (0xA960, 0xA97F),
    (0xAA77, 0xAA79), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFD40, 0xFD4F), (0xFDCF, 0xFDFF),
    (0xFF66, 0xFFFD), (0x10137, 0x101FC), (0x10877, 0x10878), (0x10AC8, 0x10AC8),
    (0x1173F, 0x1173F), (0x11FD5, 0x11FF1), (0x16B3C, 0x16B45), (0x1BC9C, 0x1BC9C),
    (0x1CF50, 0x1DAFF), (0x1E14F, 0x1E14F), (0x1EC70, 0x1EEFF), (0x1F000, 0x3FFFF),
)  # fmt: skip

WIDE_CLASS = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in WIDE_RANGES) + "]"
"""A regular-expression class of the characters in :data:`WIDE_RANGES` (the same syntax in
Python's ``re`` and PostgreSQL's ``~``): texts that can hold a one- or two-character
substring term, which trigram indexes cannot find."""


_SCAN_RE = re.compile(r'"([^"]*)"|([^\s"]+)|"')


@dataclass(frozen=True)
class Term:
    """One search term.

    ``text`` is the raw chunk or phrase (without quotes, whitespace collapsed); ``tokens`` its
    lowercased word tokens (runs of letters/digits, combining marks kept inside words);
    ``needs_substring`` is True when word matching is not enough (CJK and similar scripts,
    e-mails, URLs, versions, paths, emoji); ``substring`` is the lowercased text with leading
    and trailing punctuation removed, for a substring (LIKE / trigram) match.

    >>> term = parse_query("v3.11.7,")[0]
    >>> term.tokens, term.needs_substring, term.substring
    (('v3', '11', '7'), True, 'v3.11.7')
    """

    text: str
    is_phrase: bool
    tokens: tuple[str, ...]
    needs_substring: bool
    substring: str = ""


def _is_token_char(ch: str) -> bool:
    # Letters and digits, like FTS5 unicode61; marks and private use too, so words in
    # scripts with vowel signs (Devanagari...) stay whole for PostgreSQL.
    return ch.isalnum() or unicodedata.category(ch) in ("Mn", "Mc", "Me", "Co")


def _is_kept_edge(ch: str) -> bool:
    # Characters a substring may start/end with: word characters and symbols such as emoji.
    return _is_token_char(ch) or unicodedata.category(ch) == "So"


def _is_no_space_script(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _NO_SPACE_RANGES)


def search_form(text: str) -> str:
    """``text`` as the search index holds it and queries are read: Unicode NFC.

    The same word can be written precomposed (``が``, ``é``, a Hangul syllable) or as a base
    character plus combining marks (``か`` + U+3099, jamo), as macOS file names and some input
    methods do. Indexing and querying one form makes either spelling find the other.

    >>> search_form("\u304b\u3099") == "\u304c", search_form("plain ascii")
    (True, 'plain ascii')
    """
    if text.isascii():  # nearly every text: a flag read, no copy
        return text
    return unicodedata.normalize("NFC", text)


NO_SPACE_CLASS = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _NO_SPACE_RANGES) + "]"
"""A regular-expression class of the scripts written without spaces (the same syntax in
Python's ``re`` and PostgreSQL's ``~``)."""
# Latin-script letters (accented ones, Vietnamese, IPA, full-width forms) and digits: a word
# of them glued to a script written without spaces is a word of its own. Other scripts with
# spaces (Greek, Cyrillic...) are left as they were: the index of stores already written
# holds them glued (an upgrade re-splits only what these ranges add).
_LATIN_RANGES = (
    (0x0030, 0x0039), (0x0041, 0x005A), (0x0061, 0x007A),  # ASCII digits and letters
    (0x00AA, 0x00AA), (0x00BA, 0x00BA), (0x00C0, 0x00D6), (0x00D8, 0x00F6),  # Latin-1
    (0x00F8, 0x02AF),  # Latin-1, Latin Extended-A and -B, IPA
    (0x1E00, 0x1EFF),  # Latin Extended Additional (Vietnamese)
    (0x2C60, 0x2C7F), (0xA722, 0xA7FF), (0xAB30, 0xAB5A),  # Latin Extended-C, -D, -E
    (0xFB00, 0xFB06),  # Latin ligatures (ﬁ)
    (0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A),  # full-width digits and letters
)  # fmt: skip
_LATIN = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _LATIN_RANGES) + "]"
# Combining accents NFC cannot compose with their letter stay after it: part of the word.
_LATIN_WORD_END = _LATIN + "[\u0300-\u036f]*"
# Two passes, each a pair of captured groups: the same in Python's re and PostgreSQL's
# regexp_replace (see store/postgres/_schema.py), so text split here and by an upgrade agree.
GLUED = (f"({NO_SPACE_CLASS})({_LATIN})", f"({_LATIN_WORD_END})({NO_SPACE_CLASS})")
"""Where :func:`split_glued` puts a space: each pattern's two groups, in this order."""
_GLUED_RES = tuple(re.compile(pattern) for pattern in GLUED)


def split_glued(text: str) -> str:
    """``text`` with a space wherever a script written without spaces touches a Latin
    letter (accented too) or a digit: what the word index holds, so ``Python`` is a word of
    ``私はPythonで`` and ``Café`` one of ``私はCaféで`` (FTS tokenizers keep such a run
    whole). Substring indexes keep the text as written.

    >>> split_glued("私はPythonで2024年"), split_glued("私はCaféで"), split_glued("plain text")
    ('私は Python で 2024 年', '私は Café で', 'plain text')
    """
    if text.isascii():
        return text
    for pattern in _GLUED_RES:
        text = pattern.sub(r"\1 \2", text)
    return text


def _clean(text: str) -> str:
    """Replace control characters and lone surrogates by spaces (the result in NFC)."""
    cleaned = "".join(" " if unicodedata.category(ch) in ("Cc", "Cs") else ch for ch in text)
    return search_form(cleaned)


def tokenize(text: str) -> tuple[str, ...]:
    """Split ``text`` into lowercased word tokens; everything but letters/digits separates.

    >>> tokenize("Bob@Example.com")
    ('bob', 'example', 'com')
    """
    tokens: list[str] = []
    current: list[str] = []
    for ch in text + " ":
        if _is_token_char(ch):
            current.append(ch)
            continue
        # A run of only combining marks is not a word.
        if any(c.isalnum() or unicodedata.category(c) == "Co" for c in current):
            tokens.append(search_form("".join(current).lower()))  # lower() can undo NFC
        current = []
    return tuple(tokens)


def _trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and not _is_kept_edge(text[start]):
        start += 1
    while end > start and not _is_kept_edge(text[end - 1]):
        end -= 1
    return text[start:end]


def _has_inner_separator(chunk: str) -> bool:
    """True if a non-word character sits between word characters (``a@b``, ``3.11``)."""
    inner = [i for i, ch in enumerate(chunk) if _is_token_char(ch)]
    if len(inner) < 2:
        return False
    return any(not _is_token_char(ch) for ch in chunk[inner[0] : inner[-1] + 1])


def _needs_substring(substring: str, tokens: tuple[str, ...]) -> bool:
    if not tokens:
        return bool(substring)  # emoji / symbols only: nothing for the FTS index to find
    if any(_is_no_space_script(ch) for ch in substring):
        return True
    return any(_has_inner_separator(chunk) for chunk in substring.split())


def make_term(text: str, *, is_phrase: bool = False) -> Term | None:
    """Build a term from one chunk or phrase; None when it holds nothing searchable.

    >>> make_term("(") is None, make_term("NEAR(").tokens
    (True, ('near',))
    """
    text = " ".join(text.split())[:MAX_TERM_CHARS]
    tokens = tokenize(split_glued(text))  # the words as the word index holds them
    substring = search_form(_trim(text).lower())  # lowercasing can undo NFC
    if not tokens and not substring:
        return None
    return Term(text, is_phrase, tokens, _needs_substring(substring, tokens), substring)


def parse_query(text: str) -> list[Term]:
    """Split user text into terms; never raises, never interprets operators. Terms of only
    stop words are left out (:func:`without_stop_words`).

    >>> [(t.text, t.is_phrase) for t in parse_query('deploy "on friday" "unterminated')]
    [('deploy', False), ('on friday', True), ('unterminated', False)]
    """
    if not isinstance(text, str):
        return []
    terms: list[Term] = []
    for match in _SCAN_RE.finditer(_clean(text[:MAX_QUERY_CHARS])):
        phrase, word = match.group(1), match.group(2)
        if phrase is None and word is None:
            continue  # an unmatched quote character: ignored
        term = make_term(phrase if phrase is not None else word, is_phrase=phrase is not None)
        if term is not None:
            terms.append(term)
    return bound_terms(without_stop_words(terms))


_STOP_WORD_TEXT = (
    # pronouns and determiners
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself "
    "she her hers herself it its itself they them their theirs themselves what which who whom "
    "this that these those a an the all any both each few more most other some such no nor "
    "not only own same "
    # verbs and the pieces of contractions (don't, it's)
    "am is are was were be been being have has had having do does did doing can will should "
    "don s t "
    # conjunctions, prepositions and adverbs
    "and but if or because as until while of at by for with about against between into "
    "through during before after above below to from up down in out on off over under again "
    "further then once here there when where why how so than too very just now"
)
STOP_WORDS = frozenset(_STOP_WORD_TEXT.split())
"""The English stop words both backends ignore in a query that has another word: the very
words PostgreSQL's ``english`` text-search configuration leaves out of its index, so a query
means the same on SQLite, whose index keeps every word (docs/search.md, rule 3)."""


def is_stop_term(term: Term) -> bool:
    """True when every word of ``term`` is a stop word (and it has words).

    >>> [is_stop_term(make_term(text)) for text in ("the", "it's", "the end", "🙂")]
    [True, True, False, False]
    """
    return bool(term.tokens) and all(token in STOP_WORDS for token in term.tokens)


def without_stop_words(terms: Sequence[Term]) -> list[Term]:
    """``terms`` without those of only stop words; a query of nothing else is matched as
    written: one phrase of all its words (the first :data:`MAX_TERM_CHARS` characters' worth).

    >>> [t.text for t in parse_query("what is the capital of Peru?")]
    ['capital', 'Peru?']
    >>> [(t.text, t.is_phrase) for t in parse_query("What is the")]
    [('what is the', True)]
    """
    kept = [term for term in terms if not is_stop_term(term)]
    if kept or not terms:
        return kept
    words: list[str] = []
    for token in (token for term in terms for token in term.tokens):
        if len(" ".join([*words, token])) > MAX_TERM_CHARS:
            break
        words.append(token)
    phrase = make_term(" ".join(words), is_phrase=True)
    return [] if phrase is None else [phrase]


def bound_terms(terms: Iterable[Term]) -> list[Term]:
    """Apply the module's bounds: repeats dropped, at most :data:`MAX_SUBSTRING_TERMS`
    substring matches and :data:`MAX_TERMS` terms.

    >>> [t.text for t in parse_query("lorem " * 64 + "Lorem ipsum")]
    ['lorem', 'ipsum']
    >>> [t.needs_substring for t in parse_query("a.b c.d e.f g.h i.j k")]
    [True, True, True, True, False, False]
    """
    kept: list[Term] = []
    seen: set[tuple[bool, tuple[str, ...], bool, str]] = set()
    substring_terms = 0
    for term in terms:
        if term.needs_substring:
            if substring_terms >= MAX_SUBSTRING_TERMS:
                if not term.tokens:
                    continue
                term = replace(term, needs_substring=False)
            else:
                substring_terms += 1
        key = (term.is_phrase, term.tokens, term.needs_substring, term.substring)
        if key in seen:
            if term.needs_substring:
                substring_terms -= 1  # a repeat uses no scan
            continue
        seen.add(key)
        kept.append(term)
        if len(kept) >= MAX_TERMS:
            break
    return kept


# --------------------------------------------------------------------------- search at scale
#
# The rules below keep a search's cost in step with its answer instead of the store's size
# (docs/search.md, "Cost"). Every threshold is an absolute number of messages, at least
# 10,000: a store smaller than that never meets one and is searched exactly as before.

COMMON_DOCS = 50_000
"""A word term found in more than this many messages is *common*: when the query also has a
rarer word term, common terms are ignored like stop words (they carry almost no ranking
information and would make the backend score most of the store)."""

COUNT_MEMORY_SECONDS = 60.0
"""How long SQLite reuses a word's count of messages (made up to :data:`COMMON_DOCS` + 1)
before counting again: counting costs most for the words most queries hold ("the", "what",
"we"). Only the choice of which terms to leave out (a word crossing :data:`COMMON_DOCS`)
can lag behind the store by this long; which messages match is never remembered."""

LARGE_STORE = 10_000
"""A store holding more messages than this is *large*: its app- and user-wide searches rank
at most :data:`RANKED_CANDIDATES` matches. Smaller stores rank every match."""

RANKED_CANDIDATES = 2_000
"""At most this many matching messages are scored and ranked per search of a large store (on
SQLite the newest ones); the rest are not considered for the top hits."""

UNRANKED_CANDIDATES = 1_000
"""When every term is common, at most this many matches are considered (SQLite: the newest
``limit``, unscored; PostgreSQL: this many, scored): none of them carries ranking
information."""

LOCAL_SEARCH_STORE = 10_000
"""In a store holding more messages than this, a search inside one session (of at most
:data:`LOCAL_SEARCH_SESSION` messages) works on that session's own rows, so its cost follows
the session's size, not the store's."""

LOCAL_SEARCH_SESSION = 50_000
"""Sessions larger than this are searched through the store-wide index even when scoped."""


def split_common(doc_counts: Sequence[int | None]) -> tuple[list[int], list[int]]:
    """Indexes of the terms to search with, and of the common ones left out.

    ``doc_counts[i]`` is how many messages term ``i`` occurs in (capped anywhere above
    :data:`COMMON_DOCS` is fine), or None for a term that is never left out (substring terms,
    terms without words). Common terms are left out only when some other term is kept.

    >>> split_common([600_000, 120, None])
    ([1, 2], [0])
    >>> split_common([600_000, 70_000])
    ([0, 1], [])
    """
    common = [i for i, n in enumerate(doc_counts) if n is not None and n > COMMON_DOCS]
    if len(common) == len(doc_counts):
        return list(range(len(doc_counts))), []
    return [i for i in range(len(doc_counts)) if i not in common], common


def rowid_windows(rowids: Sequence[int], max_windows: int = 16) -> list[tuple[int, int]]:
    """Cover sorted ``rowids`` with at most ``max_windows`` ranges, leaving out the widest gaps.

    A session's messages are interleaved with other sessions' in the store-wide index; range
    scans over these windows read the session's messages plus only the narrowest gaps.

    >>> rowid_windows([1, 2, 3, 50, 51, 900], max_windows=2)
    [(1, 51), (900, 900)]
    >>> rowid_windows([])
    []
    """
    if not rowids:
        return []
    gaps = sorted(range(1, len(rowids)), key=lambda i: rowids[i] - rowids[i - 1], reverse=True)
    cuts = sorted(i for i in gaps[: max_windows - 1] if rowids[i] - rowids[i - 1] > 1)
    starts = [0, *cuts]
    ends = [*cuts, len(rowids)]
    return [(rowids[a], rowids[b - 1]) for a, b in zip(starts, ends, strict=True)]


def coverage_scores(
    words: Sequence[Set[int]],
    substrings: Sequence[Set[int]],
    total: int,
    mode: MatchMode,
) -> dict[int, float]:
    """Score the rows of a small corpus (one session) from which terms each row matches.

    ``words[i]`` / ``substrings[i]``: rows matching term ``i`` by its words / only by its
    substring. A row qualifies when it matches every term ("all") or some term ("any"), and
    scores the sum of the BM25 inverse document frequency, within the ``total`` rows, of the
    terms it matches as words (0.0 when it matches only substrings): rows holding more, and
    rarer, terms rank first.

    >>> scores = coverage_scores([{1, 2}, {2}], [set(), set()], 10, "any")
    >>> scores[2] > scores[1] > 0
    True
    >>> sorted(coverage_scores([{1, 2}, {2}], [set(), {1}], 10, "all"))  # 1: a substring
    [1, 2]
    """
    matched: list[set[int]] = [set(w) | set(s) for w, s in zip(words, substrings, strict=True)]
    if not matched:
        return {}
    rows = set.intersection(*matched) if mode == "all" else set.union(*matched)
    idf = [math.log(1.0 + (total - len(found) + 0.5) / (len(found) + 0.5)) for found in matched]
    scores = dict.fromkeys(rows, 0.0)
    for weight, found in zip(idf, words, strict=True):
        for row in found:
            if row in scores:
                scores[row] += weight
    return scores


def top_rows(scores: Mapping[int, float], order: Mapping[int, int], limit: int) -> list[int]:
    """The ``limit`` best rows: highest score, then highest ``order`` (newest), then rowid.

    >>> top_rows({1: 0.5, 2: 0.5, 3: 0.9}, {1: 7, 2: 3, 3: 1}, 2)
    [3, 1]
    """
    # A bounded heap: the candidates can be thousands, the hits a few.
    return heapq.nsmallest(limit, scores, key=lambda row: (-scores[row], -order.get(row, 0), -row))


SNIPPET_CHARS = 2000
"""A search hit's ``content`` holds at most this many characters of the message's text
(plus an ellipsis at each cut end), around the first place a term matches."""


def snippet(text: str, terms: Iterable[Term], limit: int = SNIPPET_CHARS) -> str:
    """``text`` itself when it is short, else the ``limit`` characters around the earliest
    match of any term (words matched case-insensitively), ``…`` marking each cut.

    >>> snippet("x" * 50 + " deploy friday " + "y" * 50, parse_query("friday"), limit=20)
    '…ploy friday yyyyyyyy…'
    """
    if len(text) <= limit:
        return text
    text = search_form(text)  # the form the terms are in (a text stored decomposed)
    lowered = text.lower()
    found = [
        lowered.find(needle)
        for term in terms
        for needle in (term.substring or "", *term.tokens)
        if needle
    ]
    hits = [position for position in found if position >= 0]
    start = max(0, min(hits) - limit // 4) if hits else 0
    end = min(len(text), start + limit)
    start = max(0, end - limit)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


__all__ = [
    "COMMON_DOCS",
    "COUNT_MEMORY_SECONDS",
    "GLUED",
    "LARGE_STORE",
    "LOCAL_SEARCH_SESSION",
    "LOCAL_SEARCH_STORE",
    "MAX_QUERY_CHARS",
    "MAX_SUBSTRING_TERMS",
    "MAX_TERMS",
    "MAX_TERM_CHARS",
    "NO_SPACE_CLASS",
    "RANKED_CANDIDATES",
    "SNIPPET_CHARS",
    "STOP_WORDS",
    "UNRANKED_CANDIDATES",
    "WIDE_CLASS",
    "WIDE_RANGES",
    "MatchMode",
    "Term",
    "bound_terms",
    "coverage_scores",
    "is_stop_term",
    "make_term",
    "parse_query",
    "rowid_windows",
    "search_form",
    "snippet",
    "split_common",
    "split_glued",
    "tokenize",
    "top_rows",
    "without_stop_words",
]
