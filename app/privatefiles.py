"""Files only their owner may read, in folders only their owner may enter: the gateway's store
and tokens and the app's store hold every question, answer and token. One rule for both.

A folder made here is 0700. An existing folder of ours that others can enter is narrowed to
0700, unless it is a shared one with the sticky bit (say /tmp, 1777): narrowing that would lock
everyone else out of it. The file itself is always 0600 (SQLite gives its -wal and -shm files
the database file's mode).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_folder(folder: Path) -> None:
    if not folder.exists():
        folder.mkdir(parents=True, mode=0o700)
        return
    if os.name != "posix":
        return
    info = folder.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077 and not info.st_mode & stat.S_ISVTX:
        os.chmod(folder, 0o700)


def private_file(path: Path) -> None:
    """`path` (made empty when missing) readable by its owner only, in a private folder."""
    private_folder(path.parent)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    if os.name == "posix":
        os.chmod(path, 0o600)


def write_private(path: Path, text: str) -> None:
    """Replace `path` in one step with `text`, 0600 from the first byte (a temporary file left
    by a crash, whatever its mode, is made 0600 before it is written)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if os.name == "posix":
        os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
