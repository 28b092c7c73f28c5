"""One gateway process per SQLite file.

The SQLite store keeps the prompts it committed in memory and hears of no other process's
writes (that is what PostgreSQL is for). A second gateway on the same file, say the app's
embedded one started while `python -m app gateway` runs on the same data directory, would show
devices nothing of what agents asked the first, and never wake the agents waiting in the first
when a person answers in the second. So the store holds an advisory lock on a file beside the
database while it is open; the kernel lets go of it when the process ends, `kill -9` included.
"""

from __future__ import annotations

import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows has no flock: nothing is enforced there
    fcntl = None  # type: ignore[assignment]  # the module or nothing


class FileInUse(Exception):
    """Another gateway process holds the database; the message says which and what to do."""

    def __init__(self, db_path: Path, pid: int | None) -> None:
        self.db_path, self.pid = db_path, pid
        who = f"another gateway (process {pid})" if pid else "another gateway"
        super().__init__(
            f"{who} is using {db_path.parent}: stop it first, or give this one a data "
            "directory of its own (--data-dir)"
        )


class Ownership:
    """This process's hold on a database file, from opening the store until `release`."""

    def __init__(self, db_path: Path) -> None:
        self._fd: int | None = None
        if fcntl is None:
            return
        fd = os.open(lock_path(db_path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid_in(fd)
            os.close(fd)
            raise FileInUse(db_path, pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)  # for the next one's message
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor lets go of the lock
            self._fd = None


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


def ensure_free(db_path: Path) -> None:
    """FileInUse when another process holds the database now: a moment's look, for a clear
    message before anything starts; the store's own hold is what enforces it."""
    if lock_path(db_path).exists():
        Ownership(db_path).release()


def _pid_in(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None  # the holder has not written it yet
