"""The Flet `main(page)`: one device core per process, one screen per page (window or tab)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import flet as ft

from app.device import DeviceCore, LocalStore, Settings, app_data_dir
from app.device.paths import STORE_FILE

from .app import AppOptions, AskUserApp

_HERE = Path(__file__).resolve().parent
# The project's assets/ beside app/ when run from a checkout; inside the app in a build.
ASSETS_DIR = next(
    (p for p in (_HERE.parent.parent / "assets", _HERE.parent / "assets") if p.is_dir()),
    _HERE.parent.parent / "assets",
)

_core: DeviceCore | None = None
_options = AppOptions()


def set_launch_options(options: AppOptions) -> None:
    """What `python -m app` knows about this launch (e.g. the embedded gateway's address)."""
    global _options
    _options = options


def shared_core() -> DeviceCore:
    """The process's device core, started on the running loop the first time it is needed."""
    global _core
    if _core is None:
        data_dir = app_data_dir()
        _core = DeviceCore(LocalStore(data_dir / STORE_FILE))
        env_url, env_token = (
            os.environ.get("ASK_USER_GATEWAY_URL"),
            os.environ.get("ASK_USER_DEVICE_TOKEN"),
        )
        if env_url and env_token and not _core.settings.configured:
            _core.configure(
                Settings(
                    gateway_url=env_url, token=env_token, device_name=_core.settings.device_name
                )
            )
        _core.start()
    return _core


async def main(page: ft.Page) -> None:
    screen = AskUserApp(page, shared_core(), _options)
    page.update()
    ticker = asyncio.create_task(screen.tick_forever())

    def closed(_: object) -> None:
        ticker.cancel()
        screen.close()

    page.on_close = closed
