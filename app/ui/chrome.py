"""The app's chrome, kept small on a phone: an app bar with the connection as an icon, a
compact session filter and two actions; a line of text only while not connected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flet as ft

from app.device import Connection, ConnectionState
from app.protocol.asker import session_label
from app.protocol.strings import Strings

from .screen import Screen
from .state import Clock, ScreenState
from .theme import TAP

CONNECTION_LOOKS = {
    Connection.CONNECTED: (ft.Icons.CLOUD_DONE, ft.Colors.PRIMARY, "conn_connected"),
    Connection.CONNECTING: (ft.Icons.CLOUD_SYNC, ft.Colors.ON_SURFACE_VARIANT, "conn_connecting"),
    Connection.RECONNECTING: (ft.Icons.CLOUD_OFF, ft.Colors.ERROR, "conn_reconnecting"),
    Connection.UNAUTHORIZED: (ft.Icons.LOCK_OUTLINE, ft.Colors.ERROR, "conn_unauthorized"),
    Connection.UNCONFIGURED: (ft.Icons.SETTINGS_OUTLINED, ft.Colors.ERROR, "conn_unconfigured"),
}


def connection_text(connection: ConnectionState, strings: Strings, url: str = "") -> str:
    key = CONNECTION_LOOKS[connection.kind][2]
    return strings(key, seconds=connection.seconds_to_retry(), url=url or "?")


def icon_button(icon: ft.IconData, label: str, on_click: Callable[..., Any]) -> ft.Control:
    """A 48×48 icon button, named for screen readers by its icon's label."""
    return ft.IconButton(
        ft.Icon(icon, semantics_label=label),
        tooltip=label,
        on_click=on_click,
        width=TAP,
        height=TAP,
    )


@ft.component
def ConnectionIcon(connection: ConnectionState, strings: Strings, url: str) -> ft.Control:
    icon, color, _ = CONNECTION_LOOKS[connection.kind]
    label = strings("connection", state=connection_text(connection, strings, url))
    return ft.Container(
        # No tooltip: Flet's client drew an error box when a Container's tooltip changed.
        ft.Icon(icon, color=color, size=22, semantics_label=label),
        width=40,
        height=TAP,
        alignment=ft.Alignment.CENTER,
    )


def ConnectionBanner(
    connection: ConnectionState, strings: Strings, url: str, clock: Clock
) -> ft.Control:
    """Words only while not connected; connected, the app bar's icon says it. Only while it
    counts down to the next try does it move with the clock (#43: a tick re-renders nothing
    that did not change)."""
    counting = connection.kind == Connection.RECONNECTING
    return _ConnectionBanner(connection, strings, url, clock if counting else None)


@ft.component
def _ConnectionBanner(
    connection: ConnectionState, strings: Strings, url: str, clock: Clock | None
) -> ft.Control:
    """`clock`, when given, is observed: each tick re-renders the retry countdown."""
    icon, color, _ = CONNECTION_LOOKS[connection.kind]
    # Always the same control, hidden when connected: Flet's client has drawn an error box
    # when a slot changed from one kind of control to another.
    return ft.Container(
        visible=connection.kind != Connection.CONNECTED,
        content=ft.Row(
            [
                ft.Icon(icon, color=color, size=18),
                ft.Text(
                    connection_text(connection, strings, url), size=13, color=color, expand=True
                ),
            ],
            spacing=8,
        ),
        padding=ft.Padding.symmetric(horizontal=16, vertical=6),
        rtl=strings.rtl,
    )


@ft.component
def Notice(text: str, screen: Screen, strings: Strings) -> ft.Control:
    """One line above the timeline (e.g. "Paired with …") until the person closes it."""
    return ft.Container(
        visible=bool(text),
        content=ft.Row(
            [
                ft.Icon(ft.Icons.INFO_OUTLINE, size=18, color=ft.Colors.PRIMARY),
                ft.Text(text, size=13, expand=True),
                ft.IconButton(
                    ft.Icon(ft.Icons.CLOSE, semantics_label=strings("close")),
                    on_click=lambda _: screen.dialogs.close_notice(),
                    width=TAP,
                    height=TAP,
                ),
            ],
            spacing=8,
        ),
        padding=ft.Padding.only(left=16, right=4),
        bgcolor=ft.Colors.SECONDARY_CONTAINER,
        rtl=strings.rtl,
    )


@ft.component
def SessionFilter(state: ScreenState, screen: Screen, strings: Strings) -> ft.Control:
    """A filter icon with a menu of sessions; shown only when there is more than one."""
    items = [
        ft.PopupMenuItem(
            content=strings("all_sessions"),
            checked=state.session is None,
            on_click=lambda _: screen.set_session(None),
        )
    ]
    for key, pending in state.sessions:
        items.append(
            ft.PopupMenuItem(
                content=(
                    f"{session_label(key)} ({strings.digits(pending)})"
                    if pending
                    else session_label(key)
                ),
                checked=state.session == key,
                on_click=lambda _, key=key: screen.set_session(key),
            )
        )
    label = strings("filter")
    icon = ft.Icons.FILTER_ALT if state.session else ft.Icons.FILTER_LIST
    return ft.PopupMenuButton(
        # Its own TAP×TAP box: as an `icon`, a desktop's compact density drew it 40×40.
        content=ft.Container(
            ft.Icon(icon, semantics_label=label),
            width=TAP,
            height=TAP,
            alignment=ft.Alignment.CENTER,
        ),
        tooltip=label,
        items=items,
        visible=len(state.sessions) > 1,
    )


@ft.component
def FilterChip(state: ScreenState, screen: Screen, strings: Strings) -> ft.Control:
    """Which session the timeline shows, with a way back to all of them."""
    return ft.Container(
        visible=state.session is not None,
        content=ft.Row(
            [
                ft.Icon(ft.Icons.FILTER_ALT, size=16, color=ft.Colors.PRIMARY),
                ft.Text(
                    f"{strings('session')}: {session_label(state.session or '')}",
                    size=13,
                    expand=True,
                ),
                ft.TextButton(
                    strings("all_sessions"),
                    on_click=lambda _: screen.set_session(None),
                    height=TAP,
                ),
            ],
            spacing=6,
        ),
        padding=ft.Padding.symmetric(horizontal=16),
        rtl=strings.rtl,
    )


def app_bar(state: ScreenState, screen: Screen, strings: Strings) -> ft.AppBar:
    actions: list[ft.Control] = [ConnectionIcon(state.connection, strings, state.gateway_url)]
    actions.append(SessionFilter(state, screen, strings))
    actions += [
        icon_button(
            ft.Icons.DELETE_SWEEP_OUTLINED,
            strings("clear_history"),
            lambda _: screen.dialogs.open("clear"),
        ),
        icon_button(
            ft.Icons.SETTINGS_OUTLINED,
            strings("settings"),
            lambda _: screen.dialogs.open("settings"),
        ),
    ]
    return ft.AppBar(title=ft.Text(strings("app_title")), actions=actions, rtl=strings.rtl)
