"""What the person sets in Settings, typed, and the one place that reads and writes it in the
device's store (#41: the app's preferences were string keys reached from the screen).

The store keeps each as it always has (`language`, `one_tap` "0"/"1", `web_layout`), so a store
written by an older app reads the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .store import LocalStore

WebLayout = Literal["auto", "stepper", "cards"]
AUTO: WebLayout = "auto"  # a browser's default: cards in a phone-sized window, else the stepper
CARDS: WebLayout = "cards"  # every question stacked, as the phone and desktop apps do
STEPPER: WebLayout = "stepper"  # the specification's docked stepper
WEB_LAYOUTS: tuple[WebLayout, ...] = (AUTO, CARDS, STEPPER)

_LANGUAGE, _ONE_TAP, _WEB_LAYOUT = "language", "one_tap", "web_layout"


@dataclass(frozen=True)
class Preferences:
    language: str = "en"
    one_tap: bool = True  # one tap on an option answers a prompt of one single-choice question
    web_layout: WebLayout = AUTO  # in a browser

    @classmethod
    def load(cls, store: LocalStore) -> Preferences:
        return cls(
            language=store.get_meta(_LANGUAGE) or "en",
            one_tap=store.get_meta(_ONE_TAP) != "0",
            web_layout=next((w for w in WEB_LAYOUTS if w == store.get_meta(_WEB_LAYOUT)), AUTO),
        )

    def save(self, store: LocalStore) -> None:
        """Each one that differs from what the store holds (tabs of one web app share it)."""
        held = Preferences.load(store)
        if self.language != held.language:
            store.set_meta(_LANGUAGE, self.language)
        if self.one_tap != held.one_tap:
            store.set_meta(_ONE_TAP, "1" if self.one_tap else "0")
        if self.web_layout != held.web_layout:
            store.set_meta(_WEB_LAYOUT, self.web_layout)
