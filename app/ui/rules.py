"""What the screen's state says, as pure functions of it: which prompt the browser's stepper
docks, what a one-tap answer will send, what a key does, and the order of cards and summaries.
The screen and its components read them; nothing here changes anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from app.device import DisplayStatus, TimelineItem

from .state import ScreenState

NUMBER_KEYS = {"1": 1, "2": 2, "3": 3, "4": 4}


@dataclass(frozen=True)
class Shortcut:
    """What a key press does: `kind` is "number", "submit", "dismiss" or "send" (a one-tap
    answer waiting for its Undo time, sent now)."""

    prompt_id: str
    kind: str
    number: int = 0


def newest_created(item: TimelineItem) -> tuple[datetime, str]:
    """Waiting cards are ordered by when they were asked (newest first)."""
    return (item.record.created_at, item.id)


def newest_resolved(item: TimelineItem) -> tuple[datetime, str]:
    """Summaries are ordered by when they were resolved (newest first)."""
    return (item.record.resolved_at or item.record.created_at, item.id)


def insert_in_order(
    items: list[TimelineItem],
    item: TimelineItem,
    order: Callable[[TimelineItem], tuple[datetime, str]],
) -> None:
    """Put `item` in its place in `items`, which is newest first by `order`."""
    key = order(item)
    at = next((n for n, other in enumerate(items) if order(other) < key), len(items))
    items.insert(at, item)


def waits_in_store(item: TimelineItem) -> bool:
    """Waiting in the store (sent by this device or not): what counts as pending."""
    return item.record.is_pending and item.status != DisplayStatus.UNAVAILABLE


def docked(state: ScreenState) -> TimelineItem | None:
    """The prompt the browser's stepper shows: the one the person picked from those waiting,
    or a link opened, while it waits; else the oldest (the rest wait their turn in order)."""
    if not state.stepper or not state.waiting:
        return None
    for wanted in (state.docked_choice, state.linked):
        if chosen := next((i for i in state.waiting if i.id == wanted), None):
            return chosen
    return state.waiting[-1]


def one_tap_answer(state: ScreenState, prompt_id: str) -> str | None:
    """What a prompt answered by one tap will send, while its Undo lasts (None: dismissed)."""
    if prompt_id not in state.answering:
        return None
    return ", ".join(v for vs in state.selections[prompt_id].answers().values() for v in vs)


def shortcut(state: ScreenState, key: str, modifiers: bool) -> Shortcut | None:
    """A key acts only on the card the person chose from or focused, never while a dialog or a
    text field has focus, and never on a page nobody has touched."""
    if modifiers or state.dialog or state.typing:
        return None
    card = state.active_card
    if card is None or all(i.id != card for i in state.waiting):
        return None
    if card in state.undo:  # answered by one tap, in its Undo time: Enter sends it now (#44)
        return Shortcut(card, "send") if key == "Enter" and card in state.answering else None
    if key in NUMBER_KEYS:
        return Shortcut(card, "number", NUMBER_KEYS[key])
    if key == "Enter":
        return Shortcut(card, "submit")
    if key == "Escape":
        return Shortcut(card, "dismiss")
    return None
