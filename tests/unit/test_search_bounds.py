"""The work one query can cause is bounded: repeats collapse, term and scan counts are capped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from threadline._search_query import (
    MAX_SUBSTRING_TERMS,
    MAX_TERM_CHARS,
    MAX_TERMS,
    parse_query,
)
from threadline.store.postgres import message_search_sql


def test_repeated_terms_collapse_to_one() -> None:
    assert parse_query("lorem " * 64) == parse_query("lorem")
    assert parse_query('"lorem ipsum" ' * 64) == parse_query('"lorem ipsum"')
    assert [t.text for t in parse_query("Lorem LOREM lorem")] == ["Lorem"]


def test_distinct_terms_are_capped_in_order() -> None:
    words = [f"w{i}" for i in range(100)]
    assert [t.text for t in parse_query(" ".join(words))] == words[:MAX_TERMS]


def test_substring_scans_are_capped() -> None:
    terms = parse_query(" ".join(f"a{i}%b{i}" for i in range(64)))
    assert sum(t.needs_substring for t in terms) == MAX_SUBSTRING_TERMS
    assert len(terms) == MAX_TERMS  # the rest still match by their words
    emoji_only = parse_query(" ".join("😀" * (i + 1) for i in range(10)))
    assert len(emoji_only) == MAX_SUBSTRING_TERMS  # no words to fall back on: dropped


def test_long_terms_are_cut() -> None:
    [term] = parse_query("x" * 10_000)
    assert len(term.text) == MAX_TERM_CHARS


def test_the_sql_of_a_repeated_query_is_the_sql_of_one_term() -> None:
    one = message_search_sql("a", parse_query("lorem"), "all", None, None, 10)
    many = message_search_sql("a", parse_query("lorem " * 64), "all", None, None, 10)
    assert one == many


@given(st.lists(st.text(max_size=40), max_size=200))
def test_any_query_stays_within_the_bounds(chunks: list[str]) -> None:
    terms = parse_query(" ".join(chunks))
    assert len(terms) <= MAX_TERMS
    assert sum(t.needs_substring for t in terms) <= MAX_SUBSTRING_TERMS
    assert all(len(t.text) <= MAX_TERM_CHARS for t in terms)
    keys = [(t.is_phrase, t.tokens, t.needs_substring, t.substring) for t in terms]
    assert len(keys) == len(set(keys))


def test_the_bounds_are_public() -> None:
    import inspect

    import threadline._search_query as module

    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (name.isupper() or getattr(value, "__module__", None) == module.__name__)
        and not inspect.ismodule(value)
    }
    assert {"MAX_SUBSTRING_TERMS", "bound_terms"} <= public
    assert public <= set(module.__all__), public - set(module.__all__)
