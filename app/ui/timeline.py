"""The timeline: what is waiting first (newest on top, so a question that just arrived is the
first thing on screen), then the history of summaries, newest first. On a wide screen it is a
centred column."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

import flet as ft

from app.device import TimelineItem
from app.protocol.strings import Strings

from .card import PromptCard, UndoRow
from .rules import one_tap_answer
from .screen import Screen
from .state import ScreenState, scroll_key
from .summary import SummaryTile
from .theme import TAP

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


@ft.component
def OlderButton(screen: Screen, strings: Strings, hidden: int) -> ft.Control:
    """Under the summaries drawn: draw older ones (the count is of those already read)."""
    return ft.Container(
        ft.TextButton(
            strings("show_older", count=hidden),
            icon=ft.Icons.EXPAND_MORE,
            on_click=lambda _: screen.show_older(),
            height=TAP,
        ),
        alignment=ft.Alignment.CENTER,
    )


LINK_SCROLL_DELAYS = (0.3, 1.0)  # seconds before each scroll to a linked card


def _reused(
    rows: dict[str, tuple[tuple[Any, ...], ft.Control]],
    key: str,
    args: tuple[Any, ...],
    make: Callable[[], ft.Control],
) -> ft.Control:
    """The row this key had in the last render while it shows the same things, else a new one.

    Flet's diff stops at a child it is handed again (the same object); a new row, even a
    memoized one, costs a comparison of its arguments and a move of its state, and a hundred
    summaries made a question's update 2x slower (#43)."""
    held = rows.get(key)
    if held is not None and all(a is b or a == b for a, b in zip(held[0], args, strict=True)):
        return held[1]
    control = make()
    rows[key] = (args, control)
    return control


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

    rows: dict[str, tuple[tuple[Any, ...], ft.Control]] = ft.use_memo(dict, [])
    used: set[str] = set()

    def row(key: str, args: tuple[Any, ...], make: Callable[[], ft.Control]) -> ft.Control:
        used.add(key)
        return _reused(rows, key, args, make)

    def card(item: TimelineItem, late: bool) -> ft.Control:
        """A waiting prompt's card, or (`late`) an ended one answered anyway."""
        key = f"late-{item.id}" if late else item.id
        answers, error = state.selections[item.id], state.errors.get(item.id)
        linked, drafted = item.id == state.linked, state.drafted.get(item.id)
        return row(
            key,
            (item, answers, error, strings, linked, drafted),
            partial(
                PromptCard,
                item,
                answers,
                error,
                screen,
                strings,
                linked,
                late=late,
                drafted=drafted,
                key=key,
            ),
        )

    items: list[ft.Control] = []
    # In the browser's stepper the waiting prompts are in the panel under the timeline.
    for item in [] if state.stepper else state.waiting:
        if item.id in state.undo:
            answered = one_tap_answer(state, item.id)
            items.append(
                UndoRow(
                    item.id,
                    state.undo[item.id],
                    screen,
                    strings,
                    screen.clock,
                    answered,
                    key=f"undo-{item.id}",
                )
            )
        else:
            items.append(card(item, late=False))
    now = screen.clock.now_ms
    for item in state.history[: state.history_shown]:
        linked = item.id == state.linked
        if item.id in state.answering_late:  # answered anyway: its card again
            items.append(card(item, late=True))
            continue
        offer = item.late_answer_offered(now)
        items.append(
            row(
                f"summary-{item.id}",
                (item, strings, linked, offer),
                partial(  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                    SummaryTile,
                    item,
                    strings,
                    linked,
                    screen.answer_anyway if offer else None,
                    key=f"summary-{item.id}",
                ),
            )
        )
    for gone in rows.keys() - used:
        del rows[gone]
    if len(state.history) > state.history_shown:
        items.append(OlderButton(screen, strings, len(state.history) - state.history_shown))
    if not items and state.loaded:
        items = [EmptyTimeline(strings, bool(state.waiting), key="empty")]  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
    side = side_padding(state.width)
    # A Column, not a lazily built ListView: in a ListView Flutter merges each row's texts into
    # one label (a screen reader and a search by text lose them), and a link cannot scroll to a
    # card below the fold that was never built. Rows the update did not touch are handed to
    # Flet again as the same objects (`_reused`), so a long history costs a new question little.
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
