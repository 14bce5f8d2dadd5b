"""The message tree's writes: appends, updates, deletes and moving the head (reads: ``paths``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from threadline.errors import (
    HeadMovedError,
    InvalidArgumentError,
    MessageNotFoundError,
    SessionNotFoundError,
)
from threadline.messages import (
    TOOL_NAME_WINDOW,
    decode_message,
    encode_message,
    is_unnamed_result,
    name_tool_results,
    skill_loads_of,
    text_of,
)
from threadline.store._contract.values import UNSET
from threadline.store._sql.base import (
    EncodedRow,
    MessageRow,
    Row,
    Tx,
    _check_owner,
    _chunks,
    _in_list,
)
from threadline.store._sql.changes import log_change
from threadline.store._sql.paths import PathsMixin
from threadline.store._sql.rows import (
    chained_tail,
    dumps,
    is_session_key,
    state_undo,
    stored_delta,
)
from threadline.store._sql.text import (
    SQL_MESSAGE,
    SQL_NEWEST_LEAF,
    SQL_NODE,
    SQL_SESSION_AFTER_APPEND,
    SQL_SESSION_STATE,
    SQL_SET_HEAD,
    SQL_SHIFT_SUBTREE,
    SQL_SKILL_DELETE_FOR,
    SQL_SKILL_UPSERT,
    SQL_STORED,
    SQL_TAIL,
    SQL_TAIL_BY_SEQ,
    SQL_TAIL_HEAD,
)
from threadline.types import AUTO, AutoType, Message


def _start_parent(
    parent_id: str | AutoType | None, state: Row | None, node: Row | None
) -> tuple[str | None, int, int] | None:
    """``(parent id, depth, path_bytes)`` of an append's first message, from the session's
    head ``state`` (:data:`SQL_HEAD_STATE`) or the explicit parent's ``node`` row
    (:data:`SQL_NODE`); None = an explicit parent that is not in the session."""
    if parent_id is AUTO:
        if state is None or state[0] is None or state[2] is None:
            return (None, 0, 0)
        return (state[0], int(state[2]), int(state[3]))
    if parent_id is None:
        return (None, 0, 0)
    return (parent_id, int(node[0]), int(node[1])) if node else None


def _unnamed(message: Message) -> bool:
    return any(is_unnamed_result(part) for part in message.get("parts") or ())


def _named_rows(
    encoded: list[EncodedRow], earlier: list[Message], encode: Callable[[Message], EncodedRow]
) -> list[EncodedRow]:
    """``encoded`` with each tool result that does not know its tool named after its call,
    found in the batch or in ``earlier`` (the last :data:`TOOL_NAME_WINDOW` messages of the
    parent's path); only the rows that changed are encoded again. The call's row is never
    rewritten."""
    named = name_tool_results([row.message for row in encoded], earlier)
    return [
        row if message is row.message else encode(message)
        for row, message in zip(encoded, named, strict=True)
    ]


def _check_head(app: str, session_id: str, state: Row | None, expected: str | None) -> None:
    """The condition of an ``if_head`` append, on its head-state row: ``None``, or a seventh
    column that is true (a row the backend's session lock just made), is no session."""
    if state is None or (len(state) > 6 and state[6]):
        raise SessionNotFoundError(f"session {session_id!r} not found in app {app!r}")
    if state[0] != expected:
        head = state[0]
        raise HeadMovedError(f"the head of session {session_id!r} is {head!r}, not {expected!r}")


class TreeMixin(PathsMixin):
    """The message tree: appends, updates, deletes and the head (reads: :class:`PathsMixin`)."""

    # ------------------------------------------------------------------ appends

    def append_messages(
        self,
        app: str,
        session_id: str,
        messages: Sequence[Message],
        parent_id: str | AutoType | None = AUTO,
        *,
        user_id: str | None = None,
        state_delta: Mapping[str, Any] | None = None,
        size_policy: str | None = None,
        max_message_bytes: int | None = None,
        if_head: Any = UNSET,
        generation: int | None = None,
    ) -> list[Message]:
        """Append normalised messages in one transaction; each parents the next."""
        delta = stored_delta(state_delta, user_id)
        if delta and len(messages) != 1:
            raise InvalidArgumentError("state_delta needs exactly one message")
        if if_head is not UNSET and if_head is not None and not isinstance(if_head, str):
            raise InvalidArgumentError(f"if_head must be a message id or None, got {if_head!r}")
        if not messages:
            return []
        encoded = [self._encode(m, size_policy, max_message_bytes) for m in messages]
        return self._write(
            "append_messages",
            lambda tx: self._append(
                tx,
                app,
                session_id,
                encoded,
                parent_id,
                user_id,
                delta,
                if_head,
                encode=lambda m: self._encode(m, size_policy, max_message_bytes),
            ),
            lock=(app, session_id, user_id),
        )

    def _append(
        self,
        tx: Tx,
        app: str,
        session_id: str,
        encoded: list[EncodedRow],
        parent_id: str | AutoType | None,
        user_id: str | None,
        delta: dict[str, Any],
        if_head: Any = UNSET,
        *,
        encode: Callable[[Message], EncodedRow],
    ) -> list[Message]:
        key = (app, session_id)
        # Everything the append must know before writing, read in one round trip (Tx.many):
        # the head (and, from a backend that pipelines, which of the ids are stored), the
        # explicit parent, the session state an undo record needs.
        ids = [m.message["id"] for m in encoded]
        queries: list[tuple[str, Sequence[Any]]] = [self._head_state_query(app, session_id, ids)]
        explicit = isinstance(parent_id, str)
        if explicit:
            queries.append((SQL_NODE, (*key, parent_id)))
        # A tool result that does not know its tool: the parent's path tail, where its call
        # is looked for (clarification 32), read in the same round trip.
        tail_at = None
        if any(_unnamed(row.message) for row in encoded):
            tail_at = len(queries)
            if parent_id is AUTO:  # the newest rows by seq: the head's path tail, unbranched
                queries.append((SQL_TAIL_BY_SEQ, (*key, TOOL_NAME_WINDOW)))
            elif isinstance(parent_id, str):
                queries.append((SQL_TAIL, (*key, parent_id, *key, TOOL_NAME_WINDOW)))
            else:
                tail_at = None
                encoded = _named_rows(encoded, [], encode)  # a new root: its batch only
        # Only session keys are undone (and need their current values read).
        undone = any(is_session_key(k) for k in delta)
        if undone:
            queries.append((SQL_SESSION_STATE, key))
        results = tx.many(queries)
        state = results[0][0] if results[0] else None
        node = results[1] if explicit else []
        _check_owner(app, session_id, state[4] if state else None, user_id)
        if if_head is not UNSET:
            _check_head(app, session_id, state, if_head)
        undo = None
        if delta:
            current = {row[0]: row[1] for row in results[-1]} if undone else {}
            undo = dumps(state_undo(delta, current))
        # id -> (data, depth, path_bytes) of the messages known to be stored
        stored_at = state[5] if state is not None and len(state) > 5 else None
        known: dict[str, Row] = {}
        if stored_at:  # a repeated id (rare): read what is stored
            stored_ids = list(dict.fromkeys(ids[n - 1] for n in stored_at))
            rows = tx.many([(SQL_STORED, (*key, i)) for i in stored_ids])
            known = {i: found[0] for i, found in zip(stored_ids, rows, strict=True)}
        head_id, last_seq = (state[0], state[1]) if state else (None, 0)
        parent = _start_parent(parent_id, state, node[0] if node else None)
        if tail_at is not None:
            tail: list[Any] | None = results[tail_at]
            if parent_id is AUTO:
                tail = chained_tail(results[tail_at])
                if tail is None:  # a branched session: walk up from the head
                    tail = tx.all(SQL_TAIL_HEAD, (*key, *key, *key, TOOL_NAME_WINDOW))
            # Only rows naming a wanted call id (in their stored JSON) are decoded.
            wanted = [
                dumps(part["toolCallId"])
                for row in encoded
                for part in row.message.get("parts") or ()
                if is_unnamed_result(part)
            ]
            earlier = [
                decode_message(row[1]) for row in tail or () if any(w in row[1] for w in wanted)
            ]
            encoded = _named_rows(encoded, earlier, encode)
        self._lock_attachments(tx, app, (blob.sha256 for *_, blobs in encoded for blob in blobs))
        out: list[Message] = []
        seq, written = last_seq, 0
        for message, data, size, blobs in encoded:
            message_id = message["id"]
            stored = known.get(message_id)
            if parent is None:  # explicit parent unknown: fine only if this message exists
                if stored is None and tx.one(SQL_MESSAGE, (*key, message_id)) is None:
                    raise MessageNotFoundError(f"message {parent_id!r} not in session")
                parent = (None, 0, 0)
            row = MessageRow(
                app, session_id, message_id, seq + 1, parent[0], message["role"], size,
                parent[1] + 1, parent[2] + size, message.get("createdAt"), undo, data,
                text_of(message),
            )  # fmt: skip
            if stored is None and self._insert_message(tx, row):
                seq, written, head_id = seq + 1, written + 1, message_id
                parent = (message_id, row.depth, row.path_bytes)
                known[message_id] = (data, row.depth, row.path_bytes)
                if blobs:
                    self._put_blobs(tx, app, session_id, message_id, blobs)
                self._index_skill_loads(tx, app, session_id, message)
                if delta:
                    self._apply_state(tx, app, session_id, user_id, delta)
                out.append(message)
            else:
                if stored is None:
                    stored = tx.one(SQL_STORED, (*key, message_id))
                assert stored is not None
                parent = (message_id, stored[1], stored[2])
                out.append(self._full_message(tx, app, stored[0]))
        now = self._now_us()
        tx.send(
            SQL_SESSION_AFTER_APPEND,
            (app, session_id, user_id, now, now, head_id, seq, written),
        )
        return out

    @staticmethod
    def _index_skill_loads(tx: Tx, app: str, session_id: str, message: Message) -> None:
        for label, key, call_id in skill_loads_of(message):
            tx.send(SQL_SKILL_UPSERT, (app, session_id, label, key, message["id"], call_id))

    # ------------------------------------------------------------------ update / delete

    def update_message(
        self,
        app: str,
        session_id: str,
        message: Message,
        *,
        size_policy: str | None = None,
        max_message_bytes: int | None = None,
        generation: int | None = None,
    ) -> Message:
        """Replace an existing message's content; ``MessageNotFoundError`` if unknown."""
        encoded = self._encode(message, size_policy, max_message_bytes)
        return self._write(
            "update_message",
            lambda tx: self._update(tx, app, session_id, encoded),
            lock=(app, session_id, None),
        )

    def _update(self, tx: Tx, app: str, session_id: str, encoded: EncodedRow) -> Message:
        message, data, size, blobs = encoded
        message_id = message.get("id")
        old = tx.one(
            "SELECT data, byte_size FROM tl_messages WHERE app = ? AND session_id = ? AND id = ?",
            (app, session_id, message_id),
        )
        if old is None or not isinstance(message_id, str):
            raise MessageNotFoundError(f"message {message_id!r} not in session")
        if "createdAt" not in message:
            created = decode_message(old[0]).get("createdAt")
            if created is not None:
                # Only a kept createdAt changes the JSON _encode_row already produced.
                message = {**message, "createdAt": created}
                data = encode_message({**decode_message(data), "createdAt": created})
                size = len(encode_message(message).encode("utf-8"))
        tx.send(
            "UPDATE tl_messages SET role = ?, data = ?, byte_size = ?, created_at = ? "
            "WHERE app = ? AND session_id = ? AND id = ?",
            (message["role"], data, size, message.get("createdAt"), app, session_id, message_id),
        )
        self._drop_refs(tx, app, session_id, [message_id], blobs)
        if blobs:
            self._put_blobs(tx, app, session_id, message_id, blobs)
        if size != old[1]:
            key = (message_id, app, session_id)
            tx.send(SQL_SHIFT_SUBTREE, (*key, 0, old[1] - size, app, session_id))
        self._reindex_message(tx, app, session_id, message_id, text_of(message))
        tx.send(SQL_SKILL_DELETE_FOR, (app, session_id, message_id))
        self._index_skill_loads(tx, app, session_id, message)
        self._touch(tx, app, session_id)
        log_change(tx, app, session_id, "message_updated", {"id": message_id}, self._now_us())
        return message

    def delete_messages(
        self,
        app: str,
        session_id: str,
        message_ids: Sequence[str],
        *,
        generation: int | None = None,
    ) -> int:
        """Delete those messages; orphaned children become roots; returns the count deleted."""
        ids = list(dict.fromkeys(i for i in message_ids if isinstance(i, str)))
        return self._write(
            "delete_messages",
            lambda tx: self._delete(tx, app, session_id, ids),
            lock=(app, session_id, None),
        )

    def _delete(self, tx: Tx, app: str, session_id: str, ids: list[str]) -> int:
        key = (app, session_id)
        found: list[str] = []
        for chunk in _chunks(ids):
            found += [
                row[0]
                for row in tx.all(
                    "SELECT id FROM tl_messages WHERE app = ? AND session_id = ? "
                    f"AND id IN {_in_list(len(chunk))}",
                    (*key, *chunk),
                )
            ]
        self._touch(tx, app, session_id)
        if not found:
            return 0
        gone = set(found)
        orphans: list[Row] = []
        for chunk in _chunks(found):
            orphans += tx.all(
                "SELECT id, depth, path_bytes, byte_size FROM tl_messages WHERE app = ? "
                f"AND session_id = ? AND parent_id IN {_in_list(len(chunk))}",
                (*key, *chunk),
            )
        self._unindex_messages(tx, app, session_id, found)
        self._drop_refs(tx, app, session_id, found)
        for chunk in _chunks(found):
            marks = _in_list(len(chunk))
            tx.send(
                "DELETE FROM tl_skill_loads WHERE app = ? AND session_id = ? "
                f"AND message_id IN {marks}",
                (*key, *chunk),
            )
            tx.send(
                f"DELETE FROM tl_messages WHERE app = ? AND session_id = ? AND id IN {marks}",
                (*key, *chunk),
            )
        for orphan_id, depth, path_bytes, size in orphans:
            if orphan_id not in gone:
                self._make_root(tx, app, session_id, orphan_id, depth, path_bytes, size)
        self._after_delete(tx, app, session_id, gone)
        log_change(tx, app, session_id, "messages_deleted", {"ids": found}, self._now_us())
        return len(found)

    @staticmethod
    def _make_root(
        tx: Tx, app: str, session_id: str, node_id: str, depth: int, path_bytes: int, size: int
    ) -> None:
        """Detach a message whose parent was deleted and renumber its subtree."""
        tx.send(
            "UPDATE tl_messages SET parent_id = NULL WHERE app = ? AND session_id = ? AND id = ?",
            (app, session_id, node_id),
        )
        tx.send(
            SQL_SHIFT_SUBTREE,
            (node_id, app, session_id, depth - 1, path_bytes - size, app, session_id),
        )

    @staticmethod
    def _after_delete(tx: Tx, app: str, session_id: str, gone: set[str]) -> None:
        head = tx.one("SELECT head_id FROM tl_sessions WHERE app = ? AND id = ?", (app, session_id))
        head_id = head[0] if head else None
        if head_id in gone:
            leaf = tx.one(SQL_NEWEST_LEAF, (app, session_id))
            head_id = leaf[0] if leaf else None
        tx.send(
            "UPDATE tl_sessions SET head_id = ?, message_count = message_count - ? "
            "WHERE app = ? AND id = ?",
            (head_id, len(gone), app, session_id),
        )

    def clear_messages(self, app: str, session_id: str, *, generation: int | None = None) -> None:
        """Delete every message, search row, overlay and skill load; head = None."""

        def run(tx: Tx) -> None:
            key = (app, session_id)
            self._unindex_messages(tx, app, session_id, None)
            self._drop_refs(tx, app, session_id, None)
            for table in ("tl_messages", "tl_compactions", "tl_skill_loads"):
                tx.send(f"DELETE FROM {table} WHERE app = ? AND session_id = ?", key)
            self._touch(tx, app, session_id)
            tx.send(
                "UPDATE tl_sessions SET head_id = NULL, message_count = 0 WHERE app = ? AND id = ?",
                key,
            )
            log_change(tx, app, session_id, "messages_deleted", {"all": True}, self._now_us())

        self._write("clear_messages", run, lock=(app, session_id, None))

    def set_head(
        self, app: str, session_id: str, message_id: str, *, generation: int | None = None
    ) -> None:
        """Move the head to any message of the session."""

        def run(tx: Tx) -> None:
            if tx.one(SQL_MESSAGE, (app, session_id, message_id)) is None:
                raise MessageNotFoundError(f"message {message_id!r} not in session")
            self._touch(tx, app, session_id)
            tx.send(SQL_SET_HEAD, (message_id, app, session_id))

        self._write("set_head", run, lock=(app, session_id, None))
