"""The screen's dialogs without widgets: pairing (from a link the app was opened with, or an
address and a code), the links that open a card, and Settings — what they hold while open and
what saving them changes. A part of `Screen` (`screen.dialogs`)."""

from __future__ import annotations

from typing import Protocol

from app.device import DeviceCore, PairingError, Settings
from app.device.preferences import Preferences, WebLayout
from app.protocol import PairLink, PromptLink, normalize_code, parse_link
from app.protocol.pairing import url_problem
from app.protocol.strings import Strings

from .state import ScreenState, SettingsDraft


class Screen(Protocol):
    """What the dialogs need of their screen (`screen.Screen`)."""

    core: DeviceCore
    state: ScreenState
    web: bool
    layout: WebLayout
    paired_notice: str

    @property
    def strings(self) -> Strings: ...

    def reload(self) -> None: ...

    def _connection_changed(self) -> None: ...

    def _uses_stepper(self, width: float) -> bool: ...


_LAST_PAIR_LINK = "last_pair_link"


def _link_key(link: PairLink) -> str:
    return f"{link.gateway_url.rstrip('/')} {normalize_code(link.code)}"


class Dialogs:
    """One screen's dialogs and the links it is opened with."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen

    def open_link(self, route: str | None) -> bool:
        """A link the app was opened with (`askuser://…`, or the web app's page route): a
        pairing link asks before it pairs; a prompt link shows that card. True if it was one."""
        link = parse_link(route or "")
        if isinstance(link, PairLink):
            if self.screen.core.store.get_meta(_LAST_PAIR_LINK) == _link_key(link):
                return True  # this link already paired this app (e.g. the page was reloaded)
            self.screen.state.pair_offer = link
            self.screen.state.pair_error = ""
            self.open("pair")
            return True
        if isinstance(link, PromptLink):
            self.screen.state.awaiting_link = link.prompt_id
            self.screen.state.session = None  # the linked card may be in any session
            self.screen.reload()
            return True
        return False

    async def pair(self, link_or_url: str, code: str = "") -> bool:
        """Pair from a link, or from a gateway URL and a code; the outcome lands in the state."""
        link = parse_link(link_or_url)
        url, code = (
            (link.gateway_url, link.code)
            if isinstance(link, PairLink)
            else (
                link_or_url.strip(),
                code,
            )
        )
        state = self.screen.state
        state.pair_busy, state.pair_error = True, ""
        try:
            await self.screen.core.pair(url, code)
        except PairingError as exc:
            state.pair_error = self.screen.strings(
                f"pair_failed_{exc.kind}", url=url or "?", detail=exc.detail
            )
            return False
        finally:
            state.pair_busy = False
        self.screen.core.store.set_meta(_LAST_PAIR_LINK, _link_key(PairLink(url, code)))
        state.pair_offer = None
        state.notice = self.screen.paired_notice = self.screen.strings("paired", url=url)
        state.dialog = None
        return True

    def close_notice(self) -> None:
        self.screen.state.notice = ""

    def open(self, name: str | None) -> None:
        """A dialog takes the keys; after it, shortcuts wait until the person chooses from a
        card again (an Enter that closed the dialog must not submit a card)."""
        if name is None:
            self.screen.state.pair_offer = None
        if name == "settings":
            current = self.screen.core.settings
            self.screen.state.draft = SettingsDraft(
                current.gateway_url,
                current.token,
                current.device_name,
                self.screen.state.language,
                self.screen.state.one_tap,
                self.screen.layout,
            )
        self.screen.state.pair_error = self.screen.state.settings_error = ""
        self.screen.state.dialog = name
        self.screen.state.typing = False
        self.screen.state.active_card = None

    def save_settings(self) -> bool:
        """Save the dialog's draft and reconnect; a gateway URL that cannot be one is refused,
        saying why, and nothing changes (an empty one is allowed: no gateway yet)."""
        draft = self.screen.state.draft
        url, token, name, language = (
            draft.gateway_url,
            draft.token,
            draft.device_name,
            draft.language,
        )
        problem = url_problem(url) if url.strip() else None
        if problem is not None:
            self.screen.state.settings_error = self.screen.strings(problem, url=url.strip())
            return False
        self.screen.state.settings_error = ""
        if self.screen.state.notice == self.screen.paired_notice:
            self.screen.state.notice = self.screen.paired_notice = ""
        held = Preferences.load(self.screen.core.store)
        chosen = Preferences(
            language=language,
            one_tap=draft.one_tap,
            web_layout=draft.layout if self.screen.web else held.web_layout,
        )
        chosen.save(self.screen.core.store)  # before configure: its change reloads every tab
        self.screen.state.language, self.screen.state.one_tap = chosen.language, chosen.one_tap
        self.screen.layout = chosen.web_layout
        self.screen.state.stepper = self.screen._uses_stepper(self.screen.state.width)
        self.screen.core.configure(
            Settings(gateway_url=url.strip(), token=token.strip(), device_name=name.strip())
        )
        self.screen.state.dialog = None
        self.screen._connection_changed()
        return True
