"""Dialect-neutral SQL store: every ``Store`` method written once for SQLite and PostgreSQL.

:class:`SQLStore` implements the whole :class:`~threadline.store.base.Store` contract — the
message tree (``seq``, head, ``depth``, ``path_bytes``), the session registry, overlays,
state with undo records, skill loads, blocks, prompts, entries and session-list pagination —
on top of a small **dialect interface** that a backend subclass fills in.

The rooms, one mixin each: ``registry`` (sessions), ``tree`` (appends, updates, deletes, the
head) on ``paths`` (the tree's reads), ``content`` (search, overlays, skill loads, blocks,
prompt, entries), ``state`` (scoped state, rewind), ``attach`` (attachments), ``transfer``
(a session dumped and loaded), ``transfer_app`` (an app's own data dumped and loaded),
``nodes`` (``get_tree``), ``keys`` (API keys), ``changes`` (the change log); under them
``base`` (``SQLBase``: transactions, rows, the abstract hooks), ``text`` (the SQL both
backends run), and the pure ``rows`` (row decoding, cursors, state undo) and
``dump_check`` (the consistency rules of a dump).

Dialect interface (what ``SQLiteStore`` / ``PostgresStore`` provide)
--------------------------------------------------------------------

SQL in this package is written with ``?`` placeholders and contains no literal ``?`` or
``%`` characters, so a backend may translate placeholders mechanically (PostgreSQL:
``sql.replace("?", "%s")``). Only portable SQL is used: ``WITH RECURSIVE``, ``INSERT ...
ON CONFLICT (...) DO UPDATE/NOTHING`` with ``excluded.``, row-value comparisons,
``CAST(? AS TEXT)`` for untyped parameters in CTE anchors, ``CASE`` instead of
``MAX(a, b)``/``GREATEST``. No ``RETURNING`` is needed. Tables and columns are
described in docs/architecture.md; ``tl_messages`` columns are :data:`MESSAGE_COLUMNS` (plus
whatever the backend adds for search, e.g. PostgreSQL's ``search_text``).

A backend implements these hooks (all receive a :class:`Tx`, the open transaction):

``_write(operation, fn, *, lock=None) -> T``
    Run ``fn(tx)`` in ONE write transaction and commit; roll back if it raises.
    ``lock=(app, session_id, user_id)`` means "this write changes that session": the backend
    must serialise it against every other write to the session (SQLite: ``BEGIN IMMEDIATE``
    already does; PostgreSQL: insert the registry row if missing, with ``user_id``, and
    row-lock it, in one upsert) before calling ``fn``. ``Tx.send`` may defer a statement
    until the next read or the commit (PostgreSQL's pipeline, docs/postgres.md); ``Tx.many``
    reads several queries in one round trip.
    ``fn`` itself reads ``head_id``/``last_seq`` and upserts the registry row. Driver
    errors become ``StoreError(operation, cause)``; ``ThreadlineError`` passes untouched.
    May retry ``fn`` on serialisation failures (``fn`` has no side effects outside ``tx``).
``_read(operation, fn) -> T``
    Run ``fn(tx)`` for reading (no writes); same error wrapping. Multi-statement reads in
    the base are rare and tolerate concurrent commits between statements.
``_head_state_query(app, session_id, ids) -> (sql, params)``
    An append's first read (has a default); a backend may add which ``ids`` are stored.
``_insert_message(tx, row: MessageRow) -> bool``
    Insert one message row unless ``(app, session_id, id)`` exists (``ON CONFLICT DO
    NOTHING``), plus its search-index entry from ``row.text``. True if it was written. (A
    backend whose head read says which ids are stored is only asked for the others.)
``_reindex_message(tx, app, session_id, message_id, text) -> None``
    After the base updated a message row: replace its search text.
``_unindex_messages(tx, app, session_id, message_ids | None) -> None``
    Before the base deletes message rows (``None`` = every message of the session): drop
    their search entries (no-op when the index lives in the row).
``_upsert_entry(tx, app, label, key, content, description, now_us) -> None``
    Insert or replace a ``tl_entries`` row and its search entry.
``_unindex_entry(tx, app, label, key) -> None``
    Before the base deletes an entry row: drop its search entry.
``_search_message_rows(tx, app, terms, mode, session_id, owner, limit)``
    ``-> list[(session_id, message_id, role, data, score)]``, best first (score higher is
    better; ties newest ``seq`` first), implementing the per-term rules of docs/search.md for
    ``mode`` ``"all"`` or ``"any"``. ``terms`` is non-empty. The base runs "all", then
    "any" if nothing matched and there are several terms, and builds the ``SearchHit``s.
    ``owner`` (an :data:`OwnerFilter`) limits it to sessions of one user or without one.
``_search_entry_rows(tx, app, label, terms, mode, limit)``
    ``-> list[(key, content, description)]``, best first, same rules.
``close() -> None``
    Idempotent.

Schema creation and upgrades (DDL differs) are the backend's own business; both record
``tl_meta.schema_version``.

>>> import threadline
>>> store = threadline.connect(":memory:")
>>> isinstance(store, SQLStore)
True
"""

from __future__ import annotations

from threadline._checks import check_every_public_method
from threadline.store._generation import bind_generations
from threadline.store._handle import SessionStore
from threadline.store._sql.attach import AttachmentMixin
from threadline.store._sql.base import (
    MAX_MESSAGE_BYTES,
    MESSAGE_COLUMNS,
    MessageRow,
    OwnerFilter,
    Row,
    SessionKey,
    SQLBase,
    T,
    Tx,
    _chunks,
    _in_list,
    owner_clause,
)
from threadline.store._sql.changes import ChangesMixin
from threadline.store._sql.content import ContentMixin
from threadline.store._sql.keys import KeysMixin
from threadline.store._sql.nodes import NodesMixin
from threadline.store._sql.profiles import ProfilesMixin
from threadline.store._sql.registry import RegistryMixin
from threadline.store._sql.state import StateMixin
from threadline.store._sql.transfer import TransferMixin
from threadline.store._sql.transfer_app import AppTransferMixin
from threadline.store._sql.tree import TreeMixin


class SQLStore(
    TransferMixin,
    AppTransferMixin,
    RegistryMixin,
    TreeMixin,
    ChangesMixin,
    NodesMixin,
    ContentMixin,
    StateMixin,
    AttachmentMixin,
    KeysMixin,
    ProfilesMixin,
):
    """Shared implementation of the Store protocol, room by room (registry, tree, content,
    state, API keys, profiles, stored files (``ArtifactsMixin``, under the registry), transfer);
    a backend subclass supplies the dialect hooks of
    :class:`SQLBase`."""

    def session(self, app: str, session_id: str, *, user_id: str | None = None) -> SessionStore:
        """One session's view of the store (``Store.session``).

        >>> import threadline
        >>> threadline.connect(":memory:").session("default", "s1").get_head() is None
        True
        """
        return SessionStore(self, app, session_id, user_id=user_id)


check_every_public_method(SQLStore)
bind_generations(SQLStore)  # after the checks: a bad generation= is refused before anything

__all__ = [
    "MAX_MESSAGE_BYTES",
    "MESSAGE_COLUMNS",
    "MessageRow",
    "OwnerFilter",
    "Row",
    "SQLBase",
    "SQLStore",
    "SessionKey",
    "T",
    "Tx",
    "_chunks",
    "_in_list",
    "owner_clause",
]
