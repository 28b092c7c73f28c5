"""The gateway process's settings, read once where the process starts and passed down.

One precedence, for every setting: a command-line flag, then the environment (`ASK_USER_` and
the field's name in capitals: `--database-pool-size` is `ASK_USER_DATABASE_POOL_SIZE`; an empty
variable counts as unset), then files (tokens.json, when no token variable is set), then the
default written here. Nothing else in the gateway reads the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.protocol import limits
from app.protocol.local_gateway import DATA_DIR_ENV

from .store.postgres_settings import PostgresSettings

ENV_PREFIX = "ASK_USER_"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_POSTGRES = PostgresSettings()


class GatewaySettings(BaseSettings):
    """What a gateway process may be told; `GatewayConfig` is what it runs with, once the
    data directory, the tokens and the public address are known."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        extra="forbid",
        frozen=True,
        populate_by_name=True,  # a flag sets `data_dir` by its name, the environment by alias
    )

    host: str = DEFAULT_HOST
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    # None: the user data directory; its variable is the one the agent tools read too.
    data_dir: Path | None = Field(default=None, validation_alias=DATA_DIR_ENV)
    public_url: str | None = None  # the address phones reach, put in pairing links
    # postgresql://…: everything there, shared with other gateway processes; None: SQLite.
    database_url: str | None = None
    database_pool_size: PositiveInt = _POSTGRES.pool_size
    database_connection_wait_ms: PositiveInt = _POSTGRES.connection_wait_ms
    database_lock_timeout_ms: PositiveInt = _POSTGRES.lock_timeout_ms
    database_statement_timeout_ms: PositiveInt = _POSTGRES.statement_timeout_ms
    engaged_grace: NonNegativeInt = limits.ENGAGED_GRACE_SECONDS  # 0 moves no deadline
    prompt_retention_days: PositiveFloat = limits.PROMPT_RETENTION_DAYS
    event_retention_hours: PositiveFloat = limits.EVENT_RETENTION_HOURS
    notify: str = ""  # Apprise URLs told of every new prompt, separated by spaces
    # Tokens, separated by commas; none set: tokens.json in the data directory.
    agent_tokens: str = ""
    device_tokens: str = ""
    admin_tokens: str = ""
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @property
    def notify_urls(self) -> tuple[str, ...]:
        return tuple(self.notify.split())

    @property
    def postgres(self) -> PostgresSettings:
        return PostgresSettings(
            pool_size=self.database_pool_size,
            connection_wait_ms=self.database_connection_wait_ms,
            lock_timeout_ms=self.database_lock_timeout_ms,
            statement_timeout_ms=self.database_statement_timeout_ms,
        )

    def named_tokens(self) -> dict[str, tuple[str, ...]]:
        """The tokens of each role given in the settings (empty: none given)."""
        return {
            role: tuple(t.strip() for t in value.split(",") if t.strip())
            for role, value in (
                ("agent", self.agent_tokens),
                ("device", self.device_tokens),
                ("admin", self.admin_tokens),
            )
        }


def env_name(field: str) -> str:
    """The environment variable of a setting, for messages and help."""
    alias = GatewaySettings.model_fields[field].validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + field.upper()


def describe(error: ValidationError) -> str:
    """Which setting is wrong and why, naming both the flag and the variable."""
    by_alias = {info.validation_alias: name for name, info in GatewaySettings.model_fields.items()}
    lines = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else "?"
        field = by_alias.get(field, field)
        if field not in GatewaySettings.model_fields:  # e.g. a flag the model does not know
            lines.append(f"{field}: {item['msg']}")
            continue
        flag = "--" + field.replace("_", "-")
        lines.append(f"{flag} / {env_name(field)}: {item['msg']} (got {item.get('input')!r})")
    return "; ".join(lines)
