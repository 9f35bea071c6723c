"""Atomic file writes: a temporary file next to the target, fsynced, then renamed over it.

The target is always either the old file or the complete new one.  A save that is killed
(SIGKILL, power loss) cannot remove its temporary file, so each save first removes the
stale temporaries of earlier saves to the same target: files named
``.<target>.<pid>.<random>.mttmp`` whose writer process no longer exists, or whose pid now
belongs to a process that started after the file was last written (the pid was reused).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import threading
from collections.abc import Callable
from typing import IO

_SUFFIX = ".mttmp"
_active: set[str] = set()  # temporaries this process is writing right now
_lock = threading.Lock()


def _temp_pattern(name: str) -> re.Pattern:
    return re.compile(re.escape(f".{name}.") + r"(\d+)\.[0-9a-f]{12}" + re.escape(_SUFFIX))


def _process_started_after(pid: int, mtime: float) -> bool:
    """True when process ``pid`` provably started after ``mtime`` (Linux /proc)."""
    try:
        return os.stat(f"/proc/{pid}").st_ctime > mtime
    except OSError:
        return False


def _is_stale(path: str, pid: int) -> bool:
    if pid == os.getpid():
        return path not in _active
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        pass  # alive (someone else's process)
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return False
    return _process_started_after(pid, mtime)


def remove_stale_temporaries(directory: str, name: str) -> list[str]:
    """Delete the leftover temporaries of killed saves to ``directory/name``; returns them."""
    pattern = _temp_pattern(name)
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry)
        if match is None:
            continue
        path = os.path.join(directory, entry)
        with _lock:
            stale = _is_stale(path, int(match.group(1)))
        if stale:
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed


def _open_temp(directory: str, name: str) -> tuple[int, str]:
    """A new empty temporary file next to the target (same filesystem, so the rename is
    atomic); mode 0o666 minus the umask, like a normal ``open``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(6)}{_SUFFIX}")
        try:
            with _lock:
                fd = os.open(tmp, flags, 0o666)
                _active.add(tmp)
            return fd, tmp
        except FileExistsError:
            continue


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); best effort where directories can't be opened."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(fh)`` on a temporary file and rename it to ``path`` once complete."""
    path = os.path.realpath(path)  # through symlinks: replace the file, not the link
    directory, name = os.path.split(path)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"cannot save to {path}: directory {directory} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save to {path}: it is a directory")
    remove_stale_temporaries(directory, name)
    fd, tmp = _open_temp(directory, name)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # overwrite keeps permissions
        os.replace(tmp, path)
    except BaseException:
        # Whatever failed (the data, the disk, a KeyboardInterrupt), the target is untouched
        # and the partial file goes away.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        with _lock:
            _active.discard(tmp)
    _fsync_directory(directory)
