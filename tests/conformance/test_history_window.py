"""``get_history(limit=N)`` reads about N rows, not the whole path, and returns exactly the
last N messages of the full history, overlays included."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from threadline import Session
from threadline.messages import normalize_message

N = 20


class _CountingStore:
    """The real store, with the rows each path read returned counted (and full reads refused)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.rows_read = 0

    def get_path_tail(self, *args: Any, **kwargs: Any) -> Any:
        rows = self._store.get_path_tail(*args, **kwargs)
        self.rows_read += len(rows)
        return rows

    def get_history_tail_encoded(self, *args: Any, **kwargs: Any) -> Any:
        rows, overlays = self._store.get_history_tail_encoded(*args, **kwargs)
        self.rows_read += len(rows)
        return rows, overlays

    def get_path_encoded(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("get_history(limit=...) read the whole path")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _fill(store: Any, count: int) -> list[str]:
    messages = [normalize_message({"role": "user", "content": f"m{i}"}) for i in range(count)]
    return [m["id"] for m in store.append_messages("app", "s", messages)]


def test_a_window_reads_about_limit_rows(store: Any) -> None:
    ids = _fill(store, 1000)
    counting = _CountingStore(store)
    session = Session.create(counting).for_app("app").for_session("s")
    window = session.get_history(limit=N)
    assert [m["id"] for m in window] == ids[-N:]
    assert counting.rows_read == N
    # An overlay inside the window: the window widens once, not to the whole path.
    store.add_compaction("app", "s", "summary", ids[-10], ids[-5])
    counting.rows_read = 0
    window = session.get_history(limit=N)
    assert len(window) == N and counting.rows_read <= 3 * N
    # An overlay reaching far back: the window widens until it holds the overlay's start.
    store.add_compaction("app", "s", "old summary", ids[100], ids[-15])
    counting.rows_read = 0
    window = session.get_history(limit=N)
    plain = Session.create(store).for_app("app").for_session("s")
    assert window == plain.get_history()[-N:]
    assert counting.rows_read < 4 * len(ids)


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 60),
    overlays=st.lists(st.tuples(st.integers(0, 59), st.integers(0, 59)), max_size=4),
    limit=st.integers(1, 70),
)
def test_a_window_is_the_tail_of_the_full_history(
    tmp_path_factory: Any, size: int, overlays: list[tuple[int, int]], limit: int
) -> None:
    import threadline

    with threadline.connect(f"sqlite:///{tmp_path_factory.mktemp('w') / 'w.db'}") as store:
        ids = _fill(store, size)
        for a, b in overlays:
            start, end = sorted((a % size, b % size))
            store.add_compaction("app", "s", f"sum {start}-{end}", ids[start], ids[end])
        session = Session.create(store).for_app("app").for_session("s")
        full = session.get_history()
        assert session.get_history(limit=limit) == full[-limit:]
        middle = ids[size // 2]
        assert session.get_history(middle, limit=limit) == session.get_history(middle)[-limit:]


def test_a_limit_beyond_the_history_returns_all_of_it(store: Any) -> None:
    ids = _fill(store, 2)
    session = Session.create(store).for_app("app").for_session("s")
    assert [m["id"] for m in session.get_history(limit=3)] == ids  # returned only ids[-1:]
