"""One PostgreSQL transaction's statements over a psycopg connection (:class:`PgTx`).

The ``Tx`` the shared SQL store runs its statements through: ``?`` placeholders become
psycopg's ``%s``, strings are made NUL-safe on the way in and out, and in a pipelined write
the statements whose answer nobody reads are sent without waiting for it.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from threadline.store._sql.base import Row
from threadline.store.postgres._search import Plan

if TYPE_CHECKING:  # psycopg is an optional extra: imported lazily at run time
    from psycopg import Connection

    PgConn = Connection[tuple[Any, ...]]

__all__ = ["PgTx", "encode_params", "pg_sql"]

# --------------------------------------------------------------------------- NUL-safe strings
# PostgreSQL text cannot contain U+0000. Strings holding it are escaped with U+10FFFF (a
# noncharacter no real text uses): NUL -> ESC "0", ESC -> ESC "E". Equality is preserved
# (the mapping is injective), so keys and ids still compare correctly in SQL.

_ESC = "\U0010ffff"
_ESCAPED = re.compile(_ESC + "(.)", re.DOTALL)
_UNESCAPE = {"0": "\x00", "E": _ESC}


def _encode_text(value: str) -> str:
    if "\x00" in value or _ESC in value:
        return value.replace(_ESC, _ESC + "E").replace("\x00", _ESC + "0")
    return value


def _decode_text(value: str) -> str:
    if _ESC not in value:
        return value
    return _ESCAPED.sub(lambda m: _UNESCAPE.get(m.group(1), m.group(0)), value)


def encode_params(params: Sequence[Any]) -> Sequence[Any]:
    """``params`` with their strings escaped; ``params`` itself when none needs it (nearly
    every statement: no copy). A string with no non-ASCII character cannot hold the escape
    character, and ``isascii`` is a flag read, so only NUL is searched for in most."""
    for value in params:
        if isinstance(value, str) and ("\x00" in value or (not value.isascii() and _ESC in value)):
            return [_encode_text(p) if isinstance(p, str) else p for p in params]
    return params


def _decode_rows(rows: list[Row]) -> list[Row]:
    """``rows`` with escaped strings decoded; the same list when none holds the escape
    character (one loop over the values, no call per row: a read of a long history)."""
    for row in rows:
        for value in row:
            if value.__class__ is str and _ESC in value:
                return [_decode_row(row) for row in rows]
    return rows


def _decode_row(row: Row) -> Row:
    if any(isinstance(v, str) and _ESC in v for v in row):
        return tuple(_decode_text(v) if isinstance(v, str) else v for v in row)
    return row


@functools.lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """``?`` placeholders to psycopg's ``%s`` (a literal ``%`` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


@functools.lru_cache(maxsize=256)
def _held_sql(held: str, sql: str) -> str:
    """``held`` as a data-modifying CTE of ``sql`` (built once per pair of statements)."""
    return f"WITH held AS ({held}) {sql}"


class PgTx:
    """:class:`~threadline.store._sql.Tx` over one psycopg connection; ``pipelined`` (a write
    transaction, in pipeline mode) statements are sent without waiting for their answers
    until a result is needed (``one``, ``all``, ``many``, a row count) or the transaction
    ends."""

    __slots__ = ("conn", "held", "pipelined", "search_plan", "sender", "trailer")

    def __init__(self, conn: PgConn, *, pipelined: bool = False) -> None:
        self.conn = conn
        self.pipelined = pipelined
        self.held: tuple[str, Sequence[Any]] | None = None
        #: One cursor for every statement whose answer nobody reads (``send``): a cursor
        #: made per statement cost more client CPU than the statement's own parameters.
        self.sender: Any = None
        #: The plan of a search's "all" pass, reused by its "any" pass: (key, plan, scan).
        self.search_plan: tuple[Any, Plan, bool, list[tuple[Any, ...]] | None] | None = None
        #: A statement sent after every query, unanswered (a read's generation check).
        self.trailer: tuple[str, Sequence[Any]] | None = None

    def _trail(self) -> None:
        if self.trailer is not None:
            self._sender().execute(*self.trailer)

    def hold(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Send a statement with the next one sent, as a data-modifying CTE of it: one
        statement fewer for psycopg and the server. For a statement whose rows nothing
        sent after it reads (it is not visible to the statement it rides on); before a
        read, or a statement that has its own ``WITH``, it goes alone."""
        self.release()
        self.held = (sql, encode_params(params))

    def release(self) -> None:
        """Send the held statement alone, if there is one."""
        if self.held is not None:
            (sql, params), self.held = self.held, None
            self._sender().execute(pg_sql(sql), params)

    def _sender(self) -> Any:
        if self.sender is None:
            self.sender = self.conn.cursor()
        return self.sender

    def send(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a statement; in a pipeline, its answer is not waited for."""
        values = encode_params(params)
        if self.held is not None and not sql.startswith("WITH"):
            (first, before), self.held = self.held, None
            sql, values = _held_sql(first, sql), [*before, *values]
        else:
            self.release()
        self._sender().execute(pg_sql(sql), values)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        self.release()
        cursor = self.conn.execute(pg_sql(sql), encode_params(params))
        if self.pipelined:
            # The answers come in order: waiting for this one brings the row count above.
            # (A pipeline Sync would end the implicit transaction: see _transaction.)
            self.conn.execute("SELECT 1").fetchone()
        return cursor.rowcount

    def many(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        """Every row of each query, all sent in one round trip (in pipeline mode: a read
        enters it for these queries only)."""
        self.release()
        execute = self.conn.execute
        with contextlib.nullcontext() if self.pipelined else self.conn.pipeline():
            cursors = [execute(pg_sql(sql), encode_params(params)) for sql, params in queries]
            self._trail()
        return [_decode_rows(cursor.fetchall()) for cursor in cursors]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """First row of a query, or None."""
        self.release()
        cursor = self.conn.execute(pg_sql(sql), encode_params(params))
        self._trail()
        row = cursor.fetchone()
        return None if row is None else _decode_row(row)

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Every row of a query."""
        self.release()
        cursor = self.conn.execute(pg_sql(sql), encode_params(params))
        self._trail()
        return _decode_rows(cursor.fetchall())
