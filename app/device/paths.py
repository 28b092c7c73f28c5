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
