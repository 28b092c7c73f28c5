"""What a gateway process runs with (its data directory, tokens, addresses), resolved from
its settings (settings.py); tokens given there, or made once and kept in a 0600 file."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.privatefiles import write_private
from app.protocol import limits
from app.protocol.local_gateway import (  # re-exported for the gateway's commands
    DATA_DIR_ENV as DATA_DIR_ENV,
)
from app.protocol.local_gateway import (
    LOCAL_INFO_FILE as LOCAL_INFO_FILE,
)
from app.protocol.local_gateway import (
    TOKENS_FILE as TOKENS_FILE,
)
from app.protocol.local_gateway import gateway_data_dir

from .addresses import reachable_url
from .core.auth import Tokens as Tokens
from .settings import DEFAULT_HOST, DEFAULT_PORT, GatewaySettings, env_name
from .store.postgres_settings import PostgresSettings

DB_FILE = "gateway.sqlite3"


class ConfigError(Exception):
    """A setting the gateway cannot start with; the message says which and why."""


@dataclass(frozen=True)
class GatewayConfig:
    data_dir: Path
    tokens: Tokens
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    prompt_retention_days: float = limits.PROMPT_RETENTION_DAYS
    event_retention_hours: float = limits.EVENT_RETENTION_HOURS
    synchronous: str = "NORMAL"
    public_url: str | None = None  # the address phones reach, put in pairing links
    notify_urls: tuple[str, ...] = ()  # Apprise URLs told of every new prompt
    # postgresql://…: keep everything there, shared with other gateway processes (v1.3);
    # None: the SQLite file in data_dir.
    database_url: str | None = None
    postgres: PostgresSettings = field(default_factory=PostgresSettings)
    # The person is answering: how far a deadline may move (v1.4); 0 turns it off.
    engaged_grace_seconds: int = limits.ENGAGED_GRACE_SECONDS

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE


_ROLES = ("agent", "device", "admin")


def _new_token(role: str) -> str:
    return {"agent": "agt_", "device": "dev_", "admin": "adm_"}[role] + secrets.token_urlsafe(24)


def _write_private(path: Path, data: dict[str, Any]) -> None:
    """Write JSON readable by the owner only, replacing the file in one step."""
    write_private(path, json.dumps(data, indent=2))


def _read_tokens_file(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object with agent, device and admin lists")
    roles: dict[str, tuple[str, ...]] = {}
    for role in _ROLES:
        value = data.get(role, [])
        if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
            raise ConfigError(f"{path}: {role!r} must be a list of token strings")
        roles[role] = tuple(value)
    if not roles["agent"]:
        raise ConfigError(
            f"{path}: the 'agent' list is empty, so no agent could ask; add a token "
            "(or delete the file to have a new one made)"
        )
    return roles


def config_from(
    settings: GatewaySettings, data_dir: Path, tokens: Tokens, port: int | None = None
) -> GatewayConfig:
    """The gateway's configuration from its settings: the one mapping, used by `python -m app
    gateway` and by the app's embedded gateway alike, so every documented setting works in
    both (#55). `port`: the caller's choice (the app's `--gateway-port`, 0 for any free one)
    over the setting's."""
    port = settings.port if port is None else port
    public_url = (settings.public_url or "").rstrip("/") or (
        reachable_url(settings.host, port) if port else None
    )
    return GatewayConfig(
        data_dir=data_dir,
        tokens=tokens,
        host=settings.host,
        port=port,
        prompt_retention_days=settings.prompt_retention_days,
        event_retention_hours=settings.event_retention_hours,
        public_url=public_url,
        notify_urls=settings.notify_urls,
        database_url=settings.database_url,
        engaged_grace_seconds=settings.engaged_grace,
        postgres=settings.postgres,
    )


def data_dir_of(settings: GatewaySettings) -> Path:
    """The gateway's folder: the one its settings name, else the platform's."""
    return gateway_data_dir(settings.data_dir).expanduser()


def load_tokens(data_dir: Path, named: Mapping[str, tuple[str, ...]] | None = None) -> Tokens:
    """Tokens given in the settings (`GatewaySettings.named_tokens`); with none there, from
    (or newly into) a 0600 file. A file from before the admin role gets an admin token added."""
    named = named or {}
    if any(named.values()):
        for role, tokens in named.items():
            if short := [t for t in tokens if len(t) < limits.MIN_TOKEN_CHARS]:
                raise ConfigError(
                    f"{env_name(role + '_tokens')}: {len(short)} token(s) shorter than "
                    f"{limits.MIN_TOKEN_CHARS} characters; use long random tokens, e.g. "
                    "python -c 'import secrets; print(secrets.token_urlsafe(24))'"
                )
        return Tokens(named.get("agent", ()), named.get("device", ()), admin=named.get("admin", ()))
    path = data_dir / TOKENS_FILE
    if path.exists():
        roles = _read_tokens_file(path)
        if not roles["admin"]:
            roles["admin"] = (_new_token("admin"),)
            _write_private(path, {role: list(tokens) for role, tokens in roles.items()})
    else:
        data_dir.mkdir(parents=True, exist_ok=True)
        roles = {role: (_new_token(role),) for role in _ROLES}
        _write_private(path, {role: list(tokens) for role, tokens in roles.items()})
    return Tokens(roles["agent"], roles["device"], path, admin=roles["admin"])


def write_local_info(data_dir: Path, local_url: str, web_app_url: str | None = None) -> None:
    """Tell `python -m app pair` (and friends) on this machine where the gateway listens, and
    where the web app that embeds it is served (for a browser's pairing link)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    info = {"localUrl": local_url}
    if web_app_url:
        info["webAppUrl"] = web_app_url
    _write_private(data_dir / LOCAL_INFO_FILE, info)
