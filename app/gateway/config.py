"""Gateway settings and tokens: from flags and the environment, or made once and kept 0600."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.protocol import limits

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
AGENT_TOKENS_ENV = "ASK_USER_AGENT_TOKENS"
DEVICE_TOKENS_ENV = "ASK_USER_DEVICE_TOKENS"
TOKENS_FILE = "tokens.json"
DB_FILE = "gateway.sqlite3"


DATA_DIR_ENV = "ASK_USER_GATEWAY_DATA"


def default_data_dir() -> Path:
    """`ASK_USER_GATEWAY_DATA`, else the platform's user data directory (e.g.
    ~/.local/share/ask-user on Linux)."""
    if value := os.environ.get(DATA_DIR_ENV):
        return Path(value)
    import platformdirs

    return platformdirs.user_data_path("ask-user", appauthor=False)


@dataclass(frozen=True)
class Tokens:
    agent: tuple[str, ...]
    device: tuple[str, ...]
    file: Path | None = None  # where they are kept, when the gateway made them


@dataclass(frozen=True)
class GatewayConfig:
    data_dir: Path
    tokens: Tokens
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    prompt_retention_days: float = limits.PROMPT_RETENTION_DAYS
    event_retention_hours: float = limits.EVENT_RETENTION_HOURS
    synchronous: str = "NORMAL"

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (value or "").split(",") if t.strip())


def load_tokens(data_dir: Path, env: Mapping[str, str] | None = None) -> Tokens:
    """Tokens from the environment; with none there, from (or newly into) a 0600 file."""
    env = os.environ if env is None else env
    agent, device = _split(env.get(AGENT_TOKENS_ENV)), _split(env.get(DEVICE_TOKENS_ENV))
    if agent or device:
        return Tokens(agent, device)
    path = data_dir / TOKENS_FILE
    if path.exists():
        data = json.loads(path.read_text())
        return Tokens(tuple(data["agent"]), tuple(data["device"]), path)
    data_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "agent": ["agt_" + secrets.token_urlsafe(24)],
        "device": ["dev_" + secrets.token_urlsafe(24)],
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    return Tokens(tuple(data["agent"]), tuple(data["device"]), path)
