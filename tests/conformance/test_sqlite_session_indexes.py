"""SQLite: the registry indexes an append rewrites, and the reads that use them (schema 4).

Every append moves its session's ``updated_at``; SQLite rewrites each index entry holding it.
The per-user listing index (``tl_sessions_owned``) only holds sessions with a user, so an append
to a session without one writes a page fewer; those sessions are found through
``tl_sessions_ownerless``, which no append touches.
"""

from __future__ import annotations

import os
from pathlib import Path

import threadline
from threadline.messages import user

_FRAME = 24 + 4096  # WAL frame header + a default-size page


def _plan(store: threadline.SQLiteStore, sql: str, params: tuple[object, ...]) -> str:
    rows = store._conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return " | ".join(str(row[-1]) for row in rows)


def test_listing_and_owner_queries_use_the_partial_indexes(tmp_path: Path) -> None:
    with threadline.SQLiteStore(str(tmp_path / "s.db")) as store:
        for i in range(30):
            store.create_session("app", f"u{i}", user_id=f"user{i % 3}")
            store.create_session("app", f"n{i}")
        by_user = (
            "SELECT id FROM tl_sessions WHERE app = ? AND user_id = ? "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        assert "tl_sessions_owned" in _plan(store, by_user, ("app", "user1", 51))
        count_none = "SELECT COUNT(*) FROM tl_sessions WHERE app = ? AND user_id IS NULL"
        assert "tl_sessions_ownerless" in _plan(store, count_none, ("app",))
        recent = "SELECT id FROM tl_sessions WHERE app = ? ORDER BY updated_at DESC, id DESC"
        assert "tl_sessions_recent" in _plan(store, recent, ("app",))
        # The answers themselves, newest first.
        store.append_messages("app", "u4", [user("x")], user_id="user1")
        listed = store.list_sessions("app", user_id="user1").sessions
        assert [s.id for s in listed] == ["u4", *[f"u{i}" for i in range(28, -1, -3) if i != 4]]
        assert store.count_sessions("app", without_user=True) == 30
        assert store.count_sessions("app", user_id="user2") == 10
        assert store.list_sessions("app", limit=1).sessions[0].id == "u4"


def _wal_frames_per_append(
    store: threadline.SQLiteStore, session_id: str, owner: str | None
) -> float:
    conn = store._conn
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = store.path + "-wal"
    appends = 40
    for i in range(appends):
        store.append_messages("app", session_id, [user(f"note {i}")], user_id=owner)
    return (os.path.getsize(wal) - 32) / _FRAME / appends


def test_an_append_to_a_session_without_a_user_writes_a_page_fewer(tmp_path: Path) -> None:
    with threadline.SQLiteStore(str(tmp_path / "s.db"), synchronous="full") as store:
        store._conn.execute("PRAGMA wal_autocheckpoint = 0")  # keep every frame in the log
        for i in range(50):  # other sessions in both listings, as in a real app
            store.create_session("app", f"o{i}", user_id="someone")
            store.create_session("app", f"n{i}")
        store.append_messages("app", "mine", [user("first")], user_id="ana")
        store.append_messages("app", "anon", [user("first")])
        owned = _wal_frames_per_append(store, "mine", "ana")
        ownerless = _wal_frames_per_append(store, "anon", None)
        # One index page fewer per commit (leaf splits elsewhere blur the exact count).
        assert ownerless <= owned - 0.5, (owned, ownerless)
