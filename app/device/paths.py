"""Where the app keeps its data: the built app's storage directory, else the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

FLET_STORAGE_ENV = "FLET_APP_STORAGE_DATA"
DATA_DIR_ENV = "ASK_USER_APP_DATA"
STORE_FILE = "device.sqlite3"


def app_data_dir() -> Path:
    """`ASK_USER_APP_DATA` if set, else `FLET_APP_STORAGE_DATA` (set by `flet build` apps),
    else the platform's user data directory."""
    for env in (DATA_DIR_ENV, FLET_STORAGE_ENV):
        if value := os.environ.get(env):
            return Path(value)
    import platformdirs

    return platformdirs.user_data_path("ask-user", appauthor=False) / "app"


def private_file(path: Path) -> None:
    """Make `path` (created empty if missing) readable by its owner only, in a folder only its
    owner can enter: it holds the device token and every question and answer. SQLite gives its
    -wal and -shm files the database file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name != "posix":
        return
    os.chmod(path.parent, 0o700)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    os.chmod(path, 0o600)
