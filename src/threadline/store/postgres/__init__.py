"""PostgreSQL backend: :class:`PostgresStore` (psycopg 3 + psycopg_pool, the ``postgres`` extra).

The tree, registry and state logic is shared with SQLite (:class:`~threadline.store._sql.SQLStore`);
this package holds what is PostgreSQL's own: the connection pool and its failure handling,
the DDL, the search SQL (``tsvector`` + ``pg_trgm``), and the ``?`` → ``%s`` translation.
Here: :class:`PostgresStore` (transactions, retries, the dialect hooks) and its URL;
``_pool`` the pool that follows the server, ``_tx`` one transaction's statements over a
connection (placeholders, NUL-safe strings, the pipeline), ``_statements`` the SQL of its own
writes, ``_schema`` the DDL and migrations, ``_search`` the search SQL.

* Connections are ``autocommit``; every public write is one transaction: the implicit
  transaction of a psycopg pipeline, committed by its closing Sync (docs/postgres.md). A
  write to a session first inserts its registry row if missing and row-locks it, so
  concurrent appends (threads or processes) never fork or lose a message. Statements whose
  result is not read go out without waiting: an append is two round trips. A dump is one
  ``REPEATABLE READ, READ ONLY`` transaction, and so is a read that found an attachment
  missing, read again (a write committed between its statements); other reads autocommit.
* Driver errors become ``StoreError(operation, cause)``. A read that loses its connection
  (server restart, network) is retried once; a write is not (its COMMIT may have landed: the
  caller decides), only deadlocks and serialisation failures are rerun. The pool follows the
  server (``_pool``): while it is down operations fail at once, and the first one after
  it is back renews the connections; one log line per change of state.
* Search (docs/search.md): a ``tsvector`` column (``english``) with a GIN index for words and
  phrases, and a ``pg_trgm`` GIN index for substrings (CJK, e-mails, URLs, versions) over the
  lowercased text; without pg_trgm, substring terms fall back to plain ``LIKE`` scans.
* ``pool_min_size`` / ``pool_max_size`` URL parameters (default 1 / 10) size the pool; every
  other parameter goes to libpq unchanged (e.g. ``options=-csearch_path%3Dmyschema``).
* ``replicas=`` / ``replica=`` URL parameters (``_replicas``): reads routed to streaming
  standbys that have replayed the store's own writes and lag by at most
  ``max_replica_lag`` seconds of WAL; after each write the store notes the primary's WAL
  position (one more round trip, only with replicas).
* PostgreSQL text cannot hold NUL characters: strings holding NUL (or the escape character
  U+10FFFF) are stored escaped and decoded on the way out, so every string round-trips.

psycopg is imported lazily: this package imports without it, and opening a store then raises a
``ThreadlineError`` naming the ``threadline[postgres]`` extra.

>>> import threadline
>>> store = threadline.connect(pg_url)  # e.g. "postgresql://user@localhost/app?pool_max_size=4"
>>> store.append_messages("default", "s1", [{"id": "m1", "role": "user", "parts": []}])[0]["id"]
'm1'
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from threadline._search_query import MatchMode, Term
from threadline.errors import (
    AttachmentNotFoundError,
    InvalidArgumentError,
    StoreError,
    ThreadlineError,
)
from threadline.store._generation import (
    EXPECTED,
    SQL_EXPECT_GENERATION,
    SQL_GENERATION_IS,
    STALE_MARKER,
    Expected,
    check_generation,
    stale_error,
)
from threadline.store._sql import SQLStore
from threadline.store._sql.base import (
    MAX_MESSAGE_BYTES,
    MessageRow,
    OwnerFilter,
    Row,
    SessionKey,
    Tx,
    _chunks,
    _in_list,
)
from threadline.store.postgres._pool import ServerPool
from threadline.store.postgres._replicas import (
    PRIMARY_READS,
    SQL_INSERT_POSITION,
    ReplicaSet,
    check_replica_options,
    split_replica_options,
)
from threadline.store.postgres._schema import ensure_schema
from threadline.store.postgres._search import entry_search_sql, search_message_rows
from threadline.store.postgres._search import message_search_sql as message_search_sql  # re-export
from threadline.store.postgres._statements import (
    IN_LIST_MAX,
    INSERT_MESSAGE,
    LOCK_SESSION,
    UPSERT_ENTRY,
    head_state_sql,
    index_long_text,
    search_text,
)
from threadline.store.postgres._tx import PgTx, encode_params, pg_sql

if TYPE_CHECKING:  # psycopg is an optional extra: imported lazily at run time
    from psycopg import Connection

    PgConn = Connection[tuple[Any, ...]]

__all__ = ["EXTRA_HINT", "PostgresStore", "split_pool_options"]

_log = logging.getLogger("threadline")
T = TypeVar("T")

EXTRA_HINT = (
    "PostgresStore needs the threadline[postgres] extra: pip install 'threadline[postgres]'"
)
POOL_DEFAULTS = {"pool_min_size": 1, "pool_max_size": 10}
"""URL query parameters consumed by threadline (not passed to libpq), with their defaults."""

_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_RETRY_SQLSTATES = ("40001", "40P01")  # serialization failure, deadlock: rolled back, safe to rerun
_WRITE_ATTEMPTS = 3


# --------------------------------------------------------------------------- driver and URL


def _import_driver() -> tuple[Any, Any]:
    """Return ``(psycopg, psycopg_pool)``, or raise a ThreadlineError naming the extra."""
    try:
        import psycopg as driver
        import psycopg_pool as pool_module
    except ImportError as exc:
        raise ThreadlineError(f"{EXTRA_HINT} ({exc})") from exc
    return driver, pool_module


def split_pool_options(url: str) -> tuple[str, int, int]:
    """Remove ``pool_min_size``/``pool_max_size`` from a URL; return ``(dsn, min, max)``.

    Every other query parameter is left byte for byte as given, for libpq.

    >>> split_pool_options("postgres://h/db?pool_max_size=4&options=-csearch_path%3Dx")
    ('postgres://h/db?options=-csearch_path%3Dx', 1, 4)
    """
    parts = urlsplit(url)
    sizes = dict(POOL_DEFAULTS)
    kept: list[str] = []
    given: set[str] = set()
    for piece in parts.query.split("&") if parts.query else []:
        key, _, value = piece.partition("=")
        name = unquote(key)
        if name not in sizes:
            kept.append(piece)
            continue
        if name in given:
            raise InvalidArgumentError(f"store URL option {name!r} is given twice")
        given.add(name)
        try:
            sizes[name] = int(unquote(value))
        except ValueError:
            raise InvalidArgumentError(f"{name} must be an integer, got {value!r}") from None
    low, high = sizes["pool_min_size"], sizes["pool_max_size"]
    if low < 0 or high < 1 or low > high:
        raise InvalidArgumentError(
            f"need 0 <= pool_min_size <= pool_max_size and pool_max_size >= 1, got {low}/{high}"
        )
    return urlunsplit(parts._replace(query="&".join(kept))), low, high


# libpq's words for an option it does not know (in a URI query, or key=value).
_UNKNOWN_OPTION = re.compile(r'invalid (?:URI query parameter:|connection option) "([^"]*)"')


def _unknown_option(exc: Exception) -> InvalidArgumentError | None:
    """An ``InvalidArgumentError`` naming the option when libpq refused ``exc`` for an
    unknown option (a typo is bad configuration, not a failed connection), else ``None``.

    >>> print(_unknown_option(ValueError('invalid URI query parameter: "min_size"')))
    unknown store URL option 'min_size' (the pool options are pool_min_size and pool_max_size)
    >>> _unknown_option(ValueError("connection refused")) is None
    True
    """
    found = _UNKNOWN_OPTION.search(str(exc))
    if found is None:
        return None
    return InvalidArgumentError(
        f"unknown store URL option {found.group(1)!r} "
        f"(the pool options are {' and '.join(POOL_DEFAULTS)})"
    )


class PostgresStore(SQLStore):
    """The :class:`~threadline.store.base.Store` contract on PostgreSQL (safe across threads
    and processes). Opening creates or upgrades the tables in the first schema of the
    search path. Needs the ``threadline[postgres]`` extra.

    >>> store = PostgresStore(pg_url)  # e.g. "postgresql://localhost/app?pool_max_size=4"
    >>> store.count_sessions("default")
    0
    """

    _FOR_UPDATE = " FOR UPDATE"
    _STATE_OBJECT = "json_object_agg(t.key, t.value::json)::text"

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], datetime] | None = None,
        size_policy: str = "attach",
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        replicas: Sequence[str] | None = None,
        max_replica_lag: float | None = None,
    ) -> None:
        self._clock = clock
        self._configure_size(size_policy, max_message_bytes)
        self._driver, pool_module = _import_driver()
        # Waiting for the pool already took its timeout: retrying would only double the wait.
        self._no_retry = (pool_module.PoolTimeout, pool_module.PoolClosed)
        url, in_url, url_lag = split_replica_options(str(url))
        given, lag = check_replica_options(
            replicas, max_replica_lag if max_replica_lag is not None else url_lag
        )
        replica_urls = [*check_replica_options(in_url, None)[0], *given]
        dsn, min_size, max_size = split_pool_options(url)
        self._dsn = dsn
        self._closed = False
        self._close_lock = threading.Lock()
        #: Per thread: the generation a write joined to an open transaction() expected.
        self._joined_expected: dict[int, Expected] = {}
        # The schema is set up on a direct connection first: a wrong host or database fails
        # at once with libpq's message instead of after the pool's wait timeout.
        try:
            with self._driver.connect(dsn, autocommit=True) as conn:
                ensure_schema(conn)
        except self._driver.Error as exc:
            raise _unknown_option(exc) or StoreError("connect", exc) from exc
        self._pool = ServerPool(self._driver, pool_module, dsn, min_size, max_size)
        #: The read replicas (store/postgres/_replicas.py), or None: every read on the primary.
        self._replicas = (
            ReplicaSet(self._driver, replica_urls, lag, self._primary_position)
            if replica_urls
            else None
        )

    @property
    def dsn(self) -> str:
        """The libpq connection string the store connects with (the URL without the pool
        options): for a side channel of one's own, e.g. the HTTP server's ``LISTEN``.

        >>> import threadline
        >>> store = threadline.connect(pg_url + "&pool_max_size=2")
        >>> "pool_max_size" in store.dsn
        False
        >>> store.close()
        """
        return self._dsn

    def close(self) -> None:
        """Close every pooled connection. Idempotent.

        >>> import threadline
        >>> store = threadline.connect(pg_url)
        >>> store.close(); store.close()
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()
        if self._replicas is not None:
            self._replicas.close()

    def __repr__(self) -> str:
        return f"PostgresStore(pool={self._pool.name!r}, closed={self._closed})"

    # ------------------------------------------------------------------ dialect: transactions

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise StoreError(operation, ThreadlineError("the store is closed"))

    def _read(self, operation: str, fn: Callable[[Tx], T], *, snapshot: bool = False) -> T:
        """Run ``fn`` on a pooled connection; retried once if the connection was lost.

        Each statement sees its own snapshot (autocommit: one round trip for a one-query
        read), unless ``snapshot`` (a dump: see ``_snapshot``). A read that finds an
        attachment missing is read again in one snapshot: a write committed between two of
        its statements dropped an attachment the first one still saw."""
        self._check_open(operation)
        joined = self._joined()
        if joined is not None:  # inside transaction(): read what it wrote, generation checked
            return self._guarded(fn, write=False)(joined)
        driver = self._driver
        expected = EXPECTED.get()
        if (
            self._replicas is not None
            and expected is None
            and not snapshot
            and operation not in PRIMARY_READS
        ):
            served, result = self._replicas.read(lambda conn: fn(PgTx(conn)))
            if served:
                return result  # type: ignore[return-value]  # fn's own result
        checked = self._guarded(fn, write=False)
        for attempt in (1, 2):
            try:
                with self._pool.connection() as conn:
                    if snapshot:
                        return self._snapshot(conn, checked)
                    try:
                        if expected is not None:
                            return self._trailed(conn, fn, expected)
                        return fn(PgTx(conn))
                    except AttachmentNotFoundError:
                        return self._snapshot(conn, checked)  # raises again if truly missing
            except driver.OperationalError as exc:
                if attempt == 2 or self._closed or isinstance(exc, self._no_retry):
                    raise StoreError(operation, exc) from exc
                _log.info("threadline: %s lost its connection (%s); retrying once", operation, exc)
            except driver.Error as exc:
                if expected is not None and STALE_MARKER in str(exc):
                    raise stale_error(expected) from None
                raise StoreError(operation, exc) from exc
        raise AssertionError("unreachable")

    def _trailed(self, conn: PgConn, fn: Callable[[Tx], T], expected: Expected) -> T:
        """A read expecting a generation, in pipeline mode: each of its queries goes out
        with the check after it (:data:`SQL_GENERATION_IS`), in the same round trip, and a
        stale generation fails the read at the latest at the closing Sync. After, not
        before: generations are never reused, so a session that is still the expected one
        after a query was that one during it (store/_generation.py)."""
        with conn.pipeline():
            tx = PgTx(conn, pipelined=True)
            tx.trailer = (pg_sql(SQL_GENERATION_IS), encode_params(expected))
            try:
                return fn(tx)
            except ThreadlineError:  # e.g. a message missing because the session was replaced
                tx.trailer = None
                check_generation(tx.one, expected)
                raise

    def _snapshot(self, conn: PgConn, fn: Callable[[Tx], T]) -> T:
        """``fn`` in one read-only ``REPEATABLE READ`` transaction on ``conn``: every statement
        of a read of several round trips (a dump, a history putting attachments back) sees
        the same snapshot, never half of a write committed meanwhile. In pipeline mode, the
        ``BEGIN`` goes out with the first query and the ``COMMIT`` with the closing Sync (a
        round trip more than autocommit: only the reads that need it pay it)."""
        try:
            with conn.pipeline():
                conn.execute(_BEGIN_READ)
                result = fn(PgTx(conn, pipelined=True))
                conn.execute("COMMIT")
            return result
        except BaseException:
            idle = self._driver.pq.TransactionStatus.IDLE
            if not conn.broken and conn.info.transaction_status != idle:
                try:
                    conn.execute("ROLLBACK")
                except self._driver.Error:
                    self._pool.discard(conn)
            raise

    def _write(self, operation: str, fn: Callable[[Tx], T], *, lock: SessionKey | None = None) -> T:
        """Run ``fn`` in one transaction, after locking the session row when ``lock`` is given.

        Never retried after a connection failure (the COMMIT may have landed: the caller
        decides); only deadlocks and serialisation failures, which roll everything back, are.
        """
        self._check_open(operation)
        joined = self._joined()
        if joined is not None:  # inside transaction(): it commits, retries or rolls back
            if lock is not None:
                joined.send(LOCK_SESSION, self._lock_params(lock))
            # Checked as SQLite does: a run's commit acts on the generation it is bound to.
            # The check fails in the pipeline, so at the outer commit: note what it expected.
            expected = EXPECTED.get()
            if expected is not None:
                self._joined_expected.setdefault(threading.get_ident(), expected)
            return self._guarded(fn, write=True)(joined)
        driver = self._driver
        fn = self._guarded(fn, write=True)
        thread = threading.get_ident()
        try:
            for attempt in range(1, _WRITE_ATTEMPTS + 1):
                self._joined_expected.pop(thread, None)  # each attempt notes its own
                try:
                    with self._pool.connection() as conn:
                        result = self._transaction(conn, fn, lock)
                        if self._replicas is not None:  # read-your-writes: where it landed
                            self._replicas.wrote(self._position(conn))
                        return result
                except driver.Error as exc:
                    retry = getattr(exc, "sqlstate", None) in _RETRY_SQLSTATES
                    if retry and attempt < _WRITE_ATTEMPTS:
                        continue
                    expected = EXPECTED.get() or self._joined_expected.get(thread)
                    if expected is not None and STALE_MARKER in str(exc):
                        raise stale_error(expected) from None
                    raise StoreError(operation, exc) from exc
            raise AssertionError("unreachable")
        finally:
            self._joined_expected.pop(thread, None)

    def _transaction(self, conn: PgConn, fn: Callable[[Tx], T], lock: SessionKey | None) -> T:
        """``fn`` in one transaction on ``conn``, in pipeline mode: the lock and whatever
        ``fn`` sends go out with its first read, the rest with the pipeline's closing Sync
        (an append: two round trips).

        The transaction is the pipeline's implicit one: PostgreSQL runs everything between
        two Syncs as one transaction, committed at the Sync unless a statement failed, so no
        ``BEGIN``/``COMMIT`` statements are needed. If ``fn`` raises, a ``ROLLBACK`` goes
        before the Sync (inside an implicit transaction it rolls it back, with a warning
        notice); if a statement failed, the server discarded the rest anyway.
        """
        with conn.pipeline() as pipeline:
            tx = PgTx(conn, pipelined=True)
            try:
                if lock is not None:
                    tx.send(LOCK_SESSION, self._lock_params(lock))
                result = fn(tx)
                tx.release()
                return result
            except BaseException as exc:
                self._abandon(conn, pipeline, exc)
                raise

    def _abandon(self, conn: PgConn, pipeline: Any, exc: BaseException) -> None:
        """Roll back the transaction ``fn`` gave up on with ``exc``, and have the pool discard
        the connection unless ``exc`` is a typed error of ours and every statement sent
        before it answered without error (a failure among them would otherwise only be
        logged by the pipeline's exit, and the connection reused: see ``_pool``)."""
        clean = isinstance(exc, ThreadlineError) and not conn.broken
        if isinstance(exc, Exception) and not conn.broken:  # not an interruption mid-answer
            try:
                conn.execute("ROLLBACK")
                pipeline.sync()  # collects every pending answer: nothing left for the exit
            except self._driver.Error:
                clean = False
        if not clean:
            self._pool.discard(conn)

    def _position(self, conn: PgConn) -> int:
        """The primary's WAL insert position: at or after every commit made before."""
        row = conn.execute(SQL_INSERT_POSITION).fetchone()
        assert row is not None
        return int(row[0])

    def _primary_position(self) -> int:
        with self._pool.connection() as conn:
            return self._position(conn)

    def _lock_params(self, key: SessionKey) -> tuple[Any, ...]:
        app, session_id, user_id = key
        now = self._now_us()
        return (app, session_id, user_id, now, now)

    def _head_state_query(
        self, app: str, session_id: str, ids: Sequence[str]
    ) -> tuple[str, Sequence[Any]]:
        # Strings are encoded by the Tx; lists (arrays) are passed as they are: encode them.
        listed = ids if len(ids) <= IN_LIST_MAX else [list(encode_params(ids))]
        return head_state_sql(len(ids)), (*listed, *listed, app, session_id)

    def _expect_generation(self, tx: Tx, expected: Expected) -> None:
        # Sent with the write's first read, not waited for: a stale generation fails the
        # statement, the transaction and so the write (turned into SessionNotFoundError).
        tx.send(SQL_EXPECT_GENERATION, expected)

    def _claim_session_row(self, tx: Tx, app: str, session_id: str) -> bool:
        # Locks the registry row, inserting it if missing; True if it already existed. A
        # plain SELECT ... FOR UPDATE would miss a row that a concurrent append is inserting
        # (or re-inserting after another delete): the upsert waits for it instead.
        return tx.execute(LOCK_SESSION, self._lock_params((app, session_id, None))) == 0

    # ------------------------------------------------------------------ dialect: search index

    def _insert_message(self, tx: Tx, row: MessageRow) -> bool:
        # Called only for ids the append found missing (head_state_sql): not waited for, and
        # sent with the next statement (the session's new head, for a plain append).
        assert isinstance(tx, PgTx)
        text = search_text(row.text)
        tx.hold(INSERT_MESSAGE, (*row.values(), text))
        index_long_text(tx, row.app, row.session_id, row.id, text)
        return True

    def _reindex_message(
        self, tx: Tx, app: str, session_id: str, message_id: str, text: str
    ) -> None:
        text = search_text(text)
        tx.send(
            "UPDATE tl_messages SET search_text = ? WHERE app = ? AND session_id = ? AND id = ?",
            (text, app, session_id, message_id),
        )
        self._unindex_messages(tx, app, session_id, [message_id])
        index_long_text(tx, app, session_id, message_id, text)

    def _unindex_messages(
        self, tx: Tx, app: str, session_id: str, message_ids: Sequence[str] | None
    ) -> None:
        """Drop the word chunks of long texts (the other search columns live in the row)."""
        where = "app = ? AND session_id = ?"
        if message_ids is None:
            tx.send(f"DELETE FROM tl_message_chunks WHERE {where}", (app, session_id))
            return
        for batch in _chunks(message_ids):
            tx.send(
                f"DELETE FROM tl_message_chunks WHERE {where} "
                f"AND message_id IN {_in_list(len(batch))}",
                (app, session_id, *batch),
            )

    def _upsert_entry(
        self,
        tx: Tx,
        app: str,
        label: str,
        key: str,
        content: str,
        description: str | None,
        now: int,
    ) -> None:
        params = (app, label, key, content, description, now, search_text(content))
        tx.send(UPSERT_ENTRY, params)

    def _unindex_entry(self, tx: Tx, app: str, label: str, key: str) -> None:
        """Nothing to do: the search columns live in the entry row."""

    def _search_message_rows(
        self,
        tx: Tx,
        app: str,
        terms: Sequence[Term],
        mode: MatchMode,
        session_id: str | None,
        owner: OwnerFilter,
        limit: int,
    ) -> list[Row]:
        assert isinstance(tx, PgTx)
        return search_message_rows(tx, app, terms, mode, session_id, owner, limit)

    def _search_entry_rows(
        self, tx: Tx, app: str, label: str, terms: Sequence[Term], mode: MatchMode, limit: int
    ) -> list[Row]:
        built = entry_search_sql(app, label, terms, mode, limit)
        return tx.all(*built) if built is not None else []
