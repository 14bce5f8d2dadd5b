"""Shared fixtures: the storage backends every conformance test runs against.

Backend ids of the ``store_url`` / ``store`` parameters:

- ``sqlite-file``    a fresh database file in the test's ``tmp_path``;
- ``sqlite-memory``  ``:memory:``;
- ``postgres``       a fresh schema in the database named by ``THREADLINE_TEST_PG_DSN``
                     (``scripts/test`` starts a throwaway server and exports it).

Without ``THREADLINE_TEST_PG_DSN`` the postgres cases are skipped, unless
``THREADLINE_REQUIRE_PG=1`` (``scripts/test`` sets it), which turns that skip into a failure.
Deselect them with ``-m "not postgres"``.

>>> def test_roundtrip(store):           # runs three times, once per backend
...     ...
"""

from __future__ import annotations

import os
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import quote

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from threadline.store import Store

PG_DSN_ENV = "THREADLINE_TEST_PG_DSN"
PG_REQUIRE_ENV = "THREADLINE_REQUIRE_PG"
PG_CTL_ENV = "THREADLINE_TEST_PG_CTL"
PG_DATA_ENV = "THREADLINE_TEST_PG_DATA"

# Store-backed property tests are slow and their timing varies with the machine: no deadline.
settings.register_profile("threadline", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "threadline"))

_POSTGRES = pytest.param("postgres", id="postgres", marks=pytest.mark.postgres)
ALL_BACKENDS = [
    pytest.param("sqlite-file", id="sqlite-file"),
    pytest.param("sqlite-memory", id="sqlite-memory"),
    _POSTGRES,
]
FILE_BACKENDS = [pytest.param("sqlite-file", id="sqlite-file"), _POSTGRES]


# --------------------------------------------------------------------------------------------
# store URLs and stores
# --------------------------------------------------------------------------------------------


def _backend_url(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> str:
    if backend == "sqlite-file":
        # SQLAlchemy convention: "sqlite:///" + an absolute path gives the four slashes it needs.
        return f"sqlite:///{(tmp_path / 'threadline.db').as_posix()}"
    if backend == "sqlite-memory":
        return ":memory:"
    if backend == "postgres":
        dsn: str = request.getfixturevalue("pg_dsn")
        return dsn
    raise AssertionError(f"unknown backend {backend!r}")


@pytest.fixture(params=ALL_BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty store, once per backend (sqlite-file, sqlite-memory, postgres)."""
    return _backend_url(request, request.param, tmp_path)


@pytest.fixture(params=FILE_BACKENDS)
def file_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty store that several processes can open (sqlite-file, postgres)."""
    return _backend_url(request, request.param, tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """``threadline.connect(store_url)``, closed after the test."""
    import threadline  # lazily: collecting unit tests must not need the whole package

    opened = threadline.connect(store_url)
    try:
        yield opened
    finally:
        opened.close()


# --------------------------------------------------------------------------------------------
# PostgreSQL: one fresh schema per test
# --------------------------------------------------------------------------------------------


def _pg_unavailable(reason: str) -> NoReturn:
    """Skip a postgres test, or fail it when the run promised a server (scripts/test)."""
    if os.environ.get(PG_REQUIRE_ENV) == "1":
        pytest.fail(
            f"PostgreSQL is required ({PG_REQUIRE_ENV}=1) but {reason}. "
            "Run the suite through scripts/test, which starts a server.",
            pytrace=False,
        )
    pytest.skip(f"PostgreSQL tests need {PG_DSN_ENV}: {reason}")


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        _pg_unavailable("psycopg is not installed (pip install -e '.[dev]')")
    return psycopg


def schema_dsn(base_dsn: str, schema: str) -> str:
    """``base_dsn`` with libpq options putting ``schema`` first on the search path.

    The application name is the schema too, so teardown can find connections a test leaked.

    >>> schema_dsn("postgresql://u@h/db", "t_ab")
    'postgresql://u@h/db?options=-csearch_path%3Dt_ab%2Cpublic&application_name=t_ab'
    """
    options = quote(f"-csearch_path={schema},public", safe="")
    separator = "&" if "?" in base_dsn else "?"
    return f"{base_dsn}{separator}options={options}&application_name={schema}"


def _connect_admin(psycopg: Any, dsn: str) -> Any:
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot connect to {PG_DSN_ENV}={dsn}: {exc}", pytrace=False)


def _drop_schema(psycopg: Any, dsn: str, schema: str) -> None:
    with _connect_admin(psycopg, dsn) as conn:
        # A store the test forgot to close would hold locks and block the DROP.
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            [schema],
        )
        conn.execute("SET lock_timeout = '10s'")
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _fresh_schema(prefix: str) -> Iterator[str]:
    """Yield a DSN whose search path starts with a new, empty schema; drop it afterwards."""
    base = os.environ.get(PG_DSN_ENV, "")
    if not base:
        _pg_unavailable(f"{PG_DSN_ENV} is not set")
    psycopg = _import_psycopg()
    schema = f"{prefix}_{uuid.uuid4().hex}"  # hex only: safe to splice into SQL
    with _connect_admin(psycopg, base) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema_dsn(base, schema)
    finally:
        _drop_schema(psycopg, base, schema)


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    """DSN whose search path starts with a fresh, empty schema, dropped after the test."""
    yield from _fresh_schema("t")


@pytest.fixture
def other_pg_dsn() -> Iterator[str]:
    """A second fresh schema, for tests that compare two stores side by side."""
    yield from _fresh_schema("t")


# --------------------------------------------------------------------------------------------
# PostgreSQL: server control for fault tests
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PgCtl:
    """Stops, starts and restarts the throwaway server that scripts/test started.

    >>> def test_survives_restart(pg_ctl, pg_dsn):
    ...     pg_ctl.restart(mode="immediate")   # a crash: every open connection dies
    """

    command: tuple[str, ...]
    data_dir: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``pg_ctl -D <data> -l <log> *args`` as the server's owner; raise on failure."""
        done = subprocess.run(
            [*self.command, *args],
            capture_output=True,
            text=True,
            cwd=self.data_dir.parent,  # a directory the server's owner may enter
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {' '.join(args)} failed: {done.stderr or done.stdout}")
        return done

    def is_running(self) -> bool:
        """True when the postmaster is up (``pg_ctl status`` exits 0)."""
        done = subprocess.run(
            [*self.command, "status"], capture_output=True, cwd=self.data_dir.parent, check=False
        )
        return done.returncode == 0

    def stop(self, mode: str = "fast") -> None:
        """Stop the server; ``mode`` is smart, fast or immediate (a crash)."""
        self.run("-w", "-t", "60", "-m", mode, "stop")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.run("-w", "-t", "60", "start")

    def restart(self, mode: str = "fast") -> None:
        """Stop (``mode``: fast, or immediate to simulate a crash) and start the server again."""
        self.run("-w", "-t", "60", "-m", mode, "restart")


@pytest.fixture
def pg_ctl() -> Iterator[PgCtl]:
    """Control of the test server; it is running again when the test ends, whatever happened."""
    command = os.environ.get(PG_CTL_ENV, "")
    data_dir = os.environ.get(PG_DATA_ENV, "")
    if not command or not data_dir:
        _pg_unavailable(f"{PG_CTL_ENV} and {PG_DATA_ENV} are not set")
    control = PgCtl(tuple(shlex.split(command)), Path(data_dir))
    try:
        yield control
    finally:
        if not control.is_running():
            control.start()


# The reference rendering example, byte for byte (soul + memory holding 4 tokens).
FORMATS_GOLDEN = (
    "══════════════════════════════════════════════\n"
    "SOUL [readonly]\n"
    "══════════════════════════════════════════════\n"
    "You are helpful.\n"
    "\n"
    "══════════════════════════════════════════════\n"
    "MEMORY (Facts) [0% — 4/1100 tokens] [writable]\n"
    "══════════════════════════════════════════════\n"
    "likes TypeScript"
)


@pytest.fixture
def formats_golden() -> str:
    """The system-prompt rendering example of the rendering contract."""
    return FORMATS_GOLDEN



@pytest.fixture(scope="module")
def module_pg_dsn() -> Iterator[str]:
    """Like ``pg_dsn``, one fresh schema shared by the tests of a module."""
    yield from _fresh_schema("m")


# --------------------------------------------------------------------------------------------
# whole-store snapshots
# --------------------------------------------------------------------------------------------

STORE_TABLES = (
    "tl_sessions", "tl_messages", "tl_compactions", "tl_skill_loads", "tl_prompts", "tl_blocks",
    "tl_entries", "tl_state",
)  # fmt: skip


def _dump(store: Any) -> dict[str, list[str]]:
    """Every row of every table of a store, as sorted reprs (search columns left out)."""

    def read(tx: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for table in STORE_TABLES:
            rows = tx.all(f"SELECT * FROM {table}")
            out[table] = sorted(repr(tuple(str(v) for v in row)) for row in rows)
        return out

    dumped: dict[str, list[str]] = store._read("dump", read)
    return dumped


@pytest.fixture
def dump_store() -> Any:
    """``dump_store(store)``: a snapshot to compare before and after a call."""
    return _dump


# --------------------------------------------------------------------------------------------
# an injected clock (instead of sleeping)
# --------------------------------------------------------------------------------------------


class FakeClock:
    """A clock that moves only when told: ``clock.advance(seconds=5)``."""

    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.current = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> Any:
        return self.current

    def advance(self, **delta: float) -> Any:
        from datetime import timedelta

        self.current += timedelta(**delta)
        return self.current


@pytest.fixture
def clock() -> FakeClock:
    """A :class:`FakeClock` starting at 2026-01-01 UTC."""
    return FakeClock()


@pytest.fixture
def clocked_store(store_url: str, clock: FakeClock) -> Iterator[Store]:
    """``threadline.connect(store_url, clock=clock)``, once per backend, closed afterwards."""
    import threadline

    opened = threadline.connect(store_url, clock=clock)
    try:
        yield opened
    finally:
        opened.close()
