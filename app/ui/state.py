"""What the screen shows, as plain observable objects: the components render these and
nothing else. `Screen` (screen.py) is the only writer."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import flet as ft

from app.device import Connection, ConnectionState, TimelineItem
from app.device.preferences import AUTO, WebLayout
from app.protocol import PairLink
from app.protocol.selection import CardAnswers
from app.protocol.strings import Strings


@dataclass(frozen=True)
class AppOptions:
    """How the app was started: what Settings tells a person about pointing an agent at it."""

    agent_url: str | None = None  # the embedded gateway's URL
    agent_token_file: str | None = None  # where its agent token is kept
    notice: str | None = None  # e.g. "port 8765 was taken; the gateway is on 8766"
    notice_pid: int | None = None  # the gateway process the notice names, if it names one

    @property
    def current_notice(self) -> str | None:
        """The notice while it is still true: one that names a gateway process says nothing
        once that process has ended (#44: Settings named a gateway gone for hours)."""
        if self.notice and self.notice_pid is not None and not process_runs(self.notice_pid):
            return None
        return self.notice


def process_runs(pid: int) -> bool:
    """Whether a process with this id runs on this machine (the app's own, in a browser too:
    the page's code runs where the app was started)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: it runs
        return True
    return True


@ft.observable
@dataclass
class Clock:
    """Now on the gateway's clock (ms): the one value every countdown reads. It ticks once a
    second without touching the store. Countdowns take it as an argument (not a context: a
    memoized card's countdown lost its way up to a context provider, #43), so Flet re-renders
    only them on a tick."""

    now_ms: int = 0
    monotonic: float = 0.0  # this device's monotonic clock (s), for the Undo seconds


@ft.observable
@dataclass
class SettingsDraft:
    """What the Settings dialog holds until Save: its fields and its Save/Cancel (always in
    sight under the scrolling form) read and write this one object."""

    gateway_url: str = ""
    token: str = ""
    device_name: str = ""
    language: str = "en"
    one_tap: bool = True
    layout: WebLayout = AUTO  # in a browser: by the window's size, cards, or the stepper


@dataclass(frozen=True)
class DraftedElsewhere:
    """Where the choices a card shows were made, when not on this screen: a named device,
    another window of this app, or another device. Said in the language of the moment (the
    line stayed English after a switch to Persian, #53)."""

    device_name: str = ""
    window: bool = False

    def said(self, strings: Strings) -> str:
        if self.device_name:
            return strings("draft_from", device=self.device_name)
        return strings("draft_in_another_window" if self.window else "draft_on_another_device")


HISTORY_SHOWN = 12  # summaries drawn at first: more than the tallest screen shows


@ft.observable
@dataclass
class ScreenState:
    language: str = "en"
    connection: ConnectionState = field(
        default_factory=lambda: ConnectionState(Connection.CONNECTING)
    )
    waiting: list[TimelineItem] = field(default_factory=list)  # open cards, newest first
    history: list[TimelineItem] = field(default_factory=list)  # summaries, newest first
    # How many of them the timeline draws: more than a tall screen holds, so the page lays out
    # and tells a screen reader of a dozen rows, not of every answer kept (#43); "Show older"
    # draws more.
    history_shown: int = HISTORY_SHOWN
    sessions: list[tuple[str, int]] = field(default_factory=list)  # (key, pending)
    session: str | None = None  # the session filter; None shows every session
    selections: dict[str, CardAnswers] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    undo: dict[str, float] = field(default_factory=dict)  # prompt id → when it is sent
    # Of those, the ones answered by one tap (the rest are dismissed): sent with their choice.
    answering: tuple[str, ...] = ()
    # Expired or run-stopped prompts the person chose to answer anyway: drawn as cards again.
    answering_late: tuple[str, ...] = ()
    # Waiting cards whose choices came from another device or window, not sent (v1.4):
    # prompt id → where they were made.
    drafted: dict[str, DraftedElsewhere] = field(default_factory=dict)
    one_tap: bool = True  # one tap on an option answers a prompt of one single-choice question
    # In a browser (by default): the oldest waiting prompt, one question at a time, in a panel
    # docked at the bottom (the specification's web stepper) instead of stacked cards.
    stepper: bool = False
    stepper_collapsed: bool = False  # the panel is a thin bar; the timeline has the room
    docked_choice: str | None = None  # the waiting prompt the person picked for the stepper
    active_card: str | None = None  # the card keyboard shortcuts act on
    typing: bool = False  # a text field has focus: keys are text, not shortcuts
    dialog: str | None = None  # "settings" | "clear" | None
    width: float = 0  # the window's width, for the centred column on wide screens
    height: float = 0  # the window's height, for the docked stepper's share of it
    scroll_to_top: int = 0  # bumped when a question arrives: the timeline shows its top
    linked: str | None = None  # the prompt a link opened: outlined, scrolled into view
    linked_request: int = 0  # bumped each time a link's prompt is to be shown
    awaiting_link: str | None = None  # a linked prompt this device has not heard of yet
    pair_offer: PairLink | None = None  # a pairing link opened, waiting for "Pair"
    pair_busy: bool = False
    pair_error: str = ""
    notice: str = ""  # one line above the timeline until closed, e.g. "Paired with …"
    settings_error: str = ""  # what Save refused, under the field it is about
    draft: SettingsDraft = field(default_factory=SettingsDraft)
    gateway_url: str = ""  # the gateway this device talks to (the offline line names it)
    options: AppOptions = field(default_factory=AppOptions)
    web: bool = False  # a browser tab (the stepper is offered), not the phone or desktop app
    loaded: bool = False


def scroll_key(prompt_id: str) -> str:
    """What a prompt's card or summary is scrolled to by (when a link opens it)."""
    return f"prompt-{prompt_id}"
