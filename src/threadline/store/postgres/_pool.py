"""A PostgreSQL connection pool that follows the server through outages.

psycopg_pool reconnects by itself, but with a growing back-off: after a long outage the first
write succeeded ~26 s after the server was back, every caller waited the pool's full timeout
while the server was down, and the pool logged a warning per failed attempt. Here:

* the first connection failure marks the server *down* and logs one warning on the
  ``threadline`` logger;
* while down, every operation first tries a direct connection (2 s connect timeout): if it
  fails the operation fails at once with that error, if it succeeds the pool is replaced by a
  fresh one, the server is *up* again, and one line says so. In the first
  :data:`_GRACE` seconds of an outage the attempt is repeated until then, so that an
  operation cut by a quick restart is retried onto the restarted server;
* psycopg_pool's own warnings about these pools are dropped (the state lines replace them);
* a connection handed out is checked without a round trip: an idle connection has nothing to
  read, so only one whose socket is readable (the server closed it, or sent a notice) gets
  psycopg_pool's real check, a query. A server that dies between that look and the query
  fails the operation as any failure during it would. A connection failing the check is a
  connection failure like any other (server marked down, then probed): psycopg_pool's own
  check loop would instead wait, up to its full timeout, for a connection it cannot make
  while the server is down (an operation that began as a primary died waited ~10 s, or
  through the whole outage onto a promoted standby, instead of failing fast);
* a connection on which anything failed is discarded (closed, replaced by a fresh one), never
  handed out again: only a typed ``ThreadlineError`` of the store's own checks, raised while
  the connection is idle and healthy, lets it go back. A failed statement can leave the
  connection in a state the next user cannot see or repair: psycopg (3.3) records a statement
  as prepared when its ``Parse`` goes out inside a pipeline, even if an earlier statement of
  that pipeline failed and the server skipped the ``Parse``; every later use of that
  statement on the connection then fails with "prepared statement ... does not exist".

No I/O at import; psycopg is handed in by the caller (it is an optional extra).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import select
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from threadline.errors import StoreError, ThreadlineError

_log = logging.getLogger("threadline")
_names = itertools.count(1)
_PREFIX = "threadline-"
_PROBE_TIMEOUT = 2  # seconds libpq waits to connect when probing a server marked down
_WAIT = 10.0  # seconds an operation waits for a pooled connection before it fails
_GRACE = 5.0  # seconds after a failure during which a probe keeps trying (a restart)


#: Connections closed on purpose (``ServerPool.discard``): psycopg_pool's warning about a
#: closed connection coming back is expected for them, so it is not logged.
_discarded: weakref.WeakSet[Any] = weakref.WeakSet()


class _QuietOurPools(logging.Filter):
    """Drop psycopg_pool's warnings about the pools made here (one state line replaces them)
    and about the connections discarded here."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        args = record.args if isinstance(record.args, tuple) else ()
        if any(_is_discarded(arg) for arg in args):
            return False
        return _PREFIX not in record.getMessage()


def _is_discarded(value: object) -> bool:
    try:
        return value in _discarded
    except TypeError:  # not weak-referenceable: not a connection
        return False


logging.getLogger("psycopg.pool").addFilter(_QuietOurPools())


def is_connection_failure(exc: BaseException, pool_module: Any) -> bool:
    """Whether ``exc`` says the server (or the way to it) is gone, not that a query failed."""
    if isinstance(exc, pool_module.PoolTimeout):
        return True
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(("08", "57P"))


def has_input(fd: int) -> bool:
    """Whether the socket ``fd`` has something to read (or was closed), without waiting."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # pragma: no cover (Windows)


class ServerPool:
    """The pool of one store: ``connection()`` hands out a connection or raises fast."""

    def __init__(
        self, driver: Any, pool_module: Any, dsn: str, min_size: int, max_size: int
    ) -> None:
        self._driver, self._pool_module, self._dsn = driver, pool_module, dsn
        self._sizes = (min_size, max_size)
        self.name = f"{_PREFIX}{next(_names)}"
        self._lock = threading.Lock()
        self._down: str | None = None
        self._down_since = 0.0
        self._pool = self._new_pool()

    def _new_pool(self) -> Any:
        return self._pool_module.ConnectionPool(
            self._dsn,
            min_size=self._sizes[0],
            max_size=self._sizes[1],
            kwargs={"autocommit": True},
            name=self.name,
            timeout=_WAIT,
            open=True,
        )

    def _getconn(self) -> tuple[Any, Any]:
        """``(pool, connection)``: a connection of the current pool, checked (psycopg_pool's
        check, a query) only when its socket says something happened to it since its last
        use. A dead one marks the server down and is replaced through the probe (which
        raises, within :data:`_GRACE`, while no server takes the connection)."""
        pool = self._pool
        conn = pool.getconn()
        if not has_input(conn.fileno()):
            return pool, conn
        try:
            self._pool_module.ConnectionPool.check_connection(conn)
        except self._driver.Error as exc:
            self.discard(conn)
            with contextlib.suppress(Exception):
                conn.close()
            pool.putconn(conn)
            self.failed(exc)
        else:
            return pool, conn
        self._probe()
        pool = self._pool
        return pool, pool.getconn()

    @property
    def is_down(self) -> bool:
        """True between a connection failure and the next successful probe."""
        return self._down is not None

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection; while the server is down, probe it first (raises if still
        down). Connection failures inside the block mark the server down."""
        if self._down is not None:
            self._probe()
        try:
            # getconn/putconn rather than psycopg_pool's connection(): that context manager
            # adds a commit (a no-op: connections are in autocommit) and usage statistics,
            # client CPU on every operation. What its "with conn" does on an error is kept.
            pool, conn = self._getconn()
            try:
                yield conn
            except BaseException as exc:
                if not self._reusable(conn, exc):
                    self.discard(conn)
                raise
            finally:
                if conn in _discarded:
                    with contextlib.suppress(Exception):
                        conn.close()  # putconn then replaces it
                pool.putconn(conn)
        except self._driver.Error as exc:
            if isinstance(exc, self._driver.OperationalError) and is_connection_failure(
                exc, self._pool_module
            ):
                self.failed(exc)
            raise
        except self._pool_module.PoolTimeout as exc:
            self.failed(exc)
            raise

    def _reusable(self, conn: Any, exc: BaseException) -> bool:
        """Whether ``conn`` may serve again after ``exc`` ended its use: only after a typed
        error of the store's own (not a driver failure, not an interruption), on a connection
        that is healthy and idle once rolled back. Anything else may have left state behind
        (a prepared-statement cache out of step with the server, an open transaction, a
        half-read answer) that would fail the next, unrelated operation."""
        if not isinstance(exc, ThreadlineError) or isinstance(exc, StoreError):
            return False
        if conn.closed or conn.broken or conn in _discarded:
            return False
        try:
            conn.rollback()  # autocommit and idle: nothing to do, no round trip
        except Exception:
            return False
        idle = self._driver.pq.TransactionStatus.IDLE
        return bool(conn.info.transaction_status == idle)

    def discard(self, conn: Any) -> None:
        """Have ``conn`` closed when it comes back (the end of ``connection()``): the pool
        replaces it instead of handing it out again."""
        _discarded.add(conn)

    def failed(self, exc: BaseException) -> None:
        """Mark the server down (one warning per outage)."""
        with self._lock:
            if self._down is not None:
                return
            self._down = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            self._down_since = time.monotonic()
        _log.warning(
            "threadline: PostgreSQL unreachable (%s); operations fail at once until it is back",
            self._down,
        )

    def _probe(self) -> None:
        while True:
            try:
                with self._driver.connect(
                    self._dsn, connect_timeout=_PROBE_TIMEOUT, autocommit=True
                ):
                    break
            except self._driver.OperationalError:
                if time.monotonic() >= self._down_since + _GRACE:
                    raise
                time.sleep(0.1)
        with self._lock:
            if self._down is None:
                return  # another thread brought the pool back first
            old, self._pool, self._down = self._pool, self._new_pool(), None
        _log.warning("threadline: PostgreSQL reachable again; connections renewed")
        # The old pool may still be backing off: close it without holding anyone up.
        threading.Thread(target=old.close, kwargs={"timeout": 1.0}, daemon=True).start()

    def stats(self) -> tuple[int, int, int]:
        """``(connections held, of which idle, requests waiting)`` of the current pool."""
        stats = self._pool.get_stats()
        return stats["pool_size"], stats["pool_available"], stats.get("requests_waiting", 0)

    def close(self) -> None:
        """Close the pool (idempotent)."""
        self._pool.close()
