"""Files the CLI writes (``export -o PATH``): what happens to what is at ``PATH``.

* nothing there: a new regular file (mode from the umask, as any new file), written beside
  it first and moved into place, so a failed write leaves nothing;
* a regular file: replaced the same way, atomically, keeping its mode (and owner, where
  allowed): a reader sees the old content or the new, never half of it;
* a symlink: followed, its target is written by these rules, the link stays;
* a FIFO, a character or block device or another non-regular file: opened and written
  straight into, never replaced by a regular file;
* this process's standard output (``-o /dev/stdout``, ``/dev/fd/1``), whatever it is:
  written through ``sys.stdout``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO, TypeVar

T = TypeVar("T")


def write_output(path: Path | str, write: Callable[[TextIO], T]) -> T:
    """Call ``write`` with a text stream into ``path`` (see the module's rules); its result.

    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "out.jsonl"
    >>> write_output(target, lambda fp: fp.write("{}\\n"))
    3
    >>> target.read_text()
    '{}\\n'
    """
    try:
        info = os.stat(path)  # follows symlinks, /dev/stdout and /dev/fd/N included
    except FileNotFoundError:
        info = None
    if info is not None and _is_stdout(info):
        # The process's own standard output (a terminal, a pipe, a file opened for append):
        # written through the stream it already has, where a new open would start over.
        result = write(sys.stdout)
        sys.stdout.flush()
        return result
    if info is not None and not stat.S_ISREG(info.st_mode):
        return _write_in_place(Path(path), write)
    # A symlink (or a chain of them) is followed: its target is replaced, the link stays.
    return _replace(Path(os.path.realpath(path)), info, write)


def is_stdout(path: Path | str) -> bool:
    """Whether ``path`` names this process's standard output (``/dev/stdout`` and the like).

    >>> is_stdout("/nonexistent/file")
    False
    """
    try:
        return _is_stdout(os.stat(path))
    except OSError:
        return False


def _is_stdout(info: os.stat_result) -> bool:
    try:
        return os.path.samestat(info, os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # no real stdout (captured, closed)
        return False


def _write_in_place(target: Path, write: Callable[[TextIO], T]) -> T:
    """A FIFO or device: written as it is (no create, no truncate, no rename)."""
    try:
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            return write(fp)
    except OSError as exc:
        if exc.filename is None:  # a failed write names no file: name it in the message
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        raise


def _replace(target: Path, info: os.stat_result | None, write: Callable[[TextIO], T]) -> T:
    """Write a file beside ``target``, then rename it over ``target`` (atomic)."""
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)  # a new file: the umask
    try:
        if info is not None and hasattr(os, "fchmod"):  # not on Windows
            os.fchmod(fd, mode)  # the replaced file's mode, whatever the umask
            with contextlib.suppress(OSError):  # only a privileged user may give files away
                os.fchown(fd, info.st_uid, info.st_gid)
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            fd = -1
            result = write(fp)
            fp.flush()
            os.fsync(fp.fileno())
        os.replace(temp, target)
    except BaseException:
        if fd != -1:
            os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    return result
