"""The app's one screen: app bar, connection line, session filter, timeline, dialogs."""

from __future__ import annotations

import flet as ft

from .chrome import ConnectionBanner, FilterChip, app_bar
from .screen import Screen
from .settings import clear_history_dialog, settings_dialog
from .state import ClockContext, ScreenState
from .strings import Strings
from .timeline import Timeline


@ft.component
def App(screen: Screen, state: ScreenState) -> ft.View:
    strings = Strings(state.language)
    dialogs = {"settings": settings_dialog, "clear": clear_history_dialog}
    make = dialogs.get(state.dialog or "")
    ft.use_dialog(make(screen, strings) if make else None)
    return ClockContext(
        screen.clock,
        lambda: ft.View(
            route="/",
            appbar=app_bar(state, screen, strings),
            controls=[
                ConnectionBanner(state.connection, strings),
                FilterChip(state, screen, strings),
                Timeline(screen, state, strings),
            ],
            padding=0,
            spacing=0,
        ),
    )
