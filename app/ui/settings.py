"""Settings (gateway URL, device token, device name, language), "Connect an agent" with copy
buttons, and the confirmation before clearing the history."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import flet as ft

from app.device.preferences import WEB_LAYOUTS
from app.protocol import parse_link
from app.protocol.strings import LANGUAGES, Strings

from .screen import Screen
from .state import ScreenState, SettingsDraft
from .theme import TAP
from .typed_field import TypedField


@ft.component
def CopyLine(label: str, value: str, strings: Strings) -> ft.Control:
    async def copy(_: ft.Event[Any]) -> None:
        await ft.Clipboard().set(value)

    return ft.Row(
        [
            ft.Column(
                [
                    ft.Text(label, size=12, color=ft.Colors.ON_SURFACE_VARIANT),
                    ft.Text(strings.code(value), size=14),  # a path or URL, even in Persian
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
def ConnectAgent(state: ScreenState, strings: Strings) -> ft.Control:
    """Where an agent points: this device's gateway, and where its agent token is kept."""
    options = state.options
    url = options.agent_url or state.gateway_url
    lines: list[ft.Control] = [
        ft.Text(strings("connect_agent"), size=16, weight=ft.FontWeight.W_600),
        ft.Text(strings("agent_env"), size=13, color=ft.Colors.ON_SURFACE_VARIANT),
    ]
    if url:
        lines.append(CopyLine(strings("agent_url"), url, strings))
    if options.agent_token_file:
        lines.append(CopyLine(strings("agent_token_file"), options.agent_token_file, strings))
    if notice := options.current_notice:  # something to know, not an error
        lines.append(ft.Text(notice, size=13, color=ft.Colors.ON_SURFACE_VARIANT))
    return ft.Column(lines, spacing=6, tight=True)


@ft.component
def PairStatus(state: ScreenState, strings: Strings) -> ft.Control:
    """ "Pairing…" while it runs; why it failed, in words a person can act on."""
    return ft.Text(
        strings("pairing") if state.pair_busy else state.pair_error,
        color=ft.Colors.ON_SURFACE_VARIANT if state.pair_busy else ft.Colors.ERROR,
        size=13,
        visible=state.pair_busy or bool(state.pair_error),
    )


@ft.component
def PairForm(screen: Screen, state: ScreenState, strings: Strings) -> ft.Control:
    """Pair by pasting the link from `python -m app pair`, or typing its address and code."""
    link, set_link = ft.use_state("")
    code, set_code = ft.use_state("")

    async def pair(_: ft.Event[Any] | None = None) -> None:
        await screen.dialogs.pair(link, code)

    pasted_link = parse_link(link) is not None
    return ft.Column(
        [
            ft.Text(strings("pair_title"), size=16, weight=ft.FontWeight.W_600),
            ft.Text(  # a browser has no camera to scan with
                strings("pair_intro_web" if state.web else "pair_intro"),
                size=13,
                color=ft.Colors.ON_SURFACE_VARIANT,
            ),
            TypedField(
                link,
                set_link,
                label=strings("pair_link_or_url"),
                keyboard_type=ft.KeyboardType.URL,
                on_submit=pair,
            ),
            TypedField(
                code,
                set_code,
                label=strings("pair_code"),
                capitalization=ft.TextCapitalization.CHARACTERS,
                visible=not pasted_link,  # a link carries its code
                on_submit=pair,
            ),
            PairStatus(state, strings),
            ft.Row(
                [
                    ft.FilledButton(
                        strings("pair"), on_click=pair, disabled=state.pair_busy, height=TAP
                    )
                ],
                alignment=ft.MainAxisAlignment.END,
            ),
        ],
        spacing=10,
        tight=True,
    )


def LabelledCheckbox(
    label: str, value: bool, on_change: Callable[[bool], None], visible: bool = True
) -> ft.Control:
    """A checkbox whose label wraps onto as many lines as it needs (a Checkbox's own label
    is cut at the edge of a phone's screen, #44); a tap on the label toggles it too."""
    return ft.ListTile(
        leading=ft.Checkbox(
            value=value,
            on_change=lambda e: on_change(bool(e.control.value)),
            semantics_label=label,
        ),
        title=ft.Text(label),
        toggle_inputs=True,
        content_padding=ft.Padding.only(right=4),
        visible=visible,
    )


def LayoutChoice(draft: SettingsDraft, strings: Strings, visible: bool) -> ft.Control:
    """How a browser shows the questions: by its window's size (the default), stacked cards,
    or the docked stepper; each a row whose label wraps on a phone, as LabelledCheckbox."""
    rows: list[ft.Control] = [
        ft.Text(strings("layout_setting"), size=13, color=ft.Colors.ON_SURFACE_VARIANT)
    ]
    for layout in WEB_LAYOUTS:
        label = strings(f"layout_{layout}")
        rows.append(
            ft.ListTile(
                leading=ft.Radio(value=layout),
                title=ft.Text(label),
                toggle_inputs=True,
                content_padding=ft.Padding.only(right=4),
            )
        )
    return ft.RadioGroup(
        content=ft.Column(rows, spacing=0, tight=True),
        value=draft.layout,
        on_change=lambda e: setattr(draft, "layout", e.control.value or draft.layout),
        visible=visible,
    )


@ft.component
def SettingsForm(screen: Screen, state: ScreenState, strings: Strings) -> ft.Control:
    draft = state.draft

    def field(label: str, value: str, name: str, **kw: Any) -> ft.Control:
        return TypedField(
            value,
            partial(setattr, draft, name),
            label=label,
            on_submit=lambda _: screen.dialogs.save_settings(),
            **kw,
        )

    return ft.Column(
        [
            PairForm(screen, state, strings),
            ft.Divider(),
            ft.Text(strings("manual_token"), size=16, weight=ft.FontWeight.W_600),
            field(
                strings("gateway_url"),
                draft.gateway_url,
                "gateway_url",
                keyboard_type=ft.KeyboardType.URL,
                error=state.settings_error or None,
                error_max_lines=4,  # the whole reason, not "must start with ht…"
            ),
            field(
                strings("device_token"),
                draft.token,
                "token",
                password=True,
                can_reveal_password=True,
            ),
            field(strings("device_name"), draft.device_name, "device_name"),
            ft.Semantics(
                label=strings("language"),
                content=ft.Dropdown(
                    label=strings("language"),
                    value=draft.language,
                    options=[ft.dropdown.Option(key=k, text=v) for k, v in LANGUAGES.items()],
                    on_select=lambda e: setattr(
                        draft, "language", e.control.value or draft.language
                    ),
                ),
            ),
            LabelledCheckbox(
                strings("one_tap"),
                draft.one_tap,
                lambda on: setattr(draft, "one_tap", on),
            ),
            LayoutChoice(draft, strings, visible=state.web),  # the apps always stack them
            ft.Text(
                strings("web_one_device"),
                size=13,
                color=ft.Colors.ON_SURFACE_VARIANT,
                visible=state.web,  # a browser's page is served by one app, one device (#44)
            ),
            ft.Divider(),
            ConnectAgent(state, strings),
        ],
        tight=True,
        spacing=12,
        width=440,
        scroll=ft.ScrollMode.AUTO,
    )


def settings_dialog(screen: Screen, strings: Strings) -> ft.AlertDialog:
    """Save and Cancel are the dialog's actions: in sight at any height, under the form that
    scrolls (at 375×667 they sat mid-scroll, under the scrollbar)."""
    return ft.AlertDialog(
        rtl=strings.rtl,
        title=ft.Text(strings("settings")),
        content=SettingsForm(screen, screen.state, strings),
        actions=[
            ft.TextButton(
                strings("cancel"), on_click=lambda _: screen.dialogs.open(None), height=TAP
            ),
            ft.FilledButton(
                strings("save"), on_click=lambda _: screen.dialogs.save_settings(), height=TAP
            ),
        ],
        on_dismiss=lambda _: screen.dialogs.open(None),
    )


def pair_dialog(screen: Screen, strings: Strings) -> ft.AlertDialog:
    """A pairing link was opened: say where it leads before this app trusts that gateway."""
    state = screen.state
    offer = state.pair_offer
    url = offer.gateway_url if offer else ""
    current = state.gateway_url
    lines: list[ft.Control] = [ft.Text(strings("pair_confirm", url=url))]
    if current and current.rstrip("/") != url:
        lines.append(ft.Text(strings("pair_replaces", url=current), size=13))
    lines.append(PairStatus(state, strings))

    async def pair(_: ft.Event[Any]) -> None:
        if offer is not None:
            await screen.dialogs.pair(url, offer.code)

    return ft.AlertDialog(
        rtl=strings.rtl,
        title=ft.Text(strings("pair_title")),
        content=ft.Column(lines, tight=True, spacing=10, width=400),
        actions=[
            ft.TextButton(
                strings("cancel"), on_click=lambda _: screen.dialogs.open(None), height=TAP
            ),
            ft.FilledButton(strings("pair"), on_click=pair, disabled=state.pair_busy, height=TAP),
        ],
        on_dismiss=lambda _: screen.dialogs.open(None),
    )


def clear_history_dialog(screen: Screen, strings: Strings) -> ft.AlertDialog:
    return ft.AlertDialog(
        rtl=strings.rtl,
        title=ft.Text(strings("clear_history")),
        content=ft.Text(strings("clear_history_confirm")),
        actions=[
            ft.TextButton(
                strings("cancel"), on_click=lambda _: screen.dialogs.open(None), height=TAP
            ),
            ft.FilledButton(
                strings("clear"), on_click=lambda _: screen.clear_history(), height=TAP
            ),
        ],
        on_dismiss=lambda _: screen.dialogs.open(None),
    )
