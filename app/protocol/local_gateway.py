"""How a command finds a gateway: the environment variables that name one, and what a gateway
on this machine keeps in its data directory (`tokens.json`, and `gateway.json` with the
address it listens on). The gateway writes those files; the agent tools, `pair`, the app and
the channels read them. Names only, no I/O."""

from __future__ import annotations

import os
from pathlib import Path

GATEWAY_URL_ENV = "ASK_USER_GATEWAY_URL"
AGENT_TOKEN_ENV = "ASK_USER_AGENT_TOKEN"
DEVICE_TOKEN_ENV = "ASK_USER_DEVICE_TOKEN"
DATA_DIR_ENV = "ASK_USER_GATEWAY_DATA"
TOKENS_FILE = "tokens.json"
LOCAL_INFO_FILE = "gateway.json"  # {"localUrl": ...}: how commands on this machine find it


def default_data_dir() -> Path:
    """`ASK_USER_GATEWAY_DATA`, else the platform's user data directory (e.g.
    ~/.local/share/ask-user on Linux)."""
    if value := os.environ.get(DATA_DIR_ENV):
        return Path(value)
    import platformdirs

    return platformdirs.user_data_path("ask-user", appauthor=False)
