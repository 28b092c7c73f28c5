"""The timeline: what is waiting first (newest on top, so a question that just arrived is the
first thing on screen), then the history of summaries, newest first. On a wide screen it is a
centred column."""

from __future__ import annotations

import asyncio

import flet as ft

from app.protocol.strings import Strings

from .card import PromptCard, UndoRow
from .screen import Screen, one_tap_answer
from .state import ScreenState, scroll_key
from .summary import SummaryTile

MAX_WIDTH = 840  # the column's widest, on desktops
EDGE = 12  # the margin at the sides on phones


def side_padding(width: float) -> float:
    return max(EDGE, (width - MAX_WIDTH) / 2) if width else EDGE


@ft.component
def EmptyTimeline(strings: Strings, waiting: bool) -> ft.Control:
    """Nothing yet; or, while the stepper under it holds a question, where its answer goes."""
    return ft.Container(
        ft.Text(
            strings("empty_history" if waiting else "empty"),
            text_align=ft.TextAlign.CENTER,
            color=ft.Colors.ON_SURFACE_VARIANT,
        ),
        # Above the docked stepper a phone of 568 px keeps about 80 px of timeline: the hint's
        # two lines fit there only with little room above and below.
        padding=ft.Padding.symmetric(horizontal=32, vertical=12 if waiting else 32),
        alignment=ft.Alignment.CENTER,
        rtl=strings.rtl,
    )


LINK_SCROLL_DELAYS = (0.3, 1.0)  # seconds before each scroll to a linked card


@ft.component
def Timeline(screen: Screen, state: ScreenState, strings: Strings) -> ft.Control:
    scroller: ft.Ref[ft.Column] = ft.use_memo(ft.Ref, [])

    async def show_top() -> None:
        if scroller.current is not None:
            await scroller.current.scroll_to(offset=0, duration=250)

    async def show_linked() -> None:
        if scroller.current is None or not state.linked or not state.linked_request:
            return
        # The card may have arrived in this very update; the client finds a key only once it
        # has built the card, so give it a frame or two first, and again later for a slow
        # client (a busy phone) whose layout was not done the first time.
        for delay in LINK_SCROLL_DELAYS:
            await asyncio.sleep(delay)
            if scroller.current is None or not state.linked:
                return
            await scroller.current.scroll_to(scroll_key=scroll_key(state.linked), duration=250)

    # A question that arrives is put on top; bring the top into view.
    ft.use_effect(show_top, [state.scroll_to_top])
    # A link opened one prompt: bring it into view.
    ft.use_effect(show_linked, [state.linked_request])

    items: list[ft.Control] = []
    # In the browser's stepper the waiting prompts are in the panel under the timeline.
    for item in [] if state.stepper else state.waiting:
        if item.id in state.undo:
            answered = one_tap_answer(state, item.id)
            items.append(
                UndoRow(
                    item.id, state.undo[item.id], screen, strings, answered, key=f"undo-{item.id}"
                )  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
            )
        else:
            items.append(
                PromptCard(  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                    item,
                    state.selections[item.id],
                    state.errors.get(item.id),
                    screen,
                    strings,
                    linked=item.id == state.linked,
                    key=item.id,
                )
            )
    items += [
        SummaryTile(item, strings, linked=item.id == state.linked, key=f"summary-{item.id}")  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
        for item in state.history
    ]
    if not items and state.loaded:
        items = [EmptyTimeline(strings, bool(state.waiting), key="empty")]  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
    side = side_padding(state.width)
    return ft.Column(
        [
            ft.Container(
                ft.Column(items, spacing=12, horizontal_alignment=ft.CrossAxisAlignment.STRETCH),
                padding=ft.Padding.only(left=side, right=side, top=12, bottom=24),
            )
        ],
        ref=scroller,
        scroll=ft.ScrollMode.AUTO,
        expand=True,
        horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
    )
