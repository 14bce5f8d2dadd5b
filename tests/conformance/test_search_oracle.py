"""Conformance: search checked against a plain-Python oracle under random writes.

A hypothesis state machine drives a real store (a SQLite file, ``:memory:``, or PostgreSQL)
through appends of 1-70 messages (CJK text, punctuated paths, texts past 256 KiB / 250,000
characters, large file attachments, some shared between messages; ids repeated in the batch or
already stored), edits, deletes, cleared, deleted, purged and forgotten sessions, rewinds and
re-imports of exported snapshots (``replace=True``), written through one ``threadline.connect``
or a second one of the same store. Every message holding a token holds a unique one
(``zq<n>``), so ranking and stemming do not matter: after every step, searching tokens (and, for
CJK and punctuated text, substrings around them) through the second connection, as another
process would, must return exactly the live messages holding them, app-wide and inside each
session, and a token deleted or edited away must find nothing. Some examples lower the
thresholds of ``threadline._search_query`` so that every store is searched as a large one
(candidate bounds, common words left out, sessions searched through their own rows).

SQLite indexes messages in batches of 64 (store/sqlite/_index.py): the steps cross batch
boundaries, reuse rowids after deletes and search pending rows from a reader connection, and
the number of pending rows must stay within a batch or two.
``THREADLINE_ORACLE_EXAMPLES`` / ``THREADLINE_ORACLE_STEPS`` run it longer.
"""

from __future__ import annotations

import base64
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    initialize,
    invariant,
    precondition,
    rule,
)

import threadline
from threadline import _search_query as rules
from threadline.export import export_sessions, import_sessions
from threadline.messages import normalize_message
from threadline.types import AUTO

from .conftest import TwoStores, oracle_settings, run_machine

SESSIONS = ("s0", "s1", "s2")
OWNER = {"s0": "u1", "s1": "u1", "s2": None}
KINDS = {"plain": 30, "filler": 30, "cjk": 8, "path": 8, "multi": 6, "empty": 4, "attach": 3,
         "shared": 3, "long": 1, "longcjk": 1}  # fmt: skip
GROUP = 16  # terms a query keeps (docs/search.md, rule 1)
BATCH = 64  # SQLite indexes messages in batches of this many (store/sqlite/_index.py)

_BLOBS: dict[int, str] = {}


def _data_url(seed: int) -> str:
    """A data URL of 200,000+ random bytes (over 256 KiB as base64: stored out of row)."""
    if seed not in _BLOBS:
        rnd = random.Random(seed)
        raw = rnd.randbytes(200_000 + rnd.randrange(4096))
        _BLOBS[seed] = "data:application/octet-stream;base64," + base64.b64encode(raw).decode()
    return _BLOBS[seed]


_LONG = "lorem ipsum dolor sit amet " * 10_000  # 270,000 characters
_LONG_CJK = "東京は晴れです" * 13_000  # 91,000 characters, 273,000 UTF-8 bytes


def make_message(mid: str, kind: str, token: str | None, seed: int) -> dict[str, Any]:
    """A message of ``kind`` holding ``token`` (if any) in its text."""
    tok = token or "apples"
    parts: list[dict[str, Any]]
    if kind == "filler":
        parts = [{"type": "text", "text": "filler words about apples and pears"}]
    elif kind == "empty":
        parts = []
    elif kind == "cjk":
        parts = [{"type": "text", "text": f"東京は晴れ{tok}です。大阪"}]
    elif kind == "path":
        parts = [{"type": "text", "text": f"see /srv/{tok}/notes.txt or bob.{tok}@example.com"}]
    elif kind == "multi":
        parts = [{"type": "text", "text": "first part"}, {"type": "text", "text": f"then {tok}"}]
    elif kind in ("attach", "shared"):
        url = _data_url(seed if kind == "attach" else seed % 3)
        parts = [
            {"type": "text", "text": f"a picture of {tok}"},
            {"type": "file", "mediaType": "application/octet-stream", "url": url},
        ]
    elif kind == "long":
        text = f"{_LONG}{tok} end" if seed % 2 else f"start {tok} {_LONG}"
        parts = [{"type": "text", "text": text}]
    elif kind == "longcjk":
        parts = [{"type": "text", "text": f"{_LONG_CJK} {tok}"}]
    else:
        parts = [{"type": "text", "text": f"plain words and {tok} here"}]
    if kind in ("filler", "empty"):
        assert token is None
    return normalize_message({"id": mid, "role": "user", "parts": parts})


def holds_token(kind: str) -> bool:
    return kind not in ("filler", "empty")


def forms_of(token: str, kind: str) -> list[str]:
    """Queries that find only the message holding ``token`` (written as ``kind`` makes it):
    the token, and for CJK and punctuated text, substrings around it (docs/search.md, 5)."""
    if kind == "cjk":
        return [token, f"れ{token}で"]
    if kind == "path":
        return [token, f"bob.{token}@example.com", f"/srv/{token}/notes.txt"]
    return [token]


class SearchOracle(TwoStores):
    """The model: per session, message id -> its token (or None); every token ever made."""

    def __init__(self) -> None:
        super().__init__()
        self.app = "a" + self.tag
        self.live: dict[str, dict[str, str | None]] = {}  # session -> id -> token
        self.tokens: dict[str, tuple[str, str] | None] = {}  # token -> (session, id) if live
        self.kinds: dict[str, str] = {}  # token -> the kind of message it was written in
        self.snapshots: list[tuple[str, list[dict[str, Any]], dict[str, str | None]]] = []
        self.touched: set[str] = set()
        self.saved: dict[str, int] = {}  # thresholds of threadline._search_query changed

    def teardown(self) -> None:
        for name, value in self.saved.items():
            setattr(rules, name, value)
        super().teardown()

    # ------------------------------------------------------------------ helpers

    def kill(self, token: str | None) -> None:
        if token is not None:
            self.tokens[token] = None
            self.touched.add(token)

    def set_session(self, session: str, messages: dict[str, str | None]) -> None:
        for token in self.live.pop(session, {}).values():
            self.kill(token)
        self.live[session] = dict(messages)
        for mid, token in messages.items():
            if token is not None:
                self.tokens[token] = (session, mid)
                self.touched.add(token)

    def live_ids(self) -> list[tuple[str, str]]:
        return [(s, m) for s, ids in sorted(self.live.items()) for m in ids]

    # ------------------------------------------------------------------ rules

    @initialize(
        scale=st.sampled_from(
            [
                {},
                {
                    "LARGE_STORE": -1,
                    "LOCAL_SEARCH_STORE": -1,
                    "LOCAL_SEARCH_SESSION": 100,
                    "RANKED_CANDIDATES": 1,
                    "UNRANKED_CANDIDATES": 1,
                },
            ]
        ),
        common=st.sampled_from([rules.COMMON_DOCS, 30, -1]),
    )
    def thresholds(self, scale: dict[str, int], common: int) -> None:
        """Small stores, or every store searched as a large one (docs/search.md, "Cost"):
        candidate bounds, common words left out (``common``), sessions searched by their rows."""
        if scale:
            for name, value in {**scale, "COMMON_DOCS": common}.items():
                self.saved.setdefault(name, getattr(rules, name))
                setattr(rules, name, value)

    @rule(
        data=st.data(),
        session=st.sampled_from(SESSIONS),
        size=st.one_of(st.integers(1, 8), st.integers(40, 70)),
        seed=st.integers(0, 2**32),
        other=st.booleans(),
    )
    def append(self, data: Any, session: str, size: int, seed: int, other: bool) -> None:
        kinds = random.Random(seed).choices(list(KINDS), weights=list(KINDS.values()), k=size)
        ids = self.live.get(session, {})
        parent: Any = data.draw(
            st.sampled_from([AUTO, None, *sorted(ids)]) if ids else st.sampled_from([AUTO, None])
        )
        batch: list[dict[str, Any]] = []
        added: dict[str, str | None] = {}
        for kind in kinds:
            mid = self.fresh("m")
            token = self.fresh("zq") if holds_token(kind) else None
            if token is not None:
                self.kinds[token] = kind
            batch.append(make_message(mid, kind, token, self.count))
            added[mid] = token
        if data.draw(st.booleans()):  # an id twice in the batch: only the first is written
            first = data.draw(st.sampled_from(batch))["id"]
            ignored = self.fresh("zq")
            self.kinds[ignored] = "cjk"
            batch.append(make_message(first, "cjk", ignored, 0))
            self.tokens[ignored] = None
            self.touched.add(ignored)
        if ids and data.draw(st.booleans()):  # an id already stored: not written again
            again = data.draw(st.sampled_from(sorted(ids)))
            position = data.draw(st.integers(0, len(batch)))
            ignored = self.fresh("zq")
            self.kinds[ignored] = "path"
            batch.insert(position, make_message(again, "path", ignored, 0))
            self.tokens[ignored] = None
            self.touched.add(ignored)
        self.store(other).append_messages(self.app, session, batch, parent, user_id=OWNER[session])
        self.set_session(session, {**ids, **added})

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data(), kind=st.sampled_from(list(KINDS)), other=st.booleans())
    def update(self, data: Any, kind: str, other: bool) -> None:
        session, mid = data.draw(st.sampled_from(self.live_ids()))
        token = self.fresh("zq") if holds_token(kind) else None
        if token is not None:
            self.kinds[token] = kind
        self.store(other).update_message(
            self.app, session, make_message(mid, kind, token, self.count)
        )
        self.kill(self.live[session][mid])
        self.live[session][mid] = token
        if token is not None:
            self.tokens[token] = (session, mid)
            self.touched.add(token)

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data(), other=st.booleans())
    def delete(self, data: Any, other: bool) -> None:
        session = data.draw(st.sampled_from(sorted(s for s in self.live if self.live[s])))
        ids = list(self.live[session])  # oldest first
        if data.draw(st.booleans()):  # the newest ones (SQLite reuses their rowids)
            doomed = ids[-data.draw(st.integers(1, len(ids))) :]
        else:
            doomed = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids)))
        count = self.store(other).delete_messages(self.app, session, [*doomed, "nope"])
        assert count == len(set(doomed))
        for mid in set(doomed):  # children of a deleted message become roots: they stay
            self.kill(self.live[session].pop(mid))

    @precondition(lambda self: bool(self.live))
    @rule(
        data=st.data(),
        how=st.sampled_from(["clear", "delete", "purge", "forget"]),
        other=st.booleans(),
    )
    def drop_session(self, data: Any, how: str, other: bool) -> None:
        session = data.draw(st.sampled_from(sorted(self.live)))
        store = self.store(other)
        if how == "clear":
            store.clear_messages(self.app, session)
            self.set_session(session, {})
        elif how == "delete":
            assert store.delete_session(self.app, session)
            self.set_session(session, {})
            del self.live[session]
        else:
            user = OWNER[session]
            if how == "forget" and user is not None:
                store.forget_user(self.app, user)
            else:
                before = store.now() + timedelta(days=1)
                store.purge_sessions(self.app, before=before, user_id=user)
            for gone in [s for s in self.live if user is None or OWNER[s] == user]:
                self.set_session(gone, {})
                del self.live[gone]

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def snapshot(self, data: Any) -> None:
        session = data.draw(st.sampled_from(sorted(self.live)))
        records = list(export_sessions(self.writer, self.app, session_ids=[session]))
        self.snapshots.append((session, records, dict(self.live[session])))

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data(), other=st.booleans())
    def restore(self, data: Any, other: bool) -> None:
        session, records, messages = data.draw(st.sampled_from(self.snapshots))
        import_sessions(self.store(other), records, replace=True)
        self.set_session(session, messages)

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data())
    def rewind(self, data: Any) -> None:
        session, mid = data.draw(st.sampled_from(self.live_ids()))
        self.writer.rewind(self.app, session, mid)  # moves the head only: nothing to search

    # ------------------------------------------------------------------ the oracle

    def check(self, store: Any, terms: list[str], want: set[tuple[str, str]], session: Any) -> None:
        """Search ``terms`` (one query) in ``session`` (None: app-wide): exactly ``want``.

        The limit is one more than the answer (a large store's candidate bound is raised to
        it, so every match still counts) and shows any extra hit."""
        hits = store.search_messages(
            self.app, " ".join(terms), session_id=session, limit=len(want) + 1
        )
        pairs = [(hit.session_id, hit.id) for hit in hits]
        assert len(pairs) == len(set(pairs)), f"duplicate hits for {terms}: {pairs}"
        got = set(pairs)
        assert got == want, (
            f"search {terms} in {session or 'the app'}: missing {sorted(want - got)}, "
            f"unexpected {sorted(got - want)}"
        )

    def holders(self, tokens: list[str], session: str | None) -> set[tuple[str, str]]:
        where = (self.tokens.get(token) for token in tokens)
        return {w for w in where if w is not None and session in (None, w[0])}

    @invariant()
    def sqlite_indexes_full_batches(self) -> None:
        """SQLite: at most a batch or two of messages wait unindexed after any write (each
        search reads them all into memory: store/sqlite/_index.py). Fewer than one with one
        writer; here two stores write, and one's batch hint may be behind the other's."""
        if isinstance(self.writer, threadline.SQLiteStore):
            pending = self.writer._read(  # type: ignore[attr-defined]
                "pending",
                lambda tx: tx.one(
                    "SELECT count(*) FROM tl_messages WHERE rowid > (SELECT CAST(value AS "
                    "INTEGER) FROM tl_meta WHERE key = 'indexed_upto')"
                ),
            )[0]
            assert pending < 2 * BATCH, f"{pending} messages left unindexed"

    @invariant()
    def search_matches_the_oracle(self) -> None:
        # Tokens this step touched and their other forms, one by one, through the second
        # store (app-wide and in their session); the token app-wide through the writer too.
        for token in sorted(self.touched):
            where = self.tokens.get(token)
            want = self.holders([token], None)
            self.check(self.writer, [token], want, None)
            for form in forms_of(token, self.kinds.get(token, "plain")):
                self.check(self.reader, [form], want, None)
                if where is not None:
                    self.check(self.reader, [form], want, where[0])
        self.touched = set()
        # Every token ever made (live or not), 16 to a query: no message holds two of them,
        # so the any-word pass answers, with the live holders of any of them.
        everything = sorted(self.tokens)
        for group in (everything[i : i + GROUP] for i in range(0, len(everything), GROUP)):
            self.check(self.reader, group, self.holders(group, None), None)
            for session in SESSIONS:
                want = self.holders(group, session)
                if want:
                    self.check(self.reader, group, want, session)


def test_search_follows_writes_sqlite_file(tmp_path: Path) -> None:
    """A SQLite file, written through one connection and searched through another."""
    url = f"sqlite:///{(tmp_path / 'oracle-{}.db').as_posix()}"
    run_machine(SearchOracle, oracle_settings(6, 15), url=url)


def test_search_follows_writes_sqlite_memory() -> None:
    """``:memory:``: one connection writes and searches (the reader is the writer)."""
    run_machine(SearchOracle, oracle_settings(5, 15), url=":memory:")


@pytest.mark.postgres
def test_search_follows_writes_postgres(pg_stores: tuple[Any, Any]) -> None:
    """PostgreSQL (one schema, an app per example), written and searched by two stores."""
    run_machine(SearchOracle, oracle_settings(4, 10), shared=pg_stores)
