"""How a command finds a gateway: the environment variables that name one, and what a gateway
on this machine keeps in its data directory (`tokens.json`, and `gateway.json` with the
address it listens on). The gateway writes those files; the agent tools, `pair`, the app and
the channels read them, all through `read_local_gateway`. Each process reads its environment
in its settings: here are only the variables' names."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class LocalGateway:
    """What a gateway on this machine wrote in its data folder: where it listens, where the web
    app that embeds it is served, and its tokens by role."""

    local_url: str | None = None
    web_app_url: str | None = None
    tokens: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def token(self, role: str) -> str | None:
        """The first token of a role (`agent`, `device`, `admin`), if it wrote one."""
        found = self.tokens.get(role) or ()
        return found[0] if found else None


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def read_local_gateway(data_dir: Path) -> LocalGateway:
    """The one reader of a local gateway's files, for every process that is not the gateway:
    what is missing, unreadable or wrongly shaped is simply not there (the command then says
    what it lacks: a token, an address), never a traceback. The gateway itself, which owns
    the files, refuses a broken `tokens.json` (gateway/config.py)."""
    info = _json_object(data_dir / LOCAL_INFO_FILE)
    tokens = {
        role: tuple(t for t in listed if isinstance(t, str) and t)
        for role, listed in _json_object(data_dir / TOKENS_FILE).items()
        if isinstance(role, str) and isinstance(listed, list)
    }
    return LocalGateway(_text(info.get("localUrl")), _text(info.get("webAppUrl")), tokens)
