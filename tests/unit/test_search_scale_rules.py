"""The dialect-free rules that keep a large store's search cost in step with its answer."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from threadline import _search_query as rules
from threadline._search_query import coverage_scores, rowid_windows, split_common, top_rows


@given(st.sets(st.integers(1, 10_000), max_size=300), st.integers(1, 20))
def test_windows_cover_every_rowid_in_few_disjoint_ranges(rowids: set[int], most: int) -> None:
    ordered = sorted(rowids)
    windows = rowid_windows(ordered, max_windows=most)
    assert len(windows) <= most
    assert all(low <= high for low, high in windows)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(windows))
    assert all(any(low <= r <= high for low, high in windows) for r in ordered)
    assert all(low in rowids and high in rowids for low, high in windows)


def test_windows_leave_out_the_widest_gaps() -> None:
    assert rowid_windows([1, 2, 1000, 1001, 5000], max_windows=3) == [
        (1, 2), (1000, 1001), (5000, 5000),
    ]  # fmt: skip
    assert rowid_windows([1, 2, 3, 4], max_windows=1) == [(1, 4)]


def test_common_terms_are_left_out_only_beside_a_rarer_one() -> None:
    many = rules.COMMON_DOCS + 1
    assert split_common([many, 5]) == ([1], [0])
    assert split_common([many, many]) == ([0, 1], [])
    assert split_common([many, None]) == ([1], [0])  # a substring term is kept
    assert split_common([rules.COMMON_DOCS, 5]) == ([0, 1], [])  # at the threshold: kept


def test_the_thresholds_spare_stores_under_ten_thousand_messages() -> None:
    for value in (
        rules.COMMON_DOCS,
        rules.LARGE_STORE,
        rules.LOCAL_SEARCH_STORE,
        rules.LOCAL_SEARCH_SESSION,
    ):
        assert isinstance(value, int) and value >= 10_000


def test_rows_with_more_and_rarer_terms_score_higher() -> None:
    rare, common = {1, 2}, {1, 2, 3, 4, 5, 6, 7, 8}
    scores = coverage_scores([rare, common], [set(), set()], 10, "any")
    assert scores[1] > scores[3] and scores[1] == scores[2]
    assert coverage_scores([rare, common], [set(), set()], 10, "all").keys() == {1, 2}
    only_substring = coverage_scores([set()], [{9}], 10, "any")
    assert only_substring == {9: 0.0}
    assert coverage_scores([], [], 10, "any") == {}


def test_ties_go_to_the_newest() -> None:
    assert top_rows({5: 1.0, 6: 1.0, 7: 2.0}, {5: 10, 6: 11, 7: 1}, 3) == [7, 6, 5]
