"""The Flet `main(page)`: one device core per process, one screen per page (window or tab)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from pathlib import Path

import flet as ft

from app.device import DeviceCore, DeviceEnvironment, LocalStore, Settings
from app.device.environment import STORE_FILE
from app.protocol.strings import Strings

from . import theme
from .alerts import start_system_alerts
from .app import App
from .screen import Screen
from .state import AppOptions

_HERE = Path(__file__).resolve().parent
# The project's assets/ beside app/ when run from a checkout; inside the app in a build.
ASSETS_DIR = next(
    (p for p in (_HERE.parent.parent / "assets", _HERE.parent / "assets") if p.is_dir()),
    _HERE.parent.parent / "assets",
)

_core: DeviceCore | None = None
_environment = DeviceEnvironment()  # read once, with the core
_options = AppOptions()


def set_launch_options(options: AppOptions) -> None:
    """What `python -m app` knows about this launch (e.g. the embedded gateway's address)."""
    global _options
    _options = options


def shared_core() -> DeviceCore:
    """The process's device core, started on the running loop the first time it is needed."""
    global _core, _environment
    if _core is None:
        _environment = DeviceEnvironment.read()  # a built app starts here, not in launch.py
        _core = DeviceCore(LocalStore(_environment.data_dir() / STORE_FILE))
        named = Settings.from_environment(_core.settings, _environment)
        if named is not None and named != _core.settings:
            _core.configure(named)
        _core.start()
    return _core


async def _call(fn: Callable[[], None]) -> None:
    fn()


def _scheduler(page: ft.Page) -> Callable[[Callable[[], None]], None]:
    """Run `fn` on this page's loop, as this page. A core change reaches every open tab from
    whichever tab made it, and `page.run_task` sets the page of the context it is called in:
    called bare, it left the calling tab rendering as another, so the calling tab's dialog
    was closed on the other page and stayed open on its own, its Cancel dead (#25). A copy
    of the context keeps that to the task. A tab gone with its loop gets nothing."""

    def schedule(fn: Callable[[], None]) -> None:
        with contextlib.suppress(Exception):  # the session or its loop is gone: nothing to do
            if page.session.connection.loop.is_closed():
                return
            contextvars.copy_context().run(page.run_task, _call, fn)

    return schedule


async def _tick_forever(screen: Screen) -> None:
    """The screen's clock: once a second, countdowns move (the store is not read)."""
    while True:
        await asyncio.sleep(1)
        screen.tick()


async def main(page: ft.Page) -> None:
    core = shared_core()
    screen = Screen(core, _options, schedule=_scheduler(page), web=page.web)
    page.title = Strings(screen.state.language)("app_title")
    page.padding = 0
    theme.apply(page)
    screen.set_size(page.width, page.height)
    page.on_resize = lambda e: screen.set_size(e.width, e.height)
    page.on_keyboard_event = lambda e: (
        screen.undo_last()
        if (e.ctrl or e.meta) and e.key.upper() == "Z"
        else screen.key(e.key, e.ctrl or e.alt or e.meta)
    )
    page.render_views(App, screen, screen.state)
    # A link the app was opened by (askuser://… in a built app, the page route on the web),
    # now and while it runs.
    screen.dialogs.open_link(page.route)
    page.on_route_change = lambda e: screen.dialogs.open_link(e.route)
    start_system_alerts(page, screen, _environment.built_app)
    ticker = page.run_task(_tick_forever, screen)

    def closed(_: object) -> None:
        ticker.cancel()
        with contextlib.suppress(Exception):
            screen.close()

    page.on_close = closed
