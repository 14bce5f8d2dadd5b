"""Conformance: attachments checked against a plain-Python oracle under random writes.

A hypothesis state machine drives a real store (a SQLite file, or PostgreSQL) through appends
of messages holding 0-3 large strings (data URLs of random bytes, one over a 1 MiB chunk, and
long texts; drawn from a small pool, so they are shared between messages, sessions and two
apps, and sometimes used twice in one message), edits that add, replace or remove them,
deleted messages, cleared, deleted, purged and forgotten sessions, rewinds, forks, and exported
sessions imported into the other app or back over themselves (``replace=True``). Writes go
through one ``threadline.connect`` or a second one of the same store. After every step:

1. every live message reads back exactly as written (``get_message`` through both stores,
   ``get_tree`` and ``get_path`` through the second), and nothing else is there;
2. per app, ``tl_attachments``, ``tl_attachment_chunks`` and ``tl_message_refs`` hold exactly
   what the live messages refer to: no orphan, nothing missing, every chunk in place;
3. ``read_attachment`` of each used attachment returns its content (also scoped to a session
   using it), and an attachment the app does not use is not readable, whoever else uses it.

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
    invariant,
    precondition,
    rule,
)

import threadline
from threadline._attachments import CHUNK_BYTES, extract
from threadline.errors import AttachmentNotFoundError, SessionExistsError
from threadline.export import export_sessions, import_sessions
from threadline.messages import normalize_message

from .conftest import TwoStores, oracle_settings, run_machine

SESSIONS = ("s0", "s1", "s2")
OWNER = {"s0": "u1", "s1": "u1", "s2": None}
POOL = 7  # large strings: 0-4 data URLs, 5 a data URL over one chunk, 6 a long text

_BLOBS: dict[int, str] = {}


def blob(seed: int) -> str:
    """A string of the pool (every one at least 256 KiB of UTF-8: stored out of row)."""
    if seed not in _BLOBS:
        rnd = random.Random(seed)
        if seed == POOL - 1:
            _BLOBS[seed] = "long text ✓ " * 24_000 + rnd.randbytes(8).hex()
        else:
            size = 800_000 if seed == POOL - 2 else 200_000 + rnd.randrange(4096)
            data = base64.b64encode(rnd.randbytes(size)).decode()
            _BLOBS[seed] = f"data:application/x-{seed};base64,{data}"
    return _BLOBS[seed]


def make_message(mid: str, seeds: list[int], note: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": f"note {note}"}]
    for seed in seeds:
        if seed == POOL - 1:
            parts.append({"type": "text", "text": blob(seed)})
        else:
            parts.append({"type": "file", "mediaType": "application/octet-stream",
                          "url": blob(seed)})  # fmt: skip
    return normalize_message({"id": mid, "role": "user", "parts": parts})


seeds_st = st.lists(st.integers(0, POOL - 1), max_size=3)


class AttachmentOracle(TwoStores):
    """The model: per (app, session), message id -> (message as written, parent id)."""

    def __init__(self) -> None:
        super().__init__()
        self.apps = (f"a{self.tag}", f"b{self.tag}")
        self.live: dict[tuple[str, str], dict[str, tuple[dict[str, Any], str | None]]] = {}
        self.owner: dict[tuple[str, str], str | None] = {}
        self.snapshots: list[tuple[tuple[str, str], list[dict[str, Any]], Any, Any]] = []

    # ------------------------------------------------------------------ helpers

    def live_ids(self) -> list[tuple[tuple[str, str], str]]:
        return [(k, m) for k, ids in sorted(self.live.items()) for m in ids]

    def drop(self, key: tuple[str, str]) -> None:
        self.live.pop(key, None)
        self.owner.pop(key, None)

    # ------------------------------------------------------------------ rules

    @rule(
        data=st.data(),
        app=st.integers(0, 1),
        session=st.sampled_from(SESSIONS),
        batch=st.lists(seeds_st, min_size=1, max_size=4),
        other=st.booleans(),
    )
    def append(
        self, data: Any, app: int, session: str, batch: list[list[int]], other: bool
    ) -> None:
        key = (self.apps[app], session)
        ids = self.live.get(key, {})
        parent = data.draw(st.sampled_from([None, *sorted(ids)]))
        messages = [make_message(self.fresh("m"), seeds, str(self.count)) for seeds in batch]
        if data.draw(st.booleans()):  # an id twice in the batch: only the first is written
            first = data.draw(st.sampled_from(messages))["id"]
            messages.append(make_message(first, [2, POOL - 2], "twice"))
        if ids and data.draw(st.booleans()):  # an id already stored: not written again
            again = data.draw(st.sampled_from(sorted(ids)))
            messages.append(make_message(again, [0, 1], "ignored"))
        self.store(other).append_messages(*key, messages, parent, user_id=OWNER[session])
        self.owner.setdefault(key, OWNER[session])
        new = dict(ids)
        for message in messages:
            if message["id"] not in new:
                new[message["id"]] = (message, parent)
                parent = message["id"]
        self.live[key] = new

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data(), seeds=seeds_st, other=st.booleans())
    def update(self, data: Any, seeds: list[int], other: bool) -> None:
        key, mid = data.draw(st.sampled_from(self.live_ids()))
        old, parent = self.live[key][mid]
        how = data.draw(st.sampled_from(["new", "add", "remove"]))
        if how == "new" or len(old["parts"]) < 2:
            message = make_message(mid, seeds, self.fresh("u"))
        else:
            parts = list(old["parts"])
            if how == "add":
                parts.append({"type": "text", "text": blob(seeds[0] if seeds else POOL - 1)})
            else:
                del parts[data.draw(st.integers(1, len(parts) - 1))]
            message = normalize_message({**old, "parts": parts})
        stored = self.store(other).update_message(*key, message)
        assert stored == message
        self.live[key][mid] = (message, parent)

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data(), other=st.booleans())
    def delete(self, data: Any, other: bool) -> None:
        key = data.draw(st.sampled_from(sorted(k for k in self.live if self.live[k])))
        ids = list(self.live[key])
        doomed = set(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids))))
        count = self.store(other).delete_messages(*key, [*doomed, "nope"])
        assert count == len(doomed)
        remaining = {m: v for m, v in self.live[key].items() if m not in doomed}
        self.live[key] = {  # children of a deleted message become roots
            m: (msg, None if parent in doomed else parent) for m, (msg, parent) in remaining.items()
        }

    @precondition(lambda self: bool(self.live))
    @rule(
        data=st.data(),
        how=st.sampled_from(["clear", "delete", "purge", "forget"]),
        other=st.booleans(),
    )
    def drop_session(self, data: Any, how: str, other: bool) -> None:
        key = data.draw(st.sampled_from(sorted(self.live)))
        app, _ = key
        store = self.store(other)
        if how == "clear":
            store.clear_messages(*key)
            self.live[key] = {}
        elif how == "delete":
            assert store.delete_session(*key)
            self.drop(key)
        else:
            user = self.owner[key]
            if how == "forget" and user is not None:
                store.forget_user(app, user)
            else:
                store.purge_sessions(app, before=store.now() + timedelta(days=1), user_id=user)
            for gone in [k for k in self.live if k[0] == app]:
                if user is None or self.owner[gone] == user:
                    self.drop(gone)

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data())
    def rewind(self, data: Any) -> None:
        key, mid = data.draw(st.sampled_from(self.live_ids()))
        self.writer.rewind(*key, mid)  # moves the head only

    @precondition(lambda self: bool(self.live_ids()))
    @rule(data=st.data())
    def fork(self, data: Any) -> None:
        key, mid = data.draw(st.sampled_from(self.live_ids()))
        manager = threadline.SessionManager(self.writer, app_name=key[0])
        child = manager.fork(key[1], mid)
        path: list[dict[str, Any]] = []
        at: str | None = mid
        while at is not None:
            message, at = self.live[key][at]
            path.append(message)
        path.reverse()
        ids = self.reader.get_path_ids(key[0], child.id)
        assert len(ids) == len(path)
        new_key = (key[0], child.id)
        self.owner[new_key] = self.owner[key]
        self.live[new_key] = {}
        parent = None
        for new_id, message in zip(ids, path, strict=True):
            self.live[new_key][new_id] = ({**message, "id": new_id}, parent)
            parent = new_id

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def snapshot(self, data: Any) -> None:
        key = data.draw(st.sampled_from(sorted(self.live)))
        records = list(export_sessions(self.writer, key[0], session_ids=[key[1]]))
        self.snapshots.append((key, records, dict(self.live[key]), self.owner[key]))

    @precondition(lambda self: bool(self.snapshots))
    @rule(data=st.data(), to_other_app=st.booleans(), replace=st.booleans(), other=st.booleans())
    def restore(self, data: Any, to_other_app: bool, replace: bool, other: bool) -> None:
        (app, session), records, messages, owner = data.draw(st.sampled_from(self.snapshots))
        if to_other_app:
            app = self.apps[1 - self.apps.index(app)]
        key = (app, session)
        if key in self.live and not replace:
            with pytest.raises(SessionExistsError):
                import_sessions(self.store(other), records, app=app)
        else:
            import_sessions(self.store(other), records, app=app, replace=replace)
            self.live[key] = dict(messages)
            self.owner[key] = owner

    # ------------------------------------------------------------------ the oracle

    def table(self, sql: str, app: str) -> set[tuple[Any, ...]]:
        rows = self.writer._read("oracle", lambda tx: tx.all(sql, (app,)))  # type: ignore[attr-defined]
        out = {tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows}
        assert len(out) == len(rows), f"duplicate rows in {sql}"
        return out

    @invariant()
    def messages_read_back_whole(self) -> None:
        for (app, session), messages in sorted(self.live.items()):
            for mid, (message, _) in messages.items():
                assert self.reader.get_message(app, session, mid) == message, (app, session, mid)
            got = {
                n.message["id"]: (n.message, n.parent_id)
                for n in self.reader.get_tree(app, session, limit=10_000)
            }
            assert got.keys() == messages.keys(), (app, session)
            assert got == messages, (app, session)
            path = self.reader.get_path(app, session)
            parent = None
            for message in path:
                assert messages[message["id"]] == (message, parent), (app, session)
                parent = message["id"]
        for app in self.apps:  # no session the model does not know of
            listed = {s.id for s in self.reader.list_sessions(app, limit=1000).sessions}
            assert listed == {s for a, s in self.live if a == app}

    @invariant()
    def attachment_tables_match_live_messages(self) -> None:
        contents: dict[str, dict[str, bytes]] = {}
        for app in self.apps:
            refs: set[tuple[str, str, str]] = set()
            blobs: dict[str, Any] = {}
            for (a, session), messages in self.live.items():
                if a != app:
                    continue
                for mid, (message, _) in messages.items():
                    for b in extract(message).blobs:
                        refs.add((session, mid, b.sha256))
                        blobs[b.sha256] = b
            assert (
                self.table(
                    "SELECT session_id, message_id, sha256 FROM tl_message_refs WHERE app = ?", app
                )
                == refs
            ), f"{app}: refs"
            rows = self.table(
                "SELECT sha256, kind, byte_size, chunks FROM tl_attachments WHERE app = ?", app
            )
            want = {
                (s, b.kind, len(b.data), max(1, -(-len(b.data) // CHUNK_BYTES)))
                for s, b in blobs.items()
            }
            assert rows == want, (
                f"{app}: orphan {sorted(r[0][:8] for r in rows - want)}, "
                f"missing {sorted(w[0][:8] for w in want - rows)}"
            )
            chunks = self.table(
                "SELECT sha256, idx, data FROM tl_attachment_chunks WHERE app = ?", app
            )
            assert {(s, i) for s, i, _ in chunks} == {
                (s, i) for s, _, _, n in want for i in range(n)
            }, f"{app}: chunks"
            joined: dict[str, bytes] = {}
            for s, _, d in sorted(chunks, key=lambda r: (r[0], r[1])):
                joined[s] = joined.get(s, b"") + d
            assert joined == {s: b.data for s, b in blobs.items()}, f"{app}: chunk content"
            contents[app] = joined
        self._check_reads(contents)

    def _check_reads(self, contents: dict[str, dict[str, bytes]]) -> None:
        pool = {b.sha256 for b in extract(make_message("x", list(range(POOL)), "")).blobs}
        every = pool | {blob_sha for app in contents for blob_sha in contents[app]}
        for app in self.apps:
            for sha in sorted(every):
                if sha in contents[app]:
                    got = self.reader.read_attachment(app, f"sha256:{sha}")
                    data = contents[app][sha]
                    want = base64.b64decode(data) if isinstance(got, bytes) else data.decode()
                    assert got == want, f"{app}: read_attachment {sha[:8]}"
                    users = sorted(
                        s for (a, s), msgs in self.live.items() if a == app
                        for _, (m, _) in msgs.items()
                        if sha in {b.sha256 for b in extract(m).blobs}
                    )  # fmt: skip
                    assert self.reader.read_attachment(app, sha, session_id=users[0]) == got
                    for session in {s for a, s in self.live if a == app} - set(users):
                        with pytest.raises(AttachmentNotFoundError):
                            self.reader.read_attachment(app, sha, session_id=session)
                else:  # another app's (or nobody's any more): not readable here
                    with pytest.raises(AttachmentNotFoundError):
                        self.reader.read_attachment(app, f"sha256:{sha}")




def test_attachments_follow_writes_sqlite_file(tmp_path: Path) -> None:
    """A SQLite file, written through one connection and read through another."""
    url = f"sqlite:///{(tmp_path / 'attach-{}.db').as_posix()}"
    run_machine(AttachmentOracle, oracle_settings(7, 18), url=url)




@pytest.mark.postgres
def test_attachments_follow_writes_postgres(pg_stores: tuple[Any, Any]) -> None:
    """PostgreSQL (one schema, two apps per example), written and read by two stores."""
    run_machine(AttachmentOracle, oracle_settings(5, 16), shared=pg_stores)
