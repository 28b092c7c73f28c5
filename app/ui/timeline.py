"""The timeline: pending prompts as cards and resolved ones as summaries, oldest at the top,
newest at the bottom like a chat. Cards are kept across refreshes so a half-filled card
keeps what the person chose."""

from __future__ import annotations

from collections.abc import Callable

import flet as ft

from app.device import TimelineItem

from .card import DismissHandler, PromptCard, SubmitHandler
from .strings import Strings
from .summary import SummaryTile


class Timeline:
    def __init__(
        self,
        strings: Strings,
        on_submit: SubmitHandler,
        on_dismiss: DismissHandler,
        on_activate: Callable[[PromptCard], None] | None = None,
    ) -> None:
        self.strings = strings
        self.on_submit = on_submit
        self.on_dismiss = on_dismiss
        self.on_activate = on_activate
        self.cards: dict[str, PromptCard] = {}
        self.summaries: dict[str, tuple[str, int, SummaryTile]] = {}
        self.empty = ft.Container(
            ft.Text(
                strings("empty"), text_align=ft.TextAlign.CENTER, color=ft.Colors.ON_SURFACE_VARIANT
            ),
            padding=32,
            alignment=ft.Alignment.CENTER,
            rtl=strings.rtl,
        )
        self.view = ft.ListView(
            controls=[self.empty],
            spacing=12,
            expand=True,
            auto_scroll=True,
            padding=ft.Padding.symmetric(horizontal=12, vertical=12),
        )

    def open_cards(self) -> list[PromptCard]:
        return list(self.cards.values())

    def render(self, items: list[TimelineItem]) -> bool:
        """Show `items` (oldest first); True when the list of controls changed."""
        controls: list[ft.Control] = []
        live_cards: dict[str, PromptCard] = {}
        live_summaries: dict[str, tuple[str, int, SummaryTile]] = {}
        for item in items:
            if item.is_open:
                card = self.cards.get(item.id) or PromptCard(
                    item, self.strings, self.on_submit, self.on_dismiss, self.on_activate
                )
                card.tick(item)
                live_cards[item.id] = card
                controls.append(card.view)
            else:
                stamp = (item.status.value, item.record.version)
                known = self.summaries.get(item.id)
                tile = known[2] if known and known[:2] == stamp else SummaryTile(item, self.strings)
                live_summaries[item.id] = (*stamp, tile)
                controls.append(tile.view)
        self.cards, self.summaries = live_cards, live_summaries
        controls = controls or [self.empty]
        if [id(c) for c in controls] == [id(c) for c in self.view.controls]:
            return False
        self.view.controls = controls
        return True
