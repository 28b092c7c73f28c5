"""How a command finds a gateway: the environment variables that name one, and what a gateway
on this machine keeps in its data directory (`tokens.json`, and `gateway.json` with the
address it listens on). The gateway writes those files; the agent tools, `pair`, the app and
the channels read them. Names only: each process reads its environment in its settings."""

from __future__ import annotations

from pathlib import Path

GATEWAY_URL_ENV = "ASK_USER_GATEWAY_URL"
AGENT_TOKEN_ENV = "ASK_USER_AGENT_TOKEN"
DEVICE_TOKEN_ENV = "ASK_USER_DEVICE_TOKEN"
DATA_DIR_ENV = "ASK_USER_GATEWAY_DATA"
SESSION_KEY_ENV = "ASK_USER_SESSION_KEY"  # the conversation an agent's tools ask for
TOKENS_FILE = "tokens.json"
LOCAL_INFO_FILE = "gateway.json"  # {"localUrl": ...}: how commands on this machine find it


def gateway_data_dir(named: str | Path | None = None) -> Path:
    """A gateway's folder: the one named (`--data-dir`, or `ASK_USER_GATEWAY_DATA` as each
    process's settings read it), else the platform's user data directory (e.g.
    ~/.local/share/ask-user on Linux)."""
    if named:
        return Path(named)
    import platformdirs

    return platformdirs.user_data_path("ask-user", appauthor=False)
