"""The screen's logic and the answer rules, without a browser: what a tap, a key or Undo does,
and what the timeline shows in which order."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

from app.device import DeviceCore, DisplayStatus, LocalStore, ServerClock, TimelineItem
from app.device.preferences import AUTO, CARDS, STEPPER, Preferences
from app.protocol import PromptRecord, Question
from app.protocol.selection import CardAnswers, QuestionAnswer
from app.protocol.strings import Strings
from app.protocol.text import shown_label
from app.ui.rules import docked, shortcut
from app.ui.screen import OLDER_STEP, UNDO_SECONDS, WIDE_WINDOW, Screen
from app.ui.state import HISTORY_SHOWN
from app.ui.summary import shorten, summary_lines

NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
SINGLE = {
    "id": "target",
    "header": "Target",
    "question": "Where should this deploy?",
    "options": [{"label": "Staging (Recommended)"}, {"label": "Production"}, {"label": "Preview"}],
}
MULTI = {
    "id": "features",
    "header": "Features",
    "question": "Which features?",
    "multiSelect": True,
    "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Dark mode"}],
}


def record(id_: str, minute: int, status: str = "pending", questions=None, **kw) -> PromptRecord:
    created = NOW - timedelta(minutes=60 - minute)
    return PromptRecord.model_validate(
        {
            "id": id_,
            "sessionKey": kw.pop("session", "main"),
            "questions": questions or [SINGLE],
            "status": status,
            "version": 1 if status == "pending" else 2,
            "createdAt": created.isoformat(),
            "expiresAt": (NOW + timedelta(minutes=10)).isoformat(),
            **kw,
        }
    )


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def screen(tmp_path):
    store = LocalStore(tmp_path / "device.sqlite3")
    clock = ServerClock(wall=lambda: NOW.timestamp(), monotonic=lambda: 0.0)
    core = DeviceCore(store, clock=clock)
    time = FakeTime()
    made = Screen(core, monotonic=time)
    made.time = time  # type: ignore[attr-defined]
    yield made
    made.close()
    store.close()


def add(screen: Screen, *records: PromptRecord) -> None:
    screen.core.store.apply_many(list(records))
    screen.reload()


# ---- the answer rules ---------------------------------------------------------------------


def test_single_select_choose_replaces_and_other_replaces_the_option():
    q = QuestionAnswer(Question.model_validate(SINGLE))
    q = q.choose("Production")
    assert q.values() == ["Production"]
    q = q.set_other("  our rack ")
    assert q.values() == ["our rack"] and q.chosen == ()
    q = q.choose("Preview")
    assert q.values() == ["Preview"] and q.other == ""
    assert q.press_number(9) == q  # no such option: nothing changes
    assert q.press_number(1).values() == ["Staging (Recommended)"]


def test_multi_select_toggles_and_combines_with_other_in_option_order():
    q = QuestionAnswer(Question.model_validate(MULTI))
    q = q.toggle("Dark mode").toggle("Search").set_other("Sync")
    assert q.values() == ["Search", "Dark mode", "Sync"]
    q = q.toggle("Search")
    assert q.values() == ["Dark mode", "Sync"]
    assert q.press_number(2).values() == ["Export", "Dark mode", "Sync"]


def test_card_answers_are_immutable_and_complete_only_when_every_question_is():
    start = CardAnswers.start([Question.model_validate(SINGLE), Question.model_validate(MULTI)])
    one = start.with_answer(start["target"].choose("Production"))
    assert start.answers() == {"target": [], "features": []}  # unchanged
    assert not one.complete and one.active == "target"
    both = one.with_answer(one["features"].toggle("Export"))
    assert both.complete and both.active == "features"
    assert both.answers() == {"target": ["Production"], "features": ["Export"]}


def test_recommended_mark_keeps_the_label_the_agent_sent():
    assert shown_label("Staging (Recommended)") == ("Staging", True)
    assert shown_label("Production") == ("Production", False)
    assert shown_label("(Recommended)") == ("(Recommended)", False)


# ---- the timeline ---------------------------------------------------------------------


def test_waiting_first_newest_on_top_then_history_newest_first(screen):
    add(
        screen,
        record("pr_a", 1, status="answered", answers={"target": ["Production"]}),
        record("pr_b", 2),
        record("pr_c", 3, status="dismissed"),
        record("pr_d", 4),
    )
    assert [i.id for i in screen.state.waiting] == ["pr_d", "pr_b"]
    assert [i.id for i in screen.state.history] == ["pr_c", "pr_a"]
    assert set(screen.state.selections) == {"pr_b", "pr_d"}


def test_every_waiting_prompt_is_shown_however_long_the_history(screen, monkeypatch):
    monkeypatch.setattr("app.ui.screen.HISTORY_PAGE", 3)
    add(screen, record("pr_0", 0))
    add(screen, *[record(f"pr_{n}", n, status="expired") for n in range(1, 10)])
    assert [i.id for i in screen.state.waiting] == ["pr_0"]
    assert len(screen.state.history) == 3


def test_a_dozen_summaries_are_drawn_and_show_older_draws_and_reads_more(screen, monkeypatch):
    """#43: the page draws a screenful of summaries, not every answer kept; "Show older" draws
    more, reading the store again once the summaries held run out."""
    monkeypatch.setattr("app.ui.screen.HISTORY_PAGE", 40)
    add(screen, *[record(f"pr_{n:03d}", n % 60, status="expired") for n in range(80)])
    state = screen.state
    assert state.history_shown == HISTORY_SHOWN and len(state.history) == 40
    screen.show_older()
    assert state.history_shown == HISTORY_SHOWN + OLDER_STEP and len(state.history) == 40
    screen.show_older()  # past the 40 held: the store is read for more
    assert state.history_shown == HISTORY_SHOWN + 2 * OLDER_STEP
    assert len(state.history) == 80
    screen.set_session("main")  # another view starts with a screenful again
    assert state.history_shown == HISTORY_SHOWN


def test_a_link_to_an_old_summary_draws_down_to_it(screen):
    add(screen, *[record(f"pr_{n:03d}", n, status="dismissed") for n in range(40)])
    assert screen.dialogs.open_link("/prompt/pr_005")
    assert screen.state.linked == "pr_005"
    at = [i.id for i in screen.state.history].index("pr_005")
    assert at >= HISTORY_SHOWN and screen.state.history_shown == at + 1


def test_a_new_question_asks_the_timeline_to_show_its_top(screen):
    add(screen, record("pr_a", 1))
    before = screen.state.scroll_to_top
    add(screen, record("pr_b", 2))
    assert screen.state.scroll_to_top == before + 1
    screen.reload()  # nothing new
    assert screen.state.scroll_to_top == before + 1


def test_the_clock_ticks_without_reading_the_store(screen, monkeypatch):
    add(screen, record("pr_a", 1))
    reads = []
    monkeypatch.setattr(screen.core, "timeline", lambda **kw: reads.append(kw) or [])
    for _ in range(5):
        screen.tick()
    assert reads == []


def _no_whole_reads(screen, monkeypatch) -> None:
    """From here on, a read of the whole timeline (or a scan of every prompt) fails."""

    def refuse(*args, **kwargs):
        raise AssertionError("read the whole timeline for one changed prompt")

    for name in ("page", "waiting", "session_activity", "count"):
        monkeypatch.setattr(screen.core.store, name, refuse)
    monkeypatch.setattr(screen, "reload", refuse)


def test_a_change_from_the_core_reads_only_the_prompts_it_names(screen, monkeypatch):
    """#43: a question reaches the screen without reading or re-sorting the history."""
    add(screen, *[record(f"pr_h{n:03d}", n % 50, status="answered") for n in range(300)])
    add(screen, record("pr_wait", 5, session="other"))
    arrived = []
    screen.on_arrival = lambda items: arrived.extend(i.id for i in items)
    top = screen.state.scroll_to_top
    _no_whole_reads(screen, monkeypatch)

    screen.core.store.apply(record("pr_new", 59))
    screen._core_changed(frozenset({"pr_new"}))
    assert [i.id for i in screen.state.waiting] == ["pr_new", "pr_wait"]
    assert arrived == ["pr_new"] and screen.state.scroll_to_top == top + 1
    assert screen.state.sessions == [("main", 1), ("other", 1)]
    assert set(screen.state.selections) == {"pr_new", "pr_wait"}

    screen.core.store.apply(
        record(
            "pr_new",
            59,
            status="answered",
            answers={"target": ["Production"]},
            resolvedAt=NOW.isoformat(),
        )
    )
    screen._core_changed(frozenset({"pr_new"}))
    assert [i.id for i in screen.state.waiting] == ["pr_wait"]
    assert screen.state.history[0].id == "pr_new"
    assert screen.state.history[0].status == DisplayStatus.ANSWERED_ELSEWHERE
    assert screen.state.sessions == [("main", 0), ("other", 1)]
    assert arrived == ["pr_new"]  # resolving is no arrival


def test_changes_applied_one_by_one_show_what_a_reload_shows(screen):
    """The incremental path and the whole read agree, under the session filter too."""
    add(screen, *[record(f"pr_h{n}", n, status="expired") for n in range(0, 20, 2)])
    steps = [
        record("pr_a", 30),
        record("pr_b", 31, session="other"),
        record("pr_a", 30, status="dismissed", resolvedAt=NOW.isoformat()),
        record("pr_c", 25),
        record("pr_b", 31, status="cancelled", session="other"),
        record("pr_d", 40, session="other"),
    ]
    for session in (None, "other"):
        screen.set_session(session)
        for step in steps:
            screen.core.store.apply(step.model_copy(update={"id": f"{step.id}{session}"}))
            screen._core_changed(frozenset({f"{step.id}{session}"}))
            shown = ([i.id for i in screen.state.waiting], [i.id for i in screen.state.history])
            sessions = screen.state.sessions
            screen.reload()
            assert shown == (
                [i.id for i in screen.state.waiting],
                [i.id for i in screen.state.history],
            )
            assert sessions == screen.state.sessions


def test_a_burst_of_changes_is_one_update_and_everything_is_one_reload(screen, monkeypatch):
    queued = []
    screen._schedule = queued.append
    reloads, applied = [], []
    monkeypatch.setattr(screen, "reload", lambda: reloads.append(1))
    monkeypatch.setattr(screen, "apply", lambda ids: applied.append(set(ids)))
    screen._core_changed(frozenset({"pr_a"}))
    screen._core_changed(frozenset({"pr_b"}))
    assert len(queued) == 1
    queued.pop()()
    assert applied == [{"pr_a", "pr_b"}] and reloads == []
    screen._core_changed(frozenset({"pr_c"}))
    screen._core_changed(None)  # anything may have changed
    queued.pop()()
    assert reloads == [1] and applied == [{"pr_a", "pr_b"}]


def test_summary_says_what_was_asked():
    rec = record("pr_a", 1, status="answered", answers={"target": ["Production"]})
    done = TimelineItem(rec, DisplayStatus.ANSWERED_HERE, {"target": ["Production"]})
    assert summary_lines(done, Strings()) == ["Target: Production — Where should this deploy?"]
    assert shorten("x" * 100).endswith("…") and len(shorten("x" * 100)) == 60


# ---- what the person does -----------------------------------------------------------------


def test_tap_then_submit_puts_the_answer_in_the_outbox(screen):
    Preferences(one_tap=False).save(screen.core.store)  # off: a tap chooses, Submit sends
    add(screen, record("pr_a", 1))
    assert not screen.submit("pr_a")  # nothing chosen yet
    screen.tap_option("pr_a", "target", "Production")
    assert screen.state.active_card == "pr_a"
    assert screen.submit("pr_a")
    [entry] = screen.core.store.outbox()
    assert (entry.kind, entry.answers) == ("answer", {"target": ["Production"]})
    assert screen.state.waiting == []
    assert screen.state.history[0].status == DisplayStatus.SENDING


def test_an_expired_prompt_is_answered_anyway_from_its_summary(screen):
    """#44: "Answer anyway" draws its card again (no one-tap: it is sent by Send, or taken
    back by Cancel); Send puts a late answer in the outbox; a prompt cancelled by hand, or
    ended more than a day ago, offers nothing."""
    ended = (NOW - timedelta(minutes=5)).isoformat()
    add(
        screen,
        record("pr_late", 1, status="expired", resolvedAt=ended,
               resolvedBy={"kind": "system", "reason": "expired"}),
        record("pr_hand", 2, status="cancelled", resolvedAt=ended,
               resolvedBy={"kind": "agent", "reason": "changed-mind"}),
        record("pr_old", 3, status="expired",  # its deadline two days ago (#52)
               expiresAt=(NOW - timedelta(days=2)).isoformat(),
               resolvedAt=(NOW - timedelta(days=2)).isoformat()),
    )  # fmt: skip
    for refused in ("pr_hand", "pr_old"):
        screen.answer_anyway(refused)
        assert screen.state.answering_late == ()
    screen.answer_anyway("pr_late")
    assert screen.state.answering_late == ("pr_late",)
    screen.tap_option("pr_late", "target", "Production")  # one question, one choice
    assert screen.state.undo == {} and screen.core.store.outbox() == []  # not sent by a tap
    screen.cancel_late("pr_late")
    assert screen.state.answering_late == () and "pr_late" not in screen.state.selections
    screen.answer_anyway("pr_late")
    screen.tap_option("pr_late", "target", "Production")
    assert screen.submit("pr_late")
    [entry] = screen.core.store.outbox()
    assert (entry.kind, entry.answers) == ("late", {"target": ["Production"]})
    assert screen.state.answering_late == ()
    assert screen.state.history[0].status == DisplayStatus.SENDING


def test_dismiss_waits_for_undo_before_anything_is_sent(screen):
    add(screen, record("pr_a", 1))
    screen.dismiss("pr_a")
    assert "pr_a" in screen.state.undo
    screen.tick()
    assert screen.core.store.outbox() == []
    screen.undo_dismiss("pr_a")
    screen.time.now += UNDO_SECONDS + 1
    screen.tick()
    assert screen.core.store.outbox() == []  # undone: never sent
    screen.dismiss("pr_a")
    screen.time.now += UNDO_SECONDS + 1
    screen.tick()
    [entry] = screen.core.store.outbox()
    assert entry.kind == "dismiss"


def test_closing_the_window_sends_a_dismiss_still_waiting_for_undo(screen):
    add(screen, record("pr_a", 1))
    screen.dismiss("pr_a")
    screen.close()
    assert [e.kind for e in screen.core.store.outbox()] == ["dismiss"]


# ---- keys ---------------------------------------------------------------------------------


def test_keys_do_nothing_on_a_page_nobody_touched(screen):
    add(screen, record("pr_a", 1))
    for key in ("Escape", "1", "Enter"):
        assert not screen.key(key)
    assert screen.state.undo == {} and screen.core.store.outbox() == []


def test_keys_never_act_while_a_dialog_or_a_text_field_has_focus(screen):
    add(screen, record("pr_a", 1, questions=[SINGLE, MULTI]))  # no one-tap answer
    screen.tap_option("pr_a", "target", "Staging (Recommended)")
    screen.dialogs.open("settings")
    for key in "MacBook 2":
        screen.key(key)
    assert not screen.key("Enter")
    screen.dialogs.open(None)
    assert not screen.key("Enter")  # the Enter that closed the dialog submits nothing
    screen.tap_option("pr_a", "target", "Staging (Recommended)")
    screen.set_typing(True)
    assert not screen.key("2") and not screen.key("Escape")
    assert screen.state.selections["pr_a"]["target"].values() == ["Staging (Recommended)"]
    assert screen.core.store.outbox() == [] and screen.state.undo == {}
    assert not screen.key("2", modifiers=True)


def test_keys_act_on_the_card_chosen_from_and_its_active_question(screen):
    add(screen, record("pr_a", 1, questions=[SINGLE, MULTI]), record("pr_b", 2))
    screen.tap_option("pr_a", "features", "Search")
    assert screen.key("3")  # the active question is "features"
    assert screen.state.selections["pr_a"]["features"].values() == ["Search", "Dark mode"]
    screen.focus("pr_a", "target")
    screen.key("2")
    assert screen.state.selections["pr_a"]["target"].values() == ["Production"]
    assert screen.state.selections["pr_b"]["target"].values() == []  # the other card untouched
    assert screen.key("Enter")
    assert [e.prompt_id for e in screen.core.store.outbox()] == ["pr_a"]


def test_escape_on_the_chosen_card_offers_undo(screen):
    add(screen, record("pr_a", 1))
    screen.focus("pr_a")
    assert screen.key("Escape")
    assert "pr_a" in screen.state.undo and screen.state.active_card is None
    assert shortcut(screen.state, "Escape", False) is None  # a second Esc: nothing more


# ---- words --------------------------------------------------------------------------------


def test_persian_ui_writes_its_own_numbers_in_persian_digits():
    fa = Strings("fa")
    assert fa.countdown(125) == "۲:۰۵"
    assert fa("conn_reconnecting", seconds=12, url="http://x").endswith("۱۲ ثانیه دیگر")


def test_persian_text_isolates_each_command_path_and_url_in_its_own_direction():
    """#53 (5): left-to-right code inside Persian drew scrambled (the `--` pieces moved, a
    leading `/` at the end) until each run is isolated (Unicode's LRI/FSI … PDI)."""
    fa, en = Strings("fa"), Strings("en")
    lri, fsi, pdi = "\u2066", "\u2068", "\u2069"
    said = fa("web_one_device")
    assert (
        f"{lri}ASK_USER_APP_DATA=~/ask-user-2 python -m app --web --port 8551 --no-gateway{pdi}"
        in said
    )
    assert "`" not in said  # the marks are the table's, not the person's to read
    assert f"{fsi}http://x{pdi}" in fa("paired", url="http://x")
    pixel = fa("draft_from", device="Pixel 7")
    assert pixel == f"انتخاب‌شده در {fsi}Pixel 7{pdi} · هنوز ارسال نشده"
    # Persian, or the app's own digits, need nothing: already in the text's direction.
    assert fa("draft_from", device="گوشی علی") == "انتخاب‌شده در گوشی علی · هنوز ارسال نشده"
    assert fa("time_left", time=fa.countdown(125)) == "۲:۰۵ مانده"
    assert fa.code("/root/.ask-user/agent-token") == f"{lri}/root/.ask-user/agent-token{pdi}"
    # English: nothing added, and no backticks for a person to read (#53, 8).
    assert en("pair_intro_web").startswith("Run python -m app pair where the gateway runs")
    assert en("paired", url="http://x") == "Paired with http://x."
    assert en.code("/root/x") == "/root/x"
    assert Strings("en").countdown(125) == "2:05"


# ---- links ----------------------------------------------------------------------------------


def test_a_pairing_link_asks_first_and_a_link_already_used_here_is_ignored(screen):
    route = "/pair?url=http%3A%2F%2F192.168.1.20%3A8765&code=k7qf2m9x"
    assert screen.dialogs.open_link(route)
    assert screen.state.dialog == "pair"
    assert screen.state.pair_offer.gateway_url == "http://192.168.1.20:8765"
    assert screen.state.pair_offer.code == "K7QF-2M9X"
    screen.dialogs.open(None)  # Cancel
    assert screen.state.pair_offer is None
    screen.core.store.set_meta("last_pair_link", "http://192.168.1.20:8765 K7QF-2M9X")
    assert screen.dialogs.open_link("askuser://pair?url=http://192.168.1.20:8765&code=K7QF-2M9X")
    assert screen.state.dialog is None  # a reload of the page that paired: nothing to ask


def test_a_prompt_link_chooses_that_card_in_any_session(screen):
    add(screen, record("pr_a", 1, session="one"), record("pr_b", 2, session="two"))
    screen.set_session("two")
    assert screen.dialogs.open_link("askuser://prompt/pr_a")
    state = screen.state
    assert state.session is None and state.linked == "pr_a" and state.active_card == "pr_a"
    assert state.linked_request == 1 and state.awaiting_link is None
    assert screen.key("2") and state.selections["pr_a"]["target"].chosen == ("Production",)


def test_a_prompt_link_waits_for_its_prompt_then_says_when_it_is_not_here(screen):
    from app.device import Connection, ConnectionState

    assert screen.dialogs.open_link("/prompt/pr_later")
    assert screen.state.awaiting_link == "pr_later" and screen.state.notice == ""
    add(screen, record("pr_later", 5))  # it arrives with the next sync
    assert screen.state.linked == "pr_later" and screen.state.active_card == "pr_later"

    screen.dialogs.open_link("/prompt/pr_never")
    screen.core.connection = ConnectionState(Connection.CONNECTED)  # synced, and not there
    screen.reload()
    assert screen.state.awaiting_link is None
    assert screen.state.notice.startswith("That question is not on this device")
    screen.dialogs.close_notice()
    assert screen.state.notice == ""


def test_a_route_that_is_no_link_changes_nothing(screen):
    assert not screen.dialogs.open_link("/")
    assert not screen.dialogs.open_link(None)
    assert screen.state.dialog is None and screen.state.awaiting_link is None


def test_a_card_opened_by_a_link_stays_in_front_when_others_arrive(screen):
    arrivals = []
    screen.on_arrival = arrivals.append
    add(screen, record("pr_a", 1))
    assert screen.dialogs.open_link("askuser://prompt/pr_a")
    before, shown = screen.state.scroll_to_top, screen.state.linked_request
    add(screen, record("pr_b", 2))  # a new question, while the linked card still waits
    assert screen.state.scroll_to_top == before  # no jump away from the card the person opened
    assert screen.state.linked_request == shown + 1  # brought back into view below the new one
    assert [i.id for i in arrivals[-1]] == ["pr_b"]  # but it is still announced
    add(screen, record("pr_a", 1, status="answered"), record("pr_c", 3))
    assert screen.state.scroll_to_top == before + 1  # the linked card is done: back to normal


# ---- settings, the connection line, the history's order -----------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("htp:/127.0.0.1:18999", "must start with http:// or https://"),
        ("127.0.0.1:8765", "must start with http:// or https://"),
        ("http:/127.0.0.1:18999", "no address after"),
        ("https://", "no address after"),
    ],
)
def test_save_refuses_a_gateway_url_that_cannot_be_one_and_says_why(screen, url, says):
    screen.dialogs.open("settings")
    screen.state.draft.gateway_url = url
    screen.state.draft.token = "device-token-for-tests"
    assert not screen.dialogs.save_settings()
    assert says in screen.state.settings_error and url in screen.state.settings_error
    assert screen.state.dialog == "settings"  # still open, to mend it
    assert screen.core.settings.gateway_url == ""  # nothing saved
    screen.state.draft.gateway_url = "http://127.0.0.1:18999/"
    assert screen.dialogs.save_settings()
    assert screen.state.settings_error == "" and screen.state.dialog is None
    assert screen.core.settings.gateway_url == "http://127.0.0.1:18999/"
    assert screen.state.gateway_url == "http://127.0.0.1:18999/"


def test_the_offline_line_names_the_gateway_that_does_not_answer(screen):
    from app.device import Connection, ConnectionState
    from app.ui.chrome import connection_text

    screen.dialogs.open("settings")
    screen.state.draft.gateway_url = "http://10.0.0.7:8765"
    screen.dialogs.save_settings()
    screen.core.connection = ConnectionState(Connection.RECONNECTING)
    screen.tick()
    text = connection_text(screen.state.connection, Strings(), screen.state.gateway_url)
    assert text.startswith("Offline: http://10.0.0.7:8765 does not answer")


def test_a_paired_line_goes_once_the_connection_is_lost_or_settings_change(screen):
    from app.device import Connection, ConnectionState

    screen.state.notice = screen.paired_notice = "Paired with http://10.0.0.7:8765."
    screen.core.connection = ConnectionState(Connection.CONNECTED)
    screen.tick()
    assert screen.state.notice  # connected: it stays
    screen.core.connection = ConnectionState(Connection.UNAUTHORIZED)
    screen.tick()
    assert screen.state.notice == ""
    screen.state.notice = "Port 8765 was taken; the gateway is on 8766."  # another notice
    screen.core.connection = ConnectionState(Connection.RECONNECTING)
    screen.tick()
    assert screen.state.notice.startswith("Port 8765")


def test_history_is_newest_resolved_first(screen):
    def resolved(id_: str, created: int, resolved_minute: int) -> PromptRecord:
        at = (NOW - timedelta(minutes=60 - resolved_minute)).isoformat()
        return record(
            id_, created, status="dismissed", resolvedAt=at, resolvedBy={"kind": "device"}
        )

    add(screen, resolved("pr_old", 1, 50), resolved("pr_new", 20, 30), record("pr_w", 5))
    assert [i.id for i in screen.state.history] == ["pr_old", "pr_new"]
    assert [i.id for i in screen.state.waiting] == ["pr_w"]


def test_a_choice_not_sent_here_is_told_of_when_another_tab_answers(screen):
    add(screen, record("pr_a", 1), record("pr_b", 2))
    screen.tap_option("pr_a", "target", "Production")
    assert screen.submit("pr_a")  # sent from here: nothing to tell
    assert screen.state.notice == ""
    screen.tap_option("pr_b", "target", "Preview")  # chosen, not sent
    answered = record(
        "pr_b",
        2,
        status="answered",
        answers={"target": ["Production"]},
        resolvedAt=NOW.isoformat(),
        resolvedBy={"kind": "device", "deviceId": "other-tab"},
    )
    add(screen, answered)
    assert screen.state.notice.startswith("“Target” was answered elsewhere")


def test_a_choice_not_sent_before_the_deadline_points_to_answer_anyway(screen):
    """#44: a card with a choice expires before it was sent: nobody answered it elsewhere, and
    Answer anyway can still send it."""
    Preferences(one_tap=False).save(screen.core.store)  # a tap chooses; Submit would send
    add(screen, record("pr_c", 3))
    screen.tap_option("pr_c", "target", "Preview")
    expired = record(
        "pr_c",
        3,
        status="expired",
        resolvedAt=NOW.isoformat(),
        resolvedBy={"kind": "system", "reason": "expired"},
    )
    add(screen, expired)
    assert screen.state.notice.startswith("“Target” ran out of time")
    assert "Answer anyway" in screen.state.notice


def test_choices_in_one_window_show_in_the_others_marked_not_sent(screen):
    """v1.4 drafts: the app's windows (a browser's tabs) share one device; what is chosen in
    one shows in the others at once, marked as not sent; the last change wins; the person's
    own change takes the mark away; and when the other window sends it, nothing here says a
    choice was lost."""
    other = Screen(screen.core, monotonic=screen.time)
    try:
        add(screen, record("pr_a", 1, questions=[SINGLE, MULTI]))
        screen.tap_option("pr_a", "target", "Production")
        screen.set_other("pr_a", "features", "Sync")
        assert other.state.selections["pr_a"].answers() == {
            "target": ["Production"],
            "features": ["Sync"],
        }
        assert other.state.drafted["pr_a"].said(other.strings) == (
            "Chosen in another window · not sent yet"
        )
        # Said in the language of the moment: a switch to Persian changes the line at once.
        assert other.state.drafted["pr_a"].said(Strings("fa")) == (
            "انتخاب‌شده در پنجره‌ای دیگر · هنوز ارسال نشده"
        )
        assert screen.state.drafted == {}  # its own choice
        other.tap_option("pr_a", "target", "Preview")  # the last change wins, both ways
        assert other.state.drafted == {}
        assert screen.state.selections["pr_a"].answers()["target"] == ["Preview"]
        assert screen.state.drafted["pr_a"].said(screen.strings) == (
            "Chosen in another window · not sent yet"
        )
        other.tap_option("pr_a", "features", "Export")
        assert other.submit("pr_a")
        assert "pr_a" not in screen.state.selections and screen.state.notice == ""
    finally:
        other.close()


def test_a_language_saved_in_one_tab_reaches_the_others(screen):
    other = Screen(screen.core, monotonic=screen.time)  # a second tab: the same device core
    try:
        screen.dialogs.open("settings")
        screen.state.draft.language = "fa"
        assert screen.dialogs.save_settings()
        assert screen.state.language == "fa" and other.state.language == "fa"
    finally:
        other.close()


# ---- one tap ------------------------------------------------------------------------------


def test_one_tap_answers_a_single_question_after_its_undo_time(screen):
    add(screen, record("pr_a", 1))
    screen.set_option("pr_a", "target", "Production", True)
    screen.tap_option("pr_a", "target", "Production")  # the row's tap and the radio's change
    assert "pr_a" in screen.state.undo and screen.state.answering == ("pr_a",)
    assert screen.core.store.outbox() == []  # nothing sent yet
    screen.undo_dismiss("pr_a")
    assert screen.state.undo == {} and screen.state.answering == ()
    assert screen.state.selections["pr_a"]["target"].values() == ["Production"]  # kept
    screen.set_option("pr_a", "target", "Preview", True)
    screen.time.now += UNDO_SECONDS - 1
    screen.tick()
    assert screen.core.store.outbox() == []
    screen.time.now += 1.5
    screen.tick()
    [entry] = screen.core.store.outbox()
    assert (entry.kind, entry.answers) == ("answer", {"target": ["Preview"]})


def test_one_tap_waits_for_submit_with_several_questions_or_a_multiple_choice(screen):
    add(
        screen,
        record("pr_two", 1, questions=[SINGLE, MULTI]),
        record("pr_multi", 2, questions=[MULTI]),
    )
    screen.set_option("pr_two", "target", "Production", True)
    screen.tap_option("pr_multi", "features", "Search")
    assert screen.state.undo == {} and screen.core.store.outbox() == []


def test_a_permission_is_never_decided_by_one_tap_only_by_submit(screen):
    """#54 (4): a permission or a plan waits for Submit, even with one tap on; the person
    decides in front of what it allows."""
    permission = {
        "id": "decision",
        "header": "Permission",
        "question": "Claude Code asks to run this command.",
        "options": [{"label": "Allow once"}, {"label": "Allow always"}, {"label": "Deny"}],
    }
    stop = {"program": "Claude Code", "command": "npm test", "always": "Allow always"}
    add(screen, record("pr_p", 1, questions=[permission], kind="permission", stop=stop))
    screen.tap_option("pr_p", "decision", "Allow always")
    assert screen.state.undo == {} and screen.core.store.outbox() == []
    screen.tap_option("pr_p", "decision", "Allow once")
    assert screen.state.undo == {} and screen.core.store.outbox() == []
    assert screen.submit("pr_p")
    [entry] = screen.core.store.outbox()
    assert (entry.kind, entry.answers) == ("answer", {"decision": ["Allow once"]})


def test_one_tap_is_a_setting_kept_by_the_device(screen):
    screen.dialogs.open("settings")
    screen.state.draft.one_tap = False
    assert screen.dialogs.save_settings()
    add(screen, record("pr_a", 1))
    screen.set_option("pr_a", "target", "Production", True)
    assert screen.state.undo == {}
    again = Screen(screen.core, monotonic=screen.time)  # another tab, or the next start
    try:
        assert again.state.one_tap is False
    finally:
        again.close()


# ---- the browser's docked stepper -----------------------------------------------------------


@pytest.fixture
def tab(screen):
    """A browser tab on the same device core, in a wide window: the stepper is its default."""
    made = Screen(screen.core, monotonic=screen.time, web=True)
    made.set_size(1440, 900)
    made.time = screen.time  # type: ignore[attr-defined]
    yield made
    made.close()


def test_a_browser_docks_the_stepper_when_wide_and_stacks_cards_at_phone_width(screen, tab):
    assert screen.state.stepper is False  # the phone and desktop apps always stack questions
    assert tab.state.stepper is True  # 1440 px
    tab.set_size(375, 667)  # a phone's browser, or the window made narrow
    assert tab.state.stepper is False
    tab.set_size(WIDE_WINDOW, 800)
    assert tab.state.stepper is True
    screen.set_size(1440, 900)  # the desktop app, however wide, stacks them
    assert screen.state.stepper is False


def test_the_layout_is_a_setting_of_the_device_that_overrides_the_window(screen, tab):
    tab.dialogs.open("settings")
    assert tab.state.draft.layout == AUTO
    tab.state.draft.layout = CARDS
    assert tab.dialogs.save_settings()
    assert tab.state.stepper is False  # wide, but cards were chosen
    assert Preferences.load(screen.core.store).web_layout == CARDS
    again = Screen(screen.core, web=True)  # another tab, or the next start
    try:
        again.set_size(1440, 900)
        assert again.state.stepper is False
        again.dialogs.open("settings")
        again.state.draft.layout = STEPPER
        assert again.dialogs.save_settings()
        again.set_size(320, 568)  # chosen: the stepper even on a phone
        assert again.state.stepper is True
    finally:
        again.close()
    screen.dialogs.open("settings")  # the app's own Settings never write the browser's layout
    screen.state.draft.layout = CARDS
    assert screen.dialogs.save_settings()
    assert Preferences.load(screen.core.store).web_layout == STEPPER


def test_the_stepper_shows_the_oldest_waiting_prompt_or_the_one_a_link_opened(tab):
    add(tab, record("pr_old", 1), record("pr_new", 5), record("pr_mid", 3))
    assert docked(tab.state).id == "pr_old"
    tab.dialogs.open_link("askuser://prompt/pr_mid")
    assert docked(tab.state).id == "pr_mid"
    tab.state.stepper = False
    assert docked(tab.state) is None


def test_next_waits_for_an_answer_and_back_keeps_every_choice(tab):
    add(tab, record("pr_a", 1, questions=[SINGLE, MULTI]))
    assert not tab.step("pr_a", forward=True)  # nothing chosen yet
    assert not tab.step("pr_a", forward=False)  # already on the first
    tab.tap_option("pr_a", "target", "Preview")
    assert tab.state.undo == {}  # two questions: no one-tap answer
    assert tab.step("pr_a", forward=True)
    assert tab.state.selections["pr_a"].active == "features"
    tab.tap_option("pr_a", "features", "Export")
    assert not tab.step("pr_a", forward=True)  # the last question
    assert tab.step("pr_a", forward=False)
    answers = tab.state.selections["pr_a"]
    assert answers.active == "target"
    assert answers.answers() == {"target": ["Preview"], "features": ["Export"]}


def test_in_the_stepper_enter_goes_on_to_the_next_question_then_submits(tab):
    add(tab, record("pr_a", 1, questions=[SINGLE, MULTI]))
    tab.tap_option("pr_a", "target", "Production")
    assert tab.key("Enter")
    assert tab.state.selections["pr_a"].active == "features"
    assert tab.core.store.outbox() == []  # Enter went on; it sent nothing
    assert not tab.key("Enter")  # "features" has no answer yet: Enter waits
    assert tab.key("2")  # the keys choose in the question on screen
    assert tab.state.selections["pr_a"]["features"].values() == ["Export"]
    assert tab.key("Enter")
    [entry] = tab.core.store.outbox()
    assert entry.answers == {"target": ["Production"], "features": ["Export"]}


def test_in_the_stepper_a_tap_on_a_question_no_longer_shown_changes_nothing(tab):
    """Enter on an option that still had the focus steps on, and the browser then taps that
    option too: the tap arrives for a question the stepper no longer shows (seen in CI under
    load: the stepper went back to question 1 with the focused option chosen)."""
    add(tab, record("pr_a", 1, questions=[SINGLE, MULTI]))
    tab.tap_option("pr_a", "target", "Production")
    tab.key("3")  # the keys choose Preview
    assert tab.key("Enter")
    tab.tap_option("pr_a", "target", "Production")  # stale: from the Enter
    tab.set_option("pr_a", "target", "Production", True)
    tab.set_other("pr_a", "target", "typed")
    answers = tab.state.selections["pr_a"]
    assert answers.active == "features"
    assert answers.answers() == {"target": ["Preview"], "features": []}
    tab.tap_option("pr_a", "features", "Export")  # the question on screen still takes taps
    assert tab.state.selections["pr_a"].answers()["features"] == ["Export"]


def test_a_card_submits_on_enter_with_any_question_last_touched(screen):
    add(screen, record("pr_a", 1, questions=[SINGLE, MULTI]))
    screen.tap_option("pr_a", "features", "Search")
    screen.tap_option("pr_a", "target", "Production")  # the first question last touched
    assert screen.key("Enter")
    [entry] = screen.core.store.outbox()
    assert entry.answers == {"target": ["Production"], "features": ["Search"]}


def test_ctrl_z_takes_back_the_newest_dismiss_or_one_tap_answer(screen):
    add(screen, record("pr_a", 1), record("pr_b", 2))
    screen.set_option("pr_a", "target", "Production", True)  # one tap: sent in 5 s
    screen.time.now += 1
    screen.dismiss("pr_b")
    screen.set_typing(True)
    assert not screen.undo_last()  # the text field's own undo
    screen.set_typing(False)
    assert screen.undo_last()
    assert list(screen.state.undo) == ["pr_a"]  # the newest (the dismiss) was taken back
    assert screen.undo_last()
    assert screen.state.undo == {} and screen.state.answering == ()
    assert not screen.undo_last()
    screen.time.now += UNDO_SECONDS + 1
    screen.tick()
    assert screen.core.store.outbox() == []


def test_a_notice_naming_a_gateway_process_goes_once_that_process_has_ended():
    """#44 (5): Settings → Connect an agent named, in red, a gateway process that no longer
    ran. The notice holds while the process runs, and says nothing once it has ended; a
    notice that names no process stays."""
    import subprocess
    import sys

    from app.ui.state import AppOptions

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    said = "A gateway already runs for ~/data (process N): this app uses it"
    assert AppOptions(notice=said, notice_pid=os.getpid()).current_notice == said
    assert AppOptions(notice=said, notice_pid=ended.pid).current_notice is None
    port = "Port 8765 was taken by another program, so this gateway is on :8766"
    assert AppOptions(notice=port).current_notice == port


def test_keys_act_on_a_card_brought_back_by_undo_and_enter_sends_a_one_tap_answer(screen):
    """#44 (3): after Ctrl+Z the restored card ignored 1-4, Esc and Enter until clicked; a
    one-tap answer made from the keyboard waits for its Undo time, and Enter sends it now."""
    add(screen, record("pr_a", 1, questions=[SINGLE, MULTI]), record("pr_b", 2))
    screen.focus("pr_a")
    assert screen.key("Escape") and "pr_a" in screen.state.undo
    assert screen.undo_last()  # Ctrl+Z
    assert screen.key("2")  # the keys act on it again, without a click
    assert screen.state.selections["pr_a"]["target"].values() == ["Production"]
    assert screen.key("Escape") and "pr_a" in screen.state.undo
    assert screen.undo_last()
    assert screen.key("Enter") is False  # incomplete (the second question): nothing sent
    assert screen.core.store.outbox() == []

    screen.focus("pr_b", "target")
    screen.set_option("pr_b", "target", "Production", True)  # Space on the focused radio
    assert "pr_b" in screen.state.undo and screen.core.store.outbox() == []  # one tap, Undo
    assert screen.key("Enter")  # sent now, not in five seconds
    [entry] = screen.core.store.outbox()
    assert (entry.prompt_id, entry.kind) == ("pr_b", "answer")
    assert "pr_b" not in screen.state.undo
