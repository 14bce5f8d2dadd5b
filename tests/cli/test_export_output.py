"""``threadline export -o PATH``: what happens to what is at PATH (api.md amendment 18).

A regular file is replaced atomically (a new inode renamed into place) keeping its mode; a
new file gets the umask's mode; a symlink is followed (the link stays, its target is
written); a FIFO, a device node and this process's standard output (``-o /dev/stdout``) are
written straight into and stay what they are; a directory is refused, untouched. Device
nodes are made under the test's tmp_path (never /dev itself).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import threadline

from .conftest import Run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "store.db"
    with threadline.connect(str(path)) as store:
        for sid in ("a", "b"):
            message = {"id": f"{sid}1", "role": "user", "parts": [{"type": "text", "text": sid}]}
            store.append_messages("default", sid, [message])
    return str(path)


def _records(text: str) -> list[str]:
    records = [json.loads(line) for line in text.splitlines()]
    apps = [record for record in records if record.get("type") == "app"]
    assert len(apps) == 1  # a whole app's export holds its app record
    return sorted(record["session"]["id"] for record in records if record not in apps)


def test_a_regular_file_is_replaced_atomically_keeping_its_mode(
    run: Run, db: str, tmp_path: Path
) -> None:
    out = tmp_path / "backup.jsonl"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    before = os.stat(out)
    result = run("export", db, "-o", str(out))
    assert result.code == 0, result.err
    after = os.stat(out)
    assert _records(out.read_text()) == ["a", "b"]
    assert stat.S_IMODE(after.st_mode) == 0o600
    assert after.st_ino != before.st_ino  # a new file renamed over the old one
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_mode_the_umask_would_not_give_is_kept(run: Run, db: str, tmp_path: Path) -> None:
    out = tmp_path / "shared.jsonl"
    out.write_text("old\n")
    os.chmod(out, 0o664)
    old_umask = os.umask(0o077)
    try:
        assert run("export", db, "-o", str(out)).code == 0
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o664


def test_a_new_file_gets_the_umask_mode(run: Run, db: str, tmp_path: Path) -> None:
    out = tmp_path / "new.jsonl"
    old_umask = os.umask(0o022)
    try:
        assert run("export", db, "-o", str(out)).code == 0
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    assert _records(out.read_text()) == ["a", "b"]


def test_a_symlink_is_followed_and_stays(run: Run, db: str, tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert run("export", db, "-o", str(link)).code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert _records(target.read_text()) == ["a", "b"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_a_dangling_symlink_creates_its_target(run: Run, db: str, tmp_path: Path) -> None:
    target = tmp_path / "later.jsonl"
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert run("export", db, "-o", str(link)).code == 0
    assert link.is_symlink() and _records(target.read_text()) == ["a", "b"]


def test_a_fifo_is_written_into_and_stays_a_fifo(run: Run, db: str, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    result = run("export", db, "-o", str(fifo))
    reader.join(10)
    assert result.code == 0, result.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and _records(got[0]) == ["a", "b"]


def test_a_device_is_written_into_and_stays_a_device(run: Run, db: str, tmp_path: Path) -> None:
    null = tmp_path / "null"
    try:  # a copy of /dev/null (char 1, 3): needs the right to make device nodes
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        pytest.skip("cannot make a device node here")
    before = os.lstat(null)
    assert run("export", db, "-o", str(null)).code == 0
    info = os.lstat(null)
    assert stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)
    assert (info.st_ino, info.st_mode) == (before.st_ino, before.st_mode)
    full = tmp_path / "full"  # every write fails: one line, the node unchanged
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    result = run("export", db, "-o", str(full))
    assert result.code == 1 and str(full) in result.err
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_a_directory_is_refused_untouched(run: Run, db: str, tmp_path: Path) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    result = run("export", db, "-o", str(directory))
    assert result.code == 1 and result.err.count("\n") == 1
    assert directory.is_dir() and list(directory.iterdir()) == []


def _export_to_stdout(db: str, stdout: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "threadline.cli", "export", db, "-o", "/dev/stdout"],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_dev_stdout_writes_to_a_pipe(db: str) -> None:
    done = _export_to_stdout(db, subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    assert _records(done.stdout) == ["a", "b"]  # only records: the summary went to stderr
    assert "Exported 2 session(s)" in done.stderr
    assert stat.S_ISLNK(os.lstat("/dev/stdout").st_mode)


def test_dev_stdout_appends_to_a_file_opened_for_append(db: str, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"session": {"id": "first"}}\n')
    with log.open("a") as fp:
        done = _export_to_stdout(db, fp)
    assert done.returncode == 0, done.stderr
    assert _records(log.read_text()) == ["a", "b", "first"]
