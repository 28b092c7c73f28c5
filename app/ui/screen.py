"""The screen's logic without widgets: feeds `ScreenState` from the device core and turns what
the person does (taps, keys, Undo) into the core's intents. Tested without a browser."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable

from app.device import (
    Change,
    Connection,
    DeviceCore,
    TimelineItem,
)
from app.device.preferences import AUTO, STEPPER, Preferences
from app.device.store import created_key
from app.protocol import ProtocolError
from app.protocol.selection import CardAnswers
from app.protocol.stops import QUESTION
from app.protocol.strings import Strings

from .dialogs import Dialogs
from .rules import (
    docked,
    insert_in_order,
    newest_created,
    newest_resolved,
    shortcut,
    waits_in_store,
)
from .state import HISTORY_SHOWN, AppOptions, Clock, DraftedElsewhere, ScreenState

HISTORY_PAGE = 100  # summaries read from the store at first
OLDER_STEP = 24  # summaries more drawn by each "Show older"
UNDO_SECONDS = 5.0
WIDE_WINDOW = 600  # px: a narrower browser window is a phone's, where cards read best


class Screen:
    """One window's (or browser tab's) state, fed by the process's device core."""

    def __init__(
        self,
        core: DeviceCore,
        options: AppOptions | None = None,
        *,
        schedule: Callable[[Callable[[], None]], object] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        web: bool = False,
    ) -> None:
        self.core = core
        self.web = web  # a browser tab: the docked stepper is offered there, never in an app
        options = options or AppOptions()
        self.monotonic = monotonic
        # Where the core's change notifications run: on this page's own loop context in the
        # app (so each tab updates its own components), at once in tests.
        self._schedule = schedule or (lambda fn: fn())
        self._update_pending = False
        self._changed_ids: set[str] | None = set()  # told by the core, not yet on screen
        # Every prompt waiting in the store, whatever the session filter shows (id → its
        # session): what is new among them is an arrival; they are the sessions' counts.
        self._waiting: dict[str, str] = {}
        self._activity: dict[str, str] = {}  # session → when it last asked (its order)
        self._older_read = 0  # summaries read beyond the first page, for "Show older"
        self.paired_notice = ""  # the "Paired with …" line, while it is the one shown
        self._sent: set[str] = set()  # prompts this screen answered or dismissed
        self._drafts_seen: dict[str, int] = {}  # prompt id → the newest draft it has taken
        # Told of questions that arrive while this screen is up (system notifications).
        self.on_arrival: Callable[[list[TimelineItem]], None] = lambda items: None
        self.clock = Clock(core.clock.now_ms())
        chosen = Preferences.load(core.store)
        self.layout = chosen.web_layout  # in a browser; the apps always stack the questions
        self.state = ScreenState(
            language=chosen.language,
            one_tap=chosen.one_tap,
            stepper=self._uses_stepper(width=0),
            options=options,
            web=web,
        )
        self.dialogs = Dialogs(self)  # pairing, links and Settings
        self._unsubscribe = core.subscribe(self._core_changed, owner=self)
        self.reload()

    @property
    def strings(self) -> Strings:
        return Strings(self.state.language)

    def _uses_stepper(self, width: float) -> bool:
        """The docked stepper: in a browser whose window is wide, or where the person chose
        it; a phone-sized window stacks the cards, as the phone app does (#53)."""
        wide = width >= WIDE_WINDOW
        return self.web and (self.layout == STEPPER or (self.layout == AUTO and wide))

    # ---- from the core -----------------------------------------------------------------

    def _core_changed(self, change: Change) -> None:
        """Coalesce a burst of core changes into one update of the prompts they name (or one
        reload, when the core says anything may have changed)."""
        if change is None or self._changed_ids is None:  # EVERYTHING
            self._changed_ids = None
        else:
            self._changed_ids |= change
        if self._update_pending:
            return
        self._update_pending = True
        self._schedule(self._update_now)

    def _update_now(self) -> None:
        changed, self._changed_ids = self._changed_ids, set()
        self._update_pending = False
        if changed is None:  # EVERYTHING
            self.reload()
        else:
            self.apply(changed)

    def reload(self) -> None:
        """Read the timeline again: every question still waiting, then the newest history,
        and what other tabs of this device saved (language, layout)."""
        state, core = self.state, self.core
        by_id: dict[str, TimelineItem] = {}
        for item in core.timeline(session_key=state.session, limit=self._history_limit):
            by_id[item.id] = item
        for item in core.waiting(session_key=state.session):
            by_id[item.id] = item
        items = sorted(by_id.values(), key=newest_created, reverse=True)
        history = sorted((i for i in items if not i.is_open), key=newest_resolved, reverse=True)
        everywhere = core.waiting() if state.session else [i for i in items if waits_in_store(i)]
        arrived = [i for i in everywhere if i.id not in self._waiting]
        self._waiting = {i.id: i.record.session_key for i in everywhere}
        self._activity = core.store.session_activity()
        # Tabs of one web app are one device: a language saved in one reaches the others.
        chosen = Preferences.load(core.store)
        state.language, state.one_tap = chosen.language, chosen.one_tap
        self.layout = chosen.web_layout
        state.stepper = self._uses_stepper(state.width)
        self._settle([i for i in items if i.is_open], history, arrived, resolved=history)

    def apply(self, prompt_ids: set[str] | frozenset[str]) -> None:
        """The prompts the core says changed, read one by one and put in their place; nothing
        else is read, so a question reaches the screen as fast with 1,000 summaries as with
        none (#43)."""
        state, waiting, history = self.state, list(self.state.waiting), list(self.state.history)
        arrived: list[TimelineItem] = []
        resolved: list[TimelineItem] = []
        for prompt_id in prompt_ids:
            item = self.core.item(prompt_id)
            waiting = [i for i in waiting if i.id != prompt_id]
            history = [i for i in history if i.id != prompt_id]
            if item is None:  # gone from the store
                self._waiting.pop(prompt_id, None)
                continue
            session, created = item.record.session_key, created_key(item.record)
            self._activity[session] = max(self._activity.get(session, ""), created)
            if waits_in_store(item):
                if prompt_id not in self._waiting:
                    arrived.append(item)
                self._waiting[prompt_id] = item.record.session_key
            else:
                self._waiting.pop(prompt_id, None)
            if state.session is not None and item.record.session_key != state.session:
                continue
            if item.is_open:
                insert_in_order(waiting, item, newest_created)
            else:
                insert_in_order(history, item, newest_resolved)
                resolved.append(item)
        self._settle(
            waiting, history[: max(self._history_limit, len(state.history))], arrived, resolved
        )

    def _settle(
        self,
        waiting: list[TimelineItem],
        history: list[TimelineItem],
        arrived: list[TimelineItem],
        resolved: list[TimelineItem],
    ) -> None:
        """What follows from the timeline the screen now shows: each open card's choices, the
        sessions' counts, a linked prompt, a new question brought into view."""
        state = self.state
        now = self.core.clock.now_ms()
        # A late card stays while its prompt takes a late answer and none is on its way.
        late = [i for i in history if i.id in state.answering_late and i.late_answer_offered(now)]
        state.answering_late = tuple(i.id for i in late)
        open_ids = {i.id for i in (*waiting, *late)}  # cards that take input
        self._tell_of_unsent_choices(open_ids, {i.id: i for i in resolved})
        state.selections = {
            i.id: state.selections.get(i.id) or CardAnswers.start(i.record.questions)
            for i in (*waiting, *late)
        }
        self._take_drafts(waiting)
        state.errors = {k: v for k, v in state.errors.items() if k in open_ids}
        state.undo = {k: v for k, v in state.undo.items() if k in open_ids}
        state.answering = tuple(k for k in state.answering if k in state.undo)
        if state.active_card not in open_ids:
            state.active_card = None
        state.waiting = waiting
        state.history = history
        pending = Counter(self._waiting.values())
        newest_first = sorted(self._activity, key=lambda k: (self._activity[k], k), reverse=True)
        state.sessions = [(key, pending.get(key, 0)) for key in newest_first]
        self._connection_changed()
        was_loaded, state.loaded = state.loaded, True
        self.clock.now_ms = self.core.clock.now_ms()
        self.clock.monotonic = self.monotonic()
        self._show_linked(open_ids)
        if any(i.id in open_ids for i in arrived) and was_loaded:
            # A new question comes into view on top, unless the person opened a link to a
            # card that still waits: the new card above pushes it down, so it is brought back
            # into view (the title counts the new one).
            if state.linked in open_ids:
                state.linked_request += 1
            else:
                state.scroll_to_top += 1
        if arrived and was_loaded:
            self.on_arrival(arrived)

    def _take_drafts(self, waiting: list[TimelineItem]) -> None:
        """A waiting card shows the newest answer in progress from the person's other devices
        or this app's other windows, marked as not sent (v1.4); the person's own change here
        makes it theirs again."""
        state, drafted = self.state, {}
        for item in waiting:
            shared = self.core.draft_of(item.id)
            label = state.drafted.get(item.id)
            if shared is not None and shared.serial > self._drafts_seen.get(item.id, 0):
                self._drafts_seen[item.id] = shared.serial
                if shared.source is not self and item.id not in state.undo:
                    answers = state.selections[item.id].with_values(shared.answers)
                    state.selections = {**state.selections, item.id: answers}
                    label = DraftedElsewhere(shared.device_name or "", shared.source is not None)
            if label is not None:
                drafted[item.id] = label
        state.drafted = drafted

    def _tell_of_unsent_choices(
        self, open_ids: set[str], resolved: dict[str, TimelineItem]
    ) -> None:
        """A card with a choice not yet sent was resolved elsewhere (another tab of this web
        app, or another device): say so, rather than let the choice vanish into a summary."""
        for prompt_id, answers in self.state.selections.items():
            item = resolved.get(prompt_id)
            if item is None or prompt_id in open_ids or prompt_id in self._sent:
                continue
            if prompt_id in self.state.drafted:  # chosen elsewhere, not on this screen
                continue
            if any(answers.answers().values()):
                header = item.record.questions[0].header
                # Its time ran out (or its run stopped): nobody answered it, and it still can be.
                late = item.record.late_answer_open(self.core.clock.now_ms())
                said = "choice_expired" if late else "choice_not_sent"
                self.state.notice = self.strings(said, header=header)

    def _show_linked(self, open_ids: set[str]) -> None:
        """A prompt link waits until its prompt is here; then that card is chosen and shown.
        Once connected and synced without it, the person is told it is not here."""
        state, target = self.state, self.state.awaiting_link
        if target is None:
            return
        at = next((n for n, i in enumerate(state.history) if i.id == target), None)
        if target in open_ids or at is not None:
            if at is not None and at >= state.history_shown:  # an old summary: drawn too
                state.history_shown = at + 1
            state.awaiting_link = None
            state.linked = target
            state.docked_choice = None  # a link opened now outranks an earlier pick
            state.linked_request += 1
            if target in open_ids:
                state.active_card = target
        elif self.core.connection.kind == Connection.CONNECTED:
            state.awaiting_link = None
            state.notice = self.strings("prompt_gone")

    def tick(self) -> None:
        """Once a second: the clock moves; a card whose time ran out turns read-only; a
        dismiss whose Undo time passed goes to the gateway."""
        now = self.core.clock.now_ms()
        self.clock.now_ms = now
        self.clock.monotonic = self.monotonic()
        self.send_dismissals(due_only=True)
        if overdue := {i.id for i in self.state.waiting if i.record.overdue(now)}:
            self.apply(overdue)
        self._connection_changed()

    def _connection_changed(self) -> None:
        """The connection as the core has it now, with the gateway it is to. Losing it takes
        away a "Paired with …" line: it would stand beside the error that follows."""
        state, connection = self.state, self.core.connection
        state.gateway_url = self.core.settings.gateway_url
        if state.connection == connection:
            return
        state.connection = connection
        if state.notice == self.paired_notice and connection.kind not in (
            Connection.CONNECTED,
            Connection.CONNECTING,
        ):
            state.notice = self.paired_notice = ""

    # ---- a card ------------------------------------------------------------------------

    def _update(self, prompt_id: str, change: Callable[[CardAnswers], CardAnswers]) -> None:
        current = self.state.selections.get(prompt_id)
        if current is None:
            return
        changed = change(current)
        self.state.selections = {**self.state.selections, prompt_id: changed}
        self.state.errors = {k: v for k, v in self.state.errors.items() if k != prompt_id}
        self.state.active_card = prompt_id
        if changed.answers() != current.answers() and prompt_id not in self.state.answering_late:
            # The person's own choice: no longer another device's draft; theirs to share.
            self.state.drafted = {k: v for k, v in self.state.drafted.items() if k != prompt_id}
            self.core.share_draft(prompt_id, changed.answers(), self)

    def _waiting_item(self, prompt_id: str) -> TimelineItem | None:
        return next((i for i in self.state.waiting if i.id == prompt_id), None)

    def _engaging(self, prompt_id: str) -> None:
        """A choice or a word typed: with little time left, more time (core.engaged)."""
        item = self._waiting_item(prompt_id)
        if item is not None:
            self.core.engaged(item.record)

    def _shown(self, prompt_id: str, question_id: str) -> bool:
        """Whether this question is on screen: the docked stepper shows one question at a
        time. A tap on one it no longer shows is stale: Enter on an option that still had the
        focus steps to the next question, and the browser then taps that option too."""
        answers = self.state.selections.get(prompt_id)
        shown = docked(self.state)
        if answers is None or shown is None or shown.id != prompt_id:
            return True
        return answers.active == question_id

    def tap_option(self, prompt_id: str, question_id: str, label: str) -> None:
        if not self._shown(prompt_id, question_id):
            return
        self._update(prompt_id, lambda a: a.with_answer(a[question_id].toggle(label)))
        self._engaging(prompt_id)
        self._answer_by_one_tap(prompt_id)

    def set_option(self, prompt_id: str, question_id: str, label: str, on: bool) -> None:
        """A checkbox or radio reporting its new value (idempotent, unlike a tap)."""
        if not self._shown(prompt_id, question_id):
            return

        def change(a: CardAnswers) -> CardAnswers:
            q = a[question_id]
            return a.with_answer(q.choose(label) if on else q.unchoose(label))

        self._update(prompt_id, change)
        self._engaging(prompt_id)
        if on:
            self._answer_by_one_tap(prompt_id)

    def _answer_by_one_tap(self, prompt_id: str) -> None:
        """A prompt of one single-choice question is answered by tapping an option, with the
        same few seconds of Undo as Dismiss (nothing is sent before); a prompt of several
        questions, or of a multiple choice, waits for Submit. A setting turns it off."""
        answers = self.state.selections.get(prompt_id)
        if not self.state.one_tap or answers is None or prompt_id in self.state.undo:
            return
        if prompt_id in self.state.answering_late:  # sent by its own button, no Undo wait
            return
        item = self._waiting_item(prompt_id)
        if item is not None and item.record.kind != QUESTION:  # a permission: Submit decides
            return
        [*questions] = answers.by_id.values()
        if len(questions) != 1 or questions[0].question.multi_select or not answers.complete:
            return
        self.state.answering = (*self.state.answering, prompt_id)
        self.dismiss(prompt_id)  # the same wait and Undo; sent as an answer

    def set_other(self, prompt_id: str, question_id: str, text: str) -> None:
        if not self._shown(prompt_id, question_id):
            return
        self._update(prompt_id, lambda a: a.with_answer(a[question_id].set_other(text)))
        self._engaging(prompt_id)

    def focus(self, prompt_id: str, question_id: str | None = None) -> None:
        """The person moved into this card (or one of its questions)."""
        if question_id is not None:
            self._update(prompt_id, lambda a: a.focus(question_id))
        elif prompt_id in self.state.selections:
            self.state.active_card = prompt_id

    def step(self, prompt_id: str, forward: bool) -> bool:
        """The stepper's Next (once this question has an answer) or Back; choices are kept."""
        answers = self.state.selections.get(prompt_id)
        if answers is None or prompt_id in self.state.undo:
            return False
        order = list(answers.by_id)
        target = order.index(answers.active) + (1 if forward else -1)
        if not 0 <= target < len(order) or (forward and not answers[answers.active].complete):
            return False
        self._update(prompt_id, lambda a: a.focus(order[target]))
        return True

    def confirm(self, prompt_id: str) -> bool:
        """Enter: in the stepper, the next question until the last; then, as on a card, Submit."""
        answers = self.state.selections.get(prompt_id)
        if self.state.stepper and answers is not None and answers.active != [*answers.by_id][-1]:
            return self.step(prompt_id, forward=True)
        return self.submit(prompt_id)

    def collapse_stepper(self, collapsed: bool) -> None:
        self.state.stepper_collapsed = collapsed

    def dock(self, prompt_id: str) -> None:
        """The person picked which waiting prompt the stepper shows (#53: two agents waiting,
        and only the oldest could be reached)."""
        self.state.docked_choice = prompt_id
        self.state.stepper_collapsed = False
        self.state.active_card = prompt_id

    def set_typing(self, typing: bool) -> None:
        self.state.typing = typing

    def submit(self, prompt_id: str) -> bool:
        answers = self.state.selections.get(prompt_id)
        if answers is None or not answers.complete:
            return False
        self._sent.add(prompt_id)  # first: the core's change updates this screen at once
        late = prompt_id in self.state.answering_late
        try:
            if late:
                self.core.answer_late(prompt_id, answers.answers())
            else:
                self.core.answer(prompt_id, answers.answers())
        except ProtocolError as exc:
            self._sent.discard(prompt_id)
            detail = "; ".join(f.message for f in exc.fields) or exc.message
            self.state.errors = {
                **self.state.errors,
                prompt_id: self.strings("invalid_answer", detail=detail),
            }
            return False
        self.apply({prompt_id})
        return True

    def answer_anyway(self, prompt_id: str) -> None:
        """ "Answer anyway" on an expired or run-stopped summary: its card again, to answer."""
        item = next((i for i in self.state.history if i.id == prompt_id), None)
        if item is None or not item.late_answer_offered(self.core.clock.now_ms()):
            return
        self.state.selections = {
            **self.state.selections,
            prompt_id: CardAnswers.start(item.record.questions),
        }
        self.state.answering_late = (*self.state.answering_late, prompt_id)
        self.state.active_card = prompt_id

    def cancel_late(self, prompt_id: str) -> None:
        """The late card's Cancel: back to its summary, nothing sent."""
        self.state.answering_late = tuple(k for k in self.state.answering_late if k != prompt_id)
        self.state.selections = {k: v for k, v in self.state.selections.items() if k != prompt_id}
        if self.state.active_card == prompt_id:
            self.state.active_card = None

    def dismiss(self, prompt_id: str) -> None:
        """Dismiss after a few seconds in which Undo takes it back; nothing is sent before."""
        if prompt_id not in self.state.selections:
            return
        self.clock.monotonic = self.monotonic()
        self.state.undo = {**self.state.undo, prompt_id: self.clock.monotonic + UNDO_SECONDS}
        if self.state.active_card == prompt_id and prompt_id not in self.state.answering:
            self.state.active_card = None  # a one-tap answer keeps it: Enter sends it now

    def undo_last(self) -> bool:
        """Ctrl/Cmd+Z: take back the newest dismiss or one-tap answer still in its Undo time."""
        if not self.state.undo or self.state.dialog or self.state.typing:
            return False  # a text field's own Ctrl+Z undoes typing
        self.undo_dismiss(max(self.state.undo, key=lambda k: self.state.undo[k]))
        return True

    def undo_dismiss(self, prompt_id: str) -> None:
        """Undo a dismiss or a one-tap answer: the card is back as it was (with its choice)."""
        self.state.undo = {k: v for k, v in self.state.undo.items() if k != prompt_id}
        self.state.answering = tuple(k for k in self.state.answering if k != prompt_id)
        if prompt_id in self.state.selections:  # back as it was: the keys act on it again (#44)
            self.state.active_card = prompt_id

    def send_dismissals(self, due_only: bool = False, only: str | None = None) -> None:
        """Send what waits for its Undo time: all of it, what is due (`due_only`), or one."""
        now = self.monotonic()
        due = [
            k
            for k, at in self.state.undo.items()
            if (not due_only or at <= now) and (only is None or k == only)
        ]
        if not due:
            return
        answering = set(self.state.answering)
        self.state.undo = {k: v for k, v in self.state.undo.items() if k not in due}
        self.state.answering = tuple(k for k in self.state.answering if k not in due)
        for prompt_id in due:
            self._sent.add(prompt_id)
            answers = self.state.selections.get(prompt_id)
            with contextlib.suppress(ProtocolError):  # already read-only: nothing to send
                if prompt_id in answering and answers is not None:
                    self.core.answer(prompt_id, answers.answers())
                else:
                    self.core.dismiss(prompt_id)
        self.apply(set(due))

    def key(self, key: str, modifiers: bool = False) -> bool:
        """A key press from the page; True when it was a shortcut and acted."""
        action = shortcut(self.state, key, modifiers)
        if action is None:
            return False
        if action.kind == "number":
            self._update(
                action.prompt_id,
                lambda a: a.with_answer(a[a.active].press_number(action.number)),
            )
            self._engaging(action.prompt_id)
        elif action.kind == "submit":
            return self.confirm(action.prompt_id)
        elif action.kind == "send":
            self.send_dismissals(only=action.prompt_id)
        else:
            self.dismiss(action.prompt_id)
        return True

    # ---- the rest of the screen --------------------------------------------------------

    @property
    def _history_limit(self) -> int:
        """Summaries read from the store: the first page, and more once older were asked for."""
        return HISTORY_PAGE + self._older_read

    def show_older(self) -> None:
        """ "Show older": more summaries drawn, read from the store once those held run out."""
        state = self.state
        state.history_shown += OLDER_STEP
        if state.history_shown >= len(state.history):
            self._older_read = max(self._older_read, state.history_shown)
            self.reload()

    def set_session(self, session: str | None) -> None:
        self.state.session = session
        self.state.history_shown = HISTORY_SHOWN
        self.reload()

    def clear_history(self) -> None:
        self.core.clear_history(self.state.session)
        self.state.dialog = None
        self.reload()

    def set_size(self, width: float | None, height: float | None = None) -> None:
        if width:
            self.state.width = width
            self.state.stepper = self._uses_stepper(width)
        if height:
            self.state.height = height

    def close(self) -> None:
        """The window closed: a dismiss waiting for Undo is sent now, not lost."""
        self.send_dismissals()
        self._unsubscribe()
        self._unsubscribe = lambda: None
