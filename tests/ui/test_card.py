"""The card, summary and timeline controls and their handlers, without a screen."""

from __future__ import annotations

import flet as ft
import pytest

from app.device import DisplayStatus, TimelineItem
from app.protocol import PromptRecord
from app.ui.card import PromptCard
from app.ui.strings import Strings, countdown
from app.ui.summary import SummaryTile, summary_lines
from app.ui.timeline import Timeline

QUESTIONS = [
    {
        "id": "target",
        "header": "Target",
        "question": "Where should this deploy?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe default"},
            {"label": "Production"},
        ],
    },
    {
        "id": "features",
        "header": "Features",
        "question": "Which features?",
        "multiSelect": True,
        "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Dark mode"}],
    },
    {
        "id": "docs",
        "header": "زبان",
        "question": "مستندات به کدام زبان باشد؟",
        "options": [{"label": "فارسی"}, {"label": "انگلیسی"}],
    },
]


def item(
    status=DisplayStatus.PENDING, questions=QUESTIONS, answers=None, left=125.0, id_="pr_1"
) -> TimelineItem:
    record = PromptRecord.model_validate(
        {
            "id": id_,
            "sessionKey": "main",
            "questions": questions,
            "status": "pending" if status == DisplayStatus.PENDING else "answered",
            "createdAt": "2026-12-02T10:00:00.000Z",
            "expiresAt": "2026-12-02T10:15:00.000Z",
            "answers": answers,
        }
    )
    return TimelineItem(record, status, left, answers)


class Recorder:
    def __init__(self):
        self.submitted: list = []
        self.dismissed: list = []

    def card(self, it=None) -> PromptCard:
        return PromptCard(
            it or item(),
            Strings(),
            lambda pid, a: self.submitted.append((pid, a)),
            self.dismissed.append,
        )


def click(control: ft.Control) -> None:
    control.on_click(ft.Event(name="click", control=control))


def change(control: ft.Control, value) -> None:
    control.value = value
    control.on_change(ft.Event(name="change", control=control))


def texts(control) -> list[str]:
    """Every string shown inside a control tree."""
    found = []

    def walk(c):
        for attr in ("value", "label"):
            value = getattr(c, attr, None)
            if isinstance(value, str) and value:
                found.append(value)
        for child_attr in ("content", "controls"):
            child = getattr(c, child_attr, None)
            if isinstance(child, list):
                for x in child:
                    walk(x)
            elif isinstance(child, ft.Control):
                walk(child)
            elif isinstance(child, str):
                found.append(child)

    walk(control)
    return found


def test_all_questions_are_stacked_in_one_card():
    card = Recorder().card()
    shown = texts(card.view)
    assert len(card.blocks) == 3
    for text in (
        "1. Where should this deploy?",
        "2. Which features?",
        "Target",
        "Features",
        "Safe default",
        "Submit",
        "Dismiss",
        "2:05 left",
    ):
        assert text in shown, text
    assert shown.count("Other") == 3  # a free-text field for every question


def test_submit_is_enabled_only_when_every_question_has_an_answer():
    rec = Recorder()
    card = rec.card()
    target, features, docs = card.blocks
    assert card.submit_button.disabled
    change(target.group, "Production")
    change(features.checkboxes["Export"], True)
    assert card.submit_button.disabled
    change(docs.other, "  هر دو  ")
    assert not card.submit_button.disabled
    click(card.submit_button)
    assert rec.submitted == [
        ("pr_1", {"target": ["Production"], "features": ["Export"], "docs": ["هر دو"]})
    ]


def test_single_select_other_and_option_clear_each_other():
    card = Recorder().card()
    target = card.blocks[0]
    target.choose("Production")
    assert target.group.value == "Production"
    change(target.other, "Canary")
    assert target.group.value is None
    assert card.answers["target"].values() == ["Canary"]
    click(target.rows[0])  # tapping anywhere on the option's row chooses it
    assert target.group.value == "Staging (Recommended)"
    assert target.other.value == ""
    assert card.answers["target"].values() == ["Staging (Recommended)"]


def test_multi_select_options_and_other_combine():
    card = Recorder().card()
    features = card.blocks[1]
    change(features.checkboxes["Search"], True)
    click(features.rows[2])
    change(features.other, "Offline mode")
    assert card.answers["features"].values() == ["Search", "Dark mode", "Offline mode"]
    click(features.rows[0])  # a second tap unticks
    assert features.checkboxes["Search"].value is False
    assert card.answers["features"].values() == ["Dark mode", "Offline mode"]


def test_dismiss_is_always_there():
    rec = Recorder()
    card = rec.card()
    assert not card.dismiss_button.disabled
    click(card.dismiss_button)
    assert rec.dismissed == ["pr_1"]


def test_number_keys_choose_in_the_active_question():
    card = Recorder().card()
    target, features, _ = card.blocks
    assert target.press_number(2) and target.group.value == "Production"
    card.activate(features)
    assert card.active.press_number(3) and features.checkboxes["Dark mode"].value
    assert not card.active.press_number(4)  # only three options


def test_right_to_left_question_is_laid_out_rtl_in_an_english_ui():
    card = Recorder().card()
    assert [b.view.rtl for b in card.blocks] == [False, False, True]


def test_countdown_ticks_to_the_deadline():
    card = Recorder().card()
    card.tick(item(left=59.2))
    assert card.countdown.value == "1:00 left"
    assert [countdown(s) for s in (0, 0.1, 61, 600)] == ["0:00", "0:01", "1:01", "10:00"]


def test_summary_lines_and_status():
    answered = item(
        DisplayStatus.ANSWERED_HERE,
        answers={"target": ["Production"], "features": ["Search", "Export"], "docs": ["فارسی"]},
    )
    assert summary_lines(answered, Strings()) == [
        "Target: Production",
        "Features: Search, Export",
        "زبان: فارسی",
    ]
    shown = texts(SummaryTile(answered, Strings()).view)
    assert "Answered" in shown and "Features: Search, Export" in shown
    dismissed = item(DisplayStatus.DISMISSED)
    assert summary_lines(dismissed, Strings())[0] == "Target: —"
    assert "Dismissed" in texts(SummaryTile(dismissed, Strings()).view)
    assert "رد شد" in texts(SummaryTile(dismissed, Strings("fa")).view)


@pytest.mark.parametrize(
    "status, label",
    [
        (DisplayStatus.SENDING, "Sending…"),
        (DisplayStatus.EXPIRED, "Expired"),
        (DisplayStatus.CANCELLED, "Cancelled"),
        (DisplayStatus.ANSWERED_ELSEWHERE, "Answered elsewhere"),
    ],
)
def test_every_status_has_words(status, label):
    assert label in texts(SummaryTile(item(status), Strings()).view)


def test_timeline_keeps_a_half_filled_card_and_collapses_it_when_resolved():
    rec = Recorder()
    timeline = Timeline(Strings(), lambda *a: rec.submitted.append(a), rec.dismissed.append)
    assert timeline.render([item()])
    card = timeline.cards["pr_1"]
    card.blocks[0].choose("Production")
    assert not timeline.render([item(left=100)])  # the same card, still half filled
    assert timeline.cards["pr_1"] is card and card.blocks[0].group.value == "Production"
    assert timeline.render(
        [item(DisplayStatus.ANSWERED_HERE, answers={"target": ["X"]}), item(id_="pr_2")]
    )
    assert list(timeline.cards) == ["pr_2"]
    assert "Target: X" in texts(timeline.view)


def test_persian_strings_make_the_layout_rtl():
    assert Strings("fa").rtl and not Strings("en").rtl
    assert Strings("fa")("submit") == "ارسال"
