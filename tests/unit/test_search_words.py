"""Which words a query and the index hold: the stop-word list and words glued to CJK text."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from threadline._search_query import (
    MAX_TERM_CHARS,
    NO_SPACE_CLASS,
    STOP_WORDS,
    is_stop_term,
    parse_query,
    split_glued,
    tokenize,
)
from threadline.store.postgres._search import pg_tsquery_parts, stop_phrase_regex

# --------------------------------------------------------------------------- stop words

CONTENT = ["capital", "peru", "lima", "deploy", "zebra", "near", "xor", "2024"]
WORDS = st.sampled_from(sorted(STOP_WORDS)) | st.sampled_from(CONTENT)
SEPARATORS = st.sampled_from([" ", "  ", ", ", "? ", " (", ") ", "\n", " - ", "'"])


def test_the_list_is_lowercase_ascii_words_as_the_tokenizer_makes_them() -> None:
    assert len(STOP_WORDS) == 127
    for word in STOP_WORDS:
        assert re.fullmatch("[a-z]+", word), word
        assert tokenize(word.upper()) == (word,)


def test_the_issue_question_keeps_its_content_words() -> None:
    terms = parse_query("What is the capital of Peru?")
    assert [t.tokens for t in terms] == [("capital",), ("peru",)]
    assert not any(is_stop_term(t) for t in terms)


def test_a_query_of_only_stop_words_is_one_phrase_as_written() -> None:
    [term] = parse_query('What is "the"')
    assert (term.text, term.tokens, term.is_phrase) == ("what is the", ("what", "is", "the"), True)
    assert not term.needs_substring
    [contraction] = parse_query("it's")
    assert contraction.tokens == ("it", "s") and contraction.is_phrase
    assert pg_tsquery_parts([term]) == []  # PostgreSQL matches it by stop_phrase_regex


def test_a_long_query_of_stop_words_is_cut_at_a_whole_word() -> None:
    [term] = parse_query("the " * 10_000)
    assert set(term.tokens) == {"the"}
    assert len(term.text) <= MAX_TERM_CHARS < len(term.text) + len(" the")


@given(st.lists(st.tuples(WORDS, st.booleans()), min_size=1, max_size=12))
def test_stop_words_are_left_out_unless_there_is_nothing_else(
    words: list[tuple[str, bool]],
) -> None:
    """Quoted or not, a term of only stop words goes; a query of nothing else is one phrase
    of all its words, in order."""
    query = " ".join(f'"{w}"' if quoted else w for w, quoted in words)
    terms = parse_query(query)
    content = [(w, quoted) for w, quoted in words if w not in STOP_WORDS]
    if content:
        assert [(t.tokens[0], t.is_phrase) for t in terms] == list(dict.fromkeys(content))
        assert not any(is_stop_term(t) for t in terms)
    else:
        assert [(t.tokens, t.is_phrase) for t in terms] == [(tuple(w for w, _ in words), True)]


def _holds_phrase(text: str, words: tuple[str, ...]) -> bool:
    """The oracle: the words appear consecutively among the text's tokens, with only
    spaces and ASCII punctuation between them."""
    pieces = re.split(r"([a-z0-9]+)", text.lower())
    tokens = pieces[1::2]
    gaps = pieces[2::2]
    n = len(words)
    return any(
        tuple(tokens[i : i + n]) == words and all(gaps[i + k] for k in range(n - 1))
        for i in range(len(tokens) - n + 1)
    )


@given(
    st.lists(st.tuples(WORDS, SEPARATORS), min_size=1, max_size=12),
    st.lists(st.sampled_from(sorted(STOP_WORDS)), min_size=1, max_size=3),
)
def test_the_postgresql_stop_phrase_regex_matches_whole_words_in_order(
    text_words: list[tuple[str, str]], query_words: list[str]
) -> None:
    """``stop_phrase_regex`` is plain enough for Python's ``re``: checked against token
    order here, and against PostgreSQL by tests/conformance/test_search_words.py."""
    text = "".join(w + sep for w, sep in text_words)
    [term] = parse_query(" ".join(query_words))
    found = re.search(stop_phrase_regex(term), text.lower()) is not None
    assert found == _holds_phrase(text, term.tokens), (text, term.tokens)


# --------------------------------------------------------------------------- glued words

_LATIN_LETTERS = "aZçÉñøßĳŁőǅɐạỹﬁＰｙ"
LATIN_WORDS = st.text(alphabet=st.sampled_from(list(_LATIN_LETTERS + "09")), min_size=1)
CJK = st.text(alphabet=st.sampled_from(list("私はでを東京年한국ไทย")), min_size=1, max_size=4)
ANY = st.text(alphabet=st.sampled_from(list("私は東ab1é ｙ\u0303.")), max_size=12)


@given(CJK, LATIN_WORDS, CJK)
def test_a_latin_word_glued_to_cjk_is_a_token(before: str, word: str, after: str) -> None:
    tokens = tokenize(split_glued(before + word + after))
    assert unicodedata.normalize("NFC", word.lower()) in tokens


def test_an_accented_word_glued_to_japanese() -> None:
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFD", "私はCaféでADKを使っています"))
    assert split_glued(text) == "私は Café で ADK を使っています"
    assert [t.tokens for t in parse_query("Caféで")] == [("café", "で")]
    assert split_glued("記号q\u0303の例") == "記号 q\u0303 の例"  # a mark NFC keeps apart
    assert split_glued("Москваで") == "Москваで"  # only Latin-script words


@given(ANY)
def test_split_glued_only_adds_spaces_and_is_idempotent(text: str) -> None:
    """Only spaces are added (substring indexes and the upgrades rely on it), and splitting
    split text changes nothing (the upgrades re-split what was split before)."""
    once = split_glued(text)
    assert once.replace(" ", "") == text.replace(" ", "")
    assert split_glued(once) == once
    assert not re.search(f"{NO_SPACE_CLASS}[{_LATIN_LETTERS}09]", once)
