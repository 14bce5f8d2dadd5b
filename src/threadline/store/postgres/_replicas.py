"""Read replicas of a :class:`~threadline.store.postgres.PostgresStore` (integrations.md §20,
api.md clarification 30): which reads go to a streaming standby, and when it is fresh enough.

* A read may go to a replica unless it runs inside ``transaction()``, checks a session's
  generation (``generation=``, every read of a ``store.session()`` handle), reads a whole
  dump, is one of :data:`PRIMARY_READS` (API keys, ownership, the change log) or runs in
  :func:`on_primary` (the event streams' read-back).
* **Read-your-writes.** After each write a store with replicas notes the primary's WAL insert
  position (a position at or after the write's commit record); a replica serves a read only
  once its replay position (``pg_last_wal_replay_lsn()``) has reached the highest position
  this store wrote, and the one the caller asked for (:data:`READ_AFTER`: the HTTP
  ``X-Threadline-Read-After`` header), else the read goes to the primary.
* **Lag** is measured by WAL position, not replay timestamps (an idle primary writes no
  WAL, so a timestamp would call a current replica late): the primary's position is sampled
  at most every 0.5 s, and a replica serves only if it has replayed the oldest sample taken
  within the last ``max_replica_lag`` seconds, so every write committed earlier than that
  is on it.
* A replica that fails to connect is skipped for :data:`_RETRY` seconds, then tried again;
  any other failure on a replica (e.g. a query cancelled by a recovery conflict) sends that
  read to the primary. A replica never surfaces a ``StoreError``.

No I/O at import; psycopg is handed in by the caller (it is an optional extra).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

from threadline.errors import AttachmentNotFoundError, InvalidArgumentError, ThreadlineError
from threadline.store.postgres._pool import has_input

__all__ = [
    "MAX_REPLICA_LAG",
    "ON_PRIMARY",
    "PRIMARY_READS",
    "READ_AFTER",
    "WRITTEN",
    "ReplicaSet",
    "check_replica_options",
    "format_position",
    "on_primary",
    "parse_position",
    "split_replica_options",
]

_log = logging.getLogger("threadline")
T = TypeVar("T")

MAX_REPLICA_LAG = 5.0
"""Default ``max_replica_lag``: seconds of the primary's WAL a replica may not have replayed."""

PRIMARY_READS = frozenset(
    {
        "find_api_key",  # authentication
        "list_api_keys",
        "get_session",  # ownership: who a session belongs to, whether it exists
        "get_changes",  # event read-back (the SSE feeds)
        "get_session_deletions",
    }
)
"""Reads that always go to the primary (clarification 30)."""

READ_AFTER: ContextVar[int | None] = ContextVar("threadline_read_after", default=None)
"""A WAL position the reads of this context must see (the ``X-Threadline-Read-After``
header of an HTTP request): a replica behind it is not used."""

ON_PRIMARY: ContextVar[bool] = ContextVar("threadline_on_primary", default=False)
"""True while every read of this context must go to the primary (:func:`on_primary`)."""

WRITTEN: ContextVar[list[int] | None] = ContextVar("threadline_written", default=None)
"""A list the writes of this context append their position to (the HTTP server sets one per
request, to answer with ``X-Threadline-Read-After``)."""

SQL_INSERT_POSITION = "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"
_SQL_REPLAY_POSITION = "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint"
_RETRY = 1.0  # seconds a replica that failed to connect is left alone
_CONNECT_TIMEOUT = 2  # seconds libpq waits to connect to a replica
_SAMPLE_EVERY = 0.5  # seconds between two samples of the primary's position
_IDLE_MAX = 8  # idle connections kept per replica


@contextlib.contextmanager
def on_primary() -> Iterator[None]:
    """Every read of the block (in this context) on the primary: a read-back that must agree
    with the change log it follows (the HTTP event streams), whatever the replicas replayed.

    >>> with on_primary():
    ...     ON_PRIMARY.get()
    True
    """
    token = ON_PRIMARY.set(True)
    try:
        yield
    finally:
        ON_PRIMARY.reset(token)


# --------------------------------------------------------------------------- positions


def parse_position(text: str) -> int:
    """A WAL position (``pg_lsn`` text, ``"16/B374D848"``) as an integer.

    >>> parse_position("16/B374D848")
    97500059720
    >>> parse_position("nope")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: not a WAL position (like '0/16B3748'): 'nope'
    """
    high, slash, low = text.strip().partition("/")
    try:
        if not slash or not high or not low or len(high) > 8 or len(low) > 8:
            raise ValueError(text)
        return (int(high, 16) << 32) | int(low, 16)
    except ValueError:
        raise InvalidArgumentError(f"not a WAL position (like '0/16B3748'): {text!r}") from None


def format_position(position: int) -> str:
    """The ``pg_lsn`` text of a WAL position.

    >>> format_position(97500059720)
    '16/B374D848'
    """
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


# --------------------------------------------------------------------------- options


def check_replica_options(replicas: object, max_replica_lag: object) -> tuple[list[str], float]:
    """``replicas`` (a list of URLs) and ``max_replica_lag`` (seconds) checked.

    >>> check_replica_options(["postgresql://r1/db"], None)
    (['postgresql://r1/db'], 5.0)
    >>> check_replica_options("postgresql://r1/db", None)
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: replicas must be a list of PostgreSQL URLs, not a str
    """
    if replicas is None:
        replicas = []
    if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence):
        raise InvalidArgumentError(
            f"replicas must be a list of PostgreSQL URLs, not a {type(replicas).__name__}"
        )
    urls: list[str] = []
    for url in replicas:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("postgresql", "postgres"):
            raise InvalidArgumentError(f"a replica must be a postgresql:// URL, got {url!r}")
        urls.append(url)
    if max_replica_lag is None:
        return urls, MAX_REPLICA_LAG
    if isinstance(max_replica_lag, bool) or not isinstance(max_replica_lag, (int, float)):
        raise InvalidArgumentError(
            f"max_replica_lag must be a number of seconds, got {max_replica_lag!r}"
        )
    lag = float(max_replica_lag)
    if not 0 <= lag < float("inf"):
        raise InvalidArgumentError(f"max_replica_lag must be >= 0 seconds, got {max_replica_lag!r}")
    return urls, lag


def split_replica_options(url: str) -> tuple[str, list[str], float | None]:
    """Remove ``replica=`` (repeatable, URL-encoded) and ``max_replica_lag=`` from a URL;
    return ``(url, replicas, max_replica_lag or None)``. Other parameters stay as given.

    >>> split_replica_options("postgresql://p/db?replica=postgresql%3A%2F%2Fr1%2Fdb&sslmode=require")
    ('postgresql://p/db?sslmode=require', ['postgresql://r1/db'], None)
    >>> split_replica_options("postgresql://p/db?max_replica_lag=soon")
    Traceback (most recent call last):
    threadline.errors.InvalidArgumentError: max_replica_lag must be a number of seconds, got 'soon'
    """
    parts = urlsplit(url)
    kept: list[str] = []
    replicas: list[str] = []
    lag: float | None = None
    for piece in parts.query.split("&") if parts.query else []:
        key, _, value = piece.partition("=")
        name = unquote(key)
        if name == "replica":
            replicas.append(unquote(value))
        elif name == "max_replica_lag":
            if lag is not None:
                raise InvalidArgumentError("store URL option 'max_replica_lag' is given twice")
            try:
                lag = float(unquote(value))
            except ValueError:
                raise InvalidArgumentError(
                    f"max_replica_lag must be a number of seconds, got {unquote(value)!r}"
                ) from None
        else:
            kept.append(piece)
    return urlunsplit(parts._replace(query="&".join(kept))), replicas, lag


# --------------------------------------------------------------------------- one replica


class _Replica:
    """One standby: a few idle connections, what it is known to have replayed, whether it is
    down. Connections are made on demand (a replica that is down costs no wait at open)."""

    def __init__(self, driver: Any, dsn: str) -> None:
        self.dsn = dsn
        self._driver = driver
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self.replayed = 0  #: a position it has replayed (it only moves forward)
        self.down_until = 0.0
        self.down: str | None = None
        self.reads = 0  #: reads it served (tests, benchmarks)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        conn = None
        with self._lock:
            while self._idle and conn is None:
                conn = self._idle.pop()
                if conn.closed or has_input(conn.fileno()):
                    with contextlib.suppress(Exception):
                        conn.close()
                    conn = None
        if conn is None:
            conn = self._driver.connect(self.dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT)
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(Exception):
                conn.close()
            raise
        idle = self._driver.pq.TransactionStatus.IDLE
        with self._lock:
            if len(self._idle) < _IDLE_MAX and conn.info.transaction_status == idle:
                self._idle.append(conn)
                return
        conn.close()

    def failed(self, exc: BaseException) -> None:
        self.down_until = time.monotonic() + _RETRY
        if self.down is None:
            self.down = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            _log.warning("threadline: replica unreachable (%s); reading the primary", self.down)

    def recovered(self) -> None:
        if self.down is not None:
            self.down = None
            _log.warning("threadline: replica reachable again")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


# --------------------------------------------------------------------------- the set


class ReplicaSet:
    """The replicas of one store and the routing rule (module docstring).

    ``primary_position`` returns the primary's WAL insert position (a primary round trip,
    taken at most every 0.5 s, for the lag rule)."""

    def __init__(
        self,
        driver: Any,
        urls: Sequence[str],
        max_lag: float,
        primary_position: Callable[[], int],
    ) -> None:
        self._driver = driver
        self.replicas = [_Replica(driver, url) for url in urls]
        self.max_lag = max_lag
        self._primary_position = primary_position
        self._samples: deque[tuple[float, int]] = deque()
        self._sample_lock = threading.Lock()
        self._next = 0
        self.written = 0  #: the highest position this store's writes noted
        # A first sample now: the first reads compare the replica with the store's opening,
        # not with a position the primary reached a moment before the read.
        self._lag_floor(time.monotonic())

    def wrote(self, position: int) -> None:
        """Note a write's position (read-your-writes for this store, and the request's)."""
        if position > self.written:
            self.written = position
        cell = WRITTEN.get()
        if cell is not None:
            cell.append(position)

    def _lag_floor(self, now: float) -> int:
        """The position a replica must have replayed to lag at most ``max_lag``: the oldest
        sample of the primary's position taken within the last ``max_lag`` seconds."""
        samples = self._samples
        if not samples or samples[-1][0] < now - min(_SAMPLE_EVERY, self.max_lag):
            with self._sample_lock:
                if not samples or samples[-1][0] < now - min(_SAMPLE_EVERY, self.max_lag):
                    samples.append((time.monotonic(), self._primary_position()))
        cutoff = now - self.max_lag
        while len(samples) > 1 and samples[0][0] < cutoff:
            with contextlib.suppress(IndexError):
                samples.popleft()
        for taken, position in list(samples):
            if taken >= cutoff:
                return position
        return samples[-1][1]

    def read(self, fn: Callable[[Any], T]) -> tuple[bool, T | None]:
        """``(True, fn(connection))`` on a replica current enough for this read, or
        ``(False, None)``: read the primary."""
        if ON_PRIMARY.get():
            return False, None
        now = time.monotonic()
        try:
            floor = self._lag_floor(now)
        except Exception:  # a driver error, the pool's timeout: the primary is unreachable
            return False, None  # its own read says so, as without replicas
        floor = max(floor, self.written, READ_AFTER.get() or 0)
        count = len(self.replicas)
        start, self._next = self._next, (self._next + 1) % count
        for offset in range(count):
            replica = self.replicas[(start + offset) % count]
            if replica.down_until > now:
                continue
            try:
                with replica.connection() as conn:
                    replica.recovered()
                    if replica.replayed < floor:
                        row = conn.execute(_SQL_REPLAY_POSITION).fetchone()
                        if row is None or row[0] is None:  # not (or no longer) a standby
                            continue
                        replica.replayed = max(replica.replayed, int(row[0]))
                        if replica.replayed < floor:
                            continue
                    result = fn(conn)
                    replica.reads += 1
                    return True, result
            except self._driver.OperationalError as exc:
                if getattr(exc, "sqlstate", None) is None or str(exc.sqlstate).startswith("08"):
                    replica.failed(exc)
                    continue
                _log.debug("threadline: replica read failed (%s); reading the primary", exc)
                return False, None
            except (self._driver.Error, AttachmentNotFoundError) as exc:
                # A recovery conflict, a schema not replayed yet, an attachment read mid-write:
                # the primary answers.
                _log.debug("threadline: replica read failed (%s); reading the primary", exc)
                return False, None
            except ThreadlineError:
                raise
        return False, None

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()
