"""Settings (gateway URL, device token, device name, language), "Connect an agent" with copy
buttons, and the confirmation before clearing the history."""

from __future__ import annotations

import flet as ft

from .screen import Screen
from .strings import LANGUAGES, Strings
from .theme import TAP


@ft.component
def CopyLine(label: str, value: str, strings: Strings) -> ft.Control:
    async def copy(_: ft.Event) -> None:
        await ft.Clipboard().set(value)

    return ft.Row(
        [
            ft.Column(
                [
                    ft.Text(label, size=12, color=ft.Colors.ON_SURFACE_VARIANT),
                    ft.Text(value, size=14),
                ],
                spacing=0,
                expand=True,
                tight=True,
            ),
            ft.IconButton(
                ft.Icon(ft.Icons.COPY, semantics_label=f"{strings('copy')}: {label}"),
                tooltip=strings("copy"),
                on_click=copy,
                width=TAP,
                height=TAP,
            ),
        ],
        vertical_alignment=ft.CrossAxisAlignment.CENTER,
    )


@ft.component
def ConnectAgent(screen: Screen, strings: Strings) -> ft.Control:
    """Where an agent points: this device's gateway, and where its agent token is kept."""
    options = screen.options
    url = options.agent_url or screen.core.settings.gateway_url
    lines: list[ft.Control] = [
        ft.Text(strings("connect_agent"), size=16, weight=ft.FontWeight.W_600),
        ft.Text(strings("agent_env"), size=13, color=ft.Colors.ON_SURFACE_VARIANT),
    ]
    if url:
        lines.append(CopyLine(strings("agent_url"), url, strings))
    if options.agent_token_file:
        lines.append(CopyLine(strings("agent_token_file"), options.agent_token_file, strings))
    if options.notice:
        lines.append(ft.Text(options.notice, size=13, color=ft.Colors.ERROR))
    return ft.Column(lines, spacing=6, tight=True)


@ft.component
def SettingsForm(screen: Screen, strings: Strings) -> ft.Control:
    current = screen.core.settings
    url, set_url = ft.use_state(current.gateway_url)
    token, set_token = ft.use_state(current.token)
    name, set_name = ft.use_state(current.device_name)
    language, set_language = ft.use_state(strings.language)

    def field(label: str, value: str, setter, **kw) -> ft.TextField:
        return ft.TextField(
            label=label,
            value=value,
            on_change=lambda e: setter(e.control.value or ""),
            on_submit=lambda _: screen.save_settings(url, token, name, language),
            **kw,
        )

    return ft.Column(
        [
            field(strings("gateway_url"), url, set_url, keyboard_type=ft.KeyboardType.URL),
            field(
                strings("device_token"), token, set_token, password=True, can_reveal_password=True
            ),
            field(strings("device_name"), name, set_name),
            ft.Semantics(
                label=strings("language"),
                content=ft.Dropdown(
                    label=strings("language"),
                    value=language,
                    options=[ft.dropdown.Option(key=k, text=v) for k, v in LANGUAGES.items()],
                    on_select=lambda e: set_language(e.control.value or language),
                ),
            ),
            ft.Row(
                [
                    ft.TextButton(
                        strings("cancel"), on_click=lambda _: screen.open_dialog(None), height=TAP
                    ),
                    ft.FilledButton(
                        strings("save"),
                        on_click=lambda _: screen.save_settings(url, token, name, language),
                        height=TAP,
                    ),
                ],
                alignment=ft.MainAxisAlignment.END,
            ),
            ft.Divider(),
            ConnectAgent(screen, strings),
        ],
        tight=True,
        spacing=12,
        width=440,
        scroll=ft.ScrollMode.AUTO,
    )


def settings_dialog(screen: Screen, strings: Strings) -> ft.AlertDialog:
    return ft.AlertDialog(
        rtl=strings.rtl,
        title=ft.Text(strings("settings")),
        content=SettingsForm(screen, strings),
        on_dismiss=lambda _: screen.open_dialog(None),
    )


def clear_history_dialog(screen: Screen, strings: Strings) -> ft.AlertDialog:
    return ft.AlertDialog(
        rtl=strings.rtl,
        title=ft.Text(strings("clear_history")),
        content=ft.Text(strings("clear_history_confirm")),
        actions=[
            ft.TextButton(
                strings("cancel"), on_click=lambda _: screen.open_dialog(None), height=TAP
            ),
            ft.FilledButton(
                strings("clear"), on_click=lambda _: screen.clear_history(), height=TAP
            ),
        ],
        on_dismiss=lambda _: screen.open_dialog(None),
    )
