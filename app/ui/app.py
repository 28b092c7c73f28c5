"""The app's one screen: connection banner, session picker, timeline, settings.

It renders the device core's state and turns taps into the core's intents; it never talks
to the network itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import flet as ft

from app.device import Connection, DeviceCore, Settings
from app.protocol import ProtocolError

from . import theme
from .card import PromptCard
from .strings import LANGUAGES, Strings
from .timeline import Timeline

ALL_SESSIONS = "__all__"
PAGE_SIZE = 100


@dataclass
class AppOptions:
    """How the app was started: what to tell a person about pointing an agent at it."""

    agent_hint: str | None = None


class AskUserApp:
    def __init__(self, page: ft.Page, core: DeviceCore, options: AppOptions | None = None) -> None:
        self.page = page
        self.core = core
        self.options = options or AppOptions()
        self.session = ALL_SESSIONS
        self.active_card: PromptCard | None = None
        self._refresh_scheduled = False
        self._unsubscribe = core.subscribe(self.schedule_refresh)
        self.build()

    # ---- building ----------------------------------------------------------------------

    def build(self) -> None:
        """(Re)build the screen; the language is read here, once, not on every refresh."""
        self.strings = Strings(self.core.store.get_meta("language") or "en")
        s = self.strings
        page = self.page
        page.title = s("app_title")
        theme.apply(page)
        page.padding = 0
        page.on_keyboard_event = self.on_key
        self.timeline = Timeline(s, self.submit, self.dismiss, self.set_active)
        self.banner_icon = ft.Icon(ft.Icons.CLOUD_DONE, size=18)
        self.banner_text = ft.Text("", size=13, expand=True)
        self.banner = ft.Container(
            ft.Row([self.banner_icon, self.banner_text], spacing=8),
            padding=ft.Padding.symmetric(horizontal=16, vertical=8),
            rtl=s.rtl,
        )
        self.sessions = ft.Dropdown(
            label=s("session"),
            value=ALL_SESSIONS,
            on_select=self.on_session,
            width=260,
        )
        # Wrapped so screen readers (and browser tests) find it by name: Flet's Dropdown
        # exposes an unnamed button otherwise. Shown only when there are several sessions.
        self.session_picker = ft.Semantics(label=s("session"), content=self.sessions, visible=False)
        self.hint = ft.Text(
            self.options.agent_hint or "",
            size=12,
            selectable=True,
            color=ft.Colors.ON_SURFACE_VARIANT,
            visible=bool(self.options.agent_hint),
        )
        # The UI language sets the direction of the app's own chrome only (app bar, banner,
        # dialogs, each card's status and buttons). Not the page's: a question keeps its own
        # direction, so an English question reads left to right in the Persian UI and a Persian
        # one right to left in the English UI (Flet cannot say "left to right" below a
        # right-to-left parent, only the reverse).
        page.appbar = ft.AppBar(
            rtl=s.rtl,
            title=ft.Text(s("app_title")),
            actions=[
                self._icon_button(
                    ft.Icons.DELETE_SWEEP_OUTLINED, s("clear_history"), self.ask_clear_history
                ),
                self._icon_button(ft.Icons.SETTINGS_OUTLINED, s("settings"), self.open_settings),
            ],
        )
        page.controls.clear()
        page.add(
            ft.Column(
                [
                    self.banner,
                    ft.Container(
                        ft.Column([self.session_picker, self.hint], spacing=4, tight=True),
                        padding=ft.Padding.symmetric(horizontal=16),
                        rtl=s.rtl,
                    ),
                    self.timeline.view,
                ],
                expand=True,
                spacing=0,
            )
        )
        self.refresh()

    @staticmethod
    def _icon_button(icon: ft.IconData, label: str, on_click) -> ft.Control:
        """A 48×48 icon button, named for screen readers by its icon's label."""
        return ft.IconButton(
            ft.Icon(icon, semantics_label=label),
            tooltip=label,
            on_click=on_click,
            width=theme.TAP,
            height=theme.TAP,
        )

    # ---- rendering ---------------------------------------------------------------------

    def schedule_refresh(self) -> None:
        """Coalesce the core's change notifications into one refresh on the loop."""
        if self._refresh_scheduled:
            return
        self._refresh_scheduled = True
        asyncio.get_running_loop().call_soon(self._run_refresh)

    def _run_refresh(self) -> None:
        self._refresh_scheduled = False
        self.refresh()
        with contextlib.suppress(Exception):  # the page may be gone (a closed browser tab)
            self.page.update()

    def refresh(self) -> None:
        self._render_connection()
        self._render_sessions()
        session = None if self.session == ALL_SESSIONS else self.session
        self.timeline.render(self.core.timeline(session_key=session, limit=PAGE_SIZE))
        if self.active_card is not None and self.active_card not in self.timeline.open_cards():
            self.active_card = None

    def _render_connection(self) -> None:
        s = self.strings
        state = self.core.connection
        looks = {
            Connection.CONNECTED: (ft.Icons.CLOUD_DONE, ft.Colors.PRIMARY, s("conn_connected")),
            Connection.CONNECTING: (
                ft.Icons.CLOUD_SYNC,
                ft.Colors.ON_SURFACE_VARIANT,
                s("conn_connecting"),
            ),
            Connection.RECONNECTING: (
                ft.Icons.CLOUD_OFF,
                ft.Colors.ERROR,
                s("conn_reconnecting", seconds=state.seconds_to_retry()),
            ),
            Connection.UNAUTHORIZED: (
                ft.Icons.LOCK_OUTLINE,
                ft.Colors.ERROR,
                s("conn_unauthorized"),
            ),
            Connection.UNCONFIGURED: (
                ft.Icons.SETTINGS_OUTLINED,
                ft.Colors.ERROR,
                s("conn_unconfigured"),
            ),
        }
        icon, color, text = looks[state.kind]
        self.banner_icon.icon, self.banner_icon.color = icon, color
        self.banner_text.value = text
        self.banner_text.color = color

    def _render_sessions(self) -> None:
        s = self.strings
        sessions = self.core.store.sessions()
        self.session_picker.visible = len(sessions) > 1
        options = [ft.dropdown.Option(key=ALL_SESSIONS, text=s("all_sessions"))]
        for key, pending in sessions:
            options.append(
                ft.dropdown.Option(key=key, text=f"{key} ({pending})" if pending else key)
            )
        self.sessions.options = options
        if self.session != ALL_SESSIONS and self.session not in {k for k, _ in sessions}:
            self.session = ALL_SESSIONS
        self.sessions.value = self.session

    async def tick_forever(self) -> None:
        """Once a second: countdowns, the retry countdown, cards whose time ran out."""
        while True:
            await asyncio.sleep(1)
            self.refresh()
            with contextlib.suppress(Exception):
                self.page.update()

    # ---- intents -----------------------------------------------------------------------

    def set_active(self, card: PromptCard) -> None:
        self.active_card = card

    def submit(self, prompt_id: str, answers: dict[str, list[str]]) -> None:
        try:
            self.core.answer(prompt_id, answers)
        except ProtocolError as exc:
            card = self.timeline.cards.get(prompt_id)
            if card is not None:
                detail = "; ".join(f.message for f in exc.fields) or exc.message
                card.show_error(self.strings("invalid_answer", detail=detail))
        self.refresh()

    def dismiss(self, prompt_id: str) -> None:
        with contextlib.suppress(ProtocolError):  # already read-only: nothing to dismiss
            self.core.dismiss(prompt_id)
        self.refresh()

    def on_session(self, e: ft.Event) -> None:
        self.session = e.control.value or ALL_SESSIONS
        self.refresh()

    def on_key(self, e: ft.KeyboardEvent) -> None:
        """Desktop: 1–4 choose an option of the focused question, Enter submits, Esc dismisses."""
        cards = self.timeline.open_cards()
        card = self.active_card if self.active_card in cards else (cards[-1] if cards else None)
        if card is None or e.ctrl or e.alt or e.meta:
            return
        if e.key in ("1", "2", "3", "4"):
            if card.active.other.value:  # typing in the Other field: digits are text
                return
            card.active.press_number(int(e.key))
        elif e.key == "Enter":
            card.submit()
        elif e.key == "Escape":
            card.dismiss()
        else:
            return
        self.refresh()
        self.page.update()

    # ---- dialogs -----------------------------------------------------------------------

    def open_settings(self, e: ft.Event | None = None) -> None:
        s = self.strings
        current = self.core.settings
        url = ft.TextField(
            label=s("gateway_url"), value=current.gateway_url, keyboard_type=ft.KeyboardType.URL
        )
        token = ft.TextField(
            label=s("device_token"), value=current.token, password=True, can_reveal_password=True
        )
        name = ft.TextField(label=s("device_name"), value=current.device_name)
        language = ft.Dropdown(
            label=s("language"),
            value=self.strings.language,
            options=[ft.dropdown.Option(key=k, text=v) for k, v in LANGUAGES.items()],
        )

        def save(_: ft.Event) -> None:
            self.core.configure(
                Settings(
                    gateway_url=(url.value or "").strip(),
                    token=(token.value or "").strip(),
                    device_name=(name.value or "").strip(),
                )
            )
            if language.value and language.value != self.strings.language:
                self.core.store.set_meta("language", language.value)
                self.page.pop_dialog()
                self.build()
                self.page.update()
                return
            self.page.pop_dialog()
            self.refresh()

        self.page.show_dialog(
            ft.AlertDialog(
                rtl=s.rtl,
                title=ft.Text(s("settings")),
                content=ft.Column(
                    # Named for screen readers, as the session picker is.
                    [url, token, name, ft.Semantics(label=s("language"), content=language)],
                    tight=True,
                    spacing=12,
                    width=420,
                ),
                actions=[
                    ft.TextButton(
                        s("cancel"), on_click=lambda _: self.page.pop_dialog(), height=theme.TAP
                    ),
                    ft.FilledButton(s("save"), on_click=save, height=theme.TAP),
                ],
            )
        )

    def ask_clear_history(self, e: ft.Event | None = None) -> None:
        s = self.strings

        def clear(_: ft.Event) -> None:
            self.core.clear_history()
            self.page.pop_dialog()
            self.refresh()

        self.page.show_dialog(
            ft.AlertDialog(
                rtl=s.rtl,
                title=ft.Text(s("clear_history")),
                content=ft.Text(s("clear_history_confirm")),
                actions=[
                    ft.TextButton(
                        s("cancel"), on_click=lambda _: self.page.pop_dialog(), height=theme.TAP
                    ),
                    ft.FilledButton(s("clear"), on_click=clear, height=theme.TAP),
                ],
            )
        )

    def close(self) -> None:
        self._unsubscribe()
