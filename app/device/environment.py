"""The one place the app's process reads its environment: `python -m app`, a built or
`flet run` app (app/main.py), and the chat channels, which are devices too. Each entry point
reads it once (`DeviceEnvironment.read()`) and passes it on; nothing else in `app/device`,
`app/ui` or `app/channels` looks at `os.environ`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from app.protocol.local_gateway import (
    AGENT_TOKEN_ENV,
    DATA_DIR_ENV,
    DEVICE_TOKEN_ENV,
    GATEWAY_URL_ENV,
)

APP_DATA_ENV = "ASK_USER_APP_DATA"
FLET_STORAGE_ENV = "FLET_APP_STORAGE_DATA"
STORE_FILE = "device.sqlite3"


@dataclass(frozen=True)
class DeviceEnvironment:
    """The variables, by meaning; None where unset or empty."""

    app_data: str | None = None  # ASK_USER_APP_DATA: where this app keeps its data
    flet_storage: str | None = None  # FLET_APP_STORAGE_DATA: set by `flet build` apps only
    gateway_url: str | None = None  # ASK_USER_GATEWAY_URL: with the device token, it wins
    device_token: str | None = None  # ASK_USER_DEVICE_TOKEN
    agent_token: str | None = None  # ASK_USER_AGENT_TOKEN: shown under Connect an agent
    gateway_data: str | None = None  # ASK_USER_GATEWAY_DATA: the embedded gateway's folder
    display: str | None = None  # DISPLAY: a desktop window can open (Linux)
    wayland_display: str | None = None  # WAYLAND_DISPLAY: likewise
    # A channel's own variables (its bot token, its chats), those it named in `read`.
    own: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(
        cls, env: Mapping[str, str] | None = None, own: Iterable[str] = ()
    ) -> DeviceEnvironment:
        env = os.environ if env is None else env
        known = {
            f.name: env.get(_VARIABLES[f.name]) or None for f in fields(cls) if f.name != "own"
        }
        return cls(**known, own={name: env[name] for name in own if env.get(name)})

    def listed(self, name: str) -> list[str]:
        """A channel's variable that lists ids, separated by commas."""
        return [c.strip() for c in self.own.get(name, "").split(",") if c.strip()]

    @property
    def built_app(self) -> bool:
        """A `flet build` app (it is given a data directory in its variable, FLET-NOTES)."""
        return self.flet_storage is not None

    def data_dir(self) -> Path:
        """`ASK_USER_APP_DATA` if set, else the built app's storage directory, else the
        platform's user data directory."""
        if named := self.app_data or self.flet_storage:
            return Path(named)
        import platformdirs

        return platformdirs.user_data_path("ask-user", appauthor=False) / "app"


_VARIABLES = {
    "app_data": APP_DATA_ENV,
    "flet_storage": FLET_STORAGE_ENV,
    "gateway_url": GATEWAY_URL_ENV,
    "device_token": DEVICE_TOKEN_ENV,
    "agent_token": AGENT_TOKEN_ENV,
    "gateway_data": DATA_DIR_ENV,
    "display": "DISPLAY",
    "wayland_display": "WAYLAND_DISPLAY",
}
