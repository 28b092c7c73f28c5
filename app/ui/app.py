"""The app's one screen: app bar, connection line, session filter, timeline, dialogs."""

from __future__ import annotations

import flet as ft

from app.protocol.strings import Strings

from .chrome import ConnectionBanner, FilterChip, Notice, app_bar
from .screen import Screen
from .settings import clear_history_dialog, pair_dialog, settings_dialog
from .state import ScreenState
from .stepper import StepperPanel
from .timeline import Timeline


def window_title(strings: Strings, waiting: int) -> str:
    """ "(2) Ask User": a browser tab or a window in the task bar says a question waits."""
    name = strings("app_title")
    return f"({strings.digits(waiting)}) {name}" if waiting else name


def _show_count_in_title(strings: Strings, waiting: int) -> None:
    page = ft.context.page
    page.title = window_title(strings, waiting)
    page.update()


@ft.component
def App(screen: Screen, state: ScreenState) -> ft.View:
    strings = Strings(state.language)
    dialogs = {"settings": settings_dialog, "clear": clear_history_dialog, "pair": pair_dialog}
    make = dialogs.get(state.dialog or "")
    ft.use_dialog(make(screen, strings) if make else None)
    waiting = len(state.waiting)
    ft.use_effect(lambda: _show_count_in_title(strings, waiting), [waiting, state.language])
    return ft.View(
        route="/",
        appbar=app_bar(state, screen, strings),
        controls=[
            ConnectionBanner(state.connection, strings, state.gateway_url, screen.clock),
            Notice(state.notice, screen, strings),
            FilterChip(state, screen, strings),
            Timeline(screen, state, strings),
            StepperPanel(screen, state, strings),
        ],
        padding=0,
        spacing=0,
    )
