"""A throwaway PostgreSQL primary with a synchronous streaming standby, for failover tests.

Made from the binaries in ``THREADLINE_TEST_PG_BIN`` (``scripts/test`` sets it), run as
``THREADLINE_TEST_PG_OWNER`` when given (the unprivileged user scripts/test runs PostgreSQL
as, when it runs as root). The primary has ``synchronous_standby_names = '*'`` and
``synchronous_commit = on``: a commit returns once the standby has flushed it, so a promoted
standby holds every acknowledged write (api.md clarification 30).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class FailoverPair:
    bin_dir: Path
    owner: str | None
    root: Path
    ports: dict[str, int] = field(default_factory=dict)

    def run(self, program: str, *args: str) -> None:
        prefix = ["runuser", "-u", self.owner, "--"] if self.owner else []
        done = subprocess.run(
            [*prefix, str(self.bin_dir / program), *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)}: {done.stderr or done.stdout}")

    def ctl(self, name: str, *args: str) -> None:
        data = self.root / name
        self.run("pg_ctl", "-D", str(data), "-l", str(self.root / f"{name}.log"), *args)

    @property
    def url(self) -> str:
        """Both servers in one multi-host URL, the writable one chosen by libpq."""
        hosts = ",".join(f"127.0.0.1:{self.ports[n]}" for n in ("primary", "standby"))
        return f"postgresql://postgres@{hosts}/postgres?target_session_attrs=read-write"

    def dsn(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.ports[name]}/postgres"

    def start(self) -> None:
        primary, standby = self.root / "primary", self.root / "standby"
        self.run("initdb", "-D", str(primary), "--auth=trust", "-U", "postgres", "--no-sync")
        self.ports["primary"] = _free_port()
        with (primary / "postgresql.auto.conf").open("a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {self.ports['primary']}\n"
                f"unix_socket_directories = '{self.root}'\nfsync = off\n"
                "synchronous_commit = on\nsynchronous_standby_names = '*'\n"
            )
        self.ctl("primary", "-w", "-t", "60", "start")
        self.run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(self.ports["primary"]),
            "-U", "postgres", "-D", str(standby), "-R", "-X", "stream", "-c", "fast",
        )  # fmt: skip
        self.ports["standby"] = _free_port()
        with (standby / "postgresql.auto.conf").open("a") as conf:
            port = self.ports["standby"]
            conf.write(f"port = {port}\nhot_standby = on\nsynchronous_standby_names = ''\n")
        self.ctl("standby", "-w", "-t", "60", "start")

    def stop(self) -> None:
        for name in ("standby", "primary"):
            if (self.root / name / "postmaster.pid").exists():
                with contextlib.suppress(RuntimeError):
                    self.ctl(name, "-w", "-t", "30", "-m", "immediate", "stop")


@contextlib.contextmanager
def failover_pair(bin_dir: str, owner: str | None) -> Iterator[FailoverPair]:
    root = Path(tempfile.mkdtemp(prefix="threadline-failover."))
    if owner:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    pair = FailoverPair(Path(bin_dir), owner, root)
    try:
        pair.start()
        yield pair
    finally:
        pair.stop()
        time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)
