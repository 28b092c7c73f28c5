"""The browser's docked stepper (the specification's web Control UI): the oldest waiting prompt
(or the one the person picked from the others waiting) in a panel at the bottom of the window,
one question at a time — "Question 2 of 3", Back and Next, Submit on the last, Dismiss always
— that collapses to a thin bar with who asks, the question's header and count. The phone and
desktop apps stack every question in cards instead (card.py); both render the same
`QuestionBlock` and act through the same `Screen`.
"""

from __future__ import annotations

import math

import flet as ft

from app.device import TimelineItem
from app.protocol import Question, is_rtl
from app.protocol.asker import asker_label
from app.protocol.selection import CardAnswers
from app.protocol.strings import Strings

from .card import (
    AskerLine,
    Countdown,
    DraftLine,
    QuestionBlock,
    UndoRow,
    dismiss_button,
    submit_button,
)
from .chrome import icon_button
from .rules import docked, one_tap_answer
from .screen import Screen
from .state import DraftedElsewhere, ScreenState
from .stop_view import StopBlock
from .theme import TAP
from .timeline import MAX_WIDTH, side_padding

APP_BAR = 56  # the app bar above the timeline and the panel
# The panel's most, as a share of the window under the app bar: a short window (a phone) is
# mostly the question; a tall one keeps the timeline in sight above it.
SHORT_WINDOW, SHORT_SHARE, TALL_SHARE = 700, 0.85, 0.7
# Sizes the estimate adds up (logical pixels): the bar, the buttons and the panel's padding;
# an option row; a line of an option's text; the Other field; the header row.
CHROME, OPTION_ROW, OPTION_LINE, OTHER_FIELD, HEADER_ROW = 148, 48, 22, 72, 30
QUESTION_LINE, CHAR_WIDTH, SLACK = 25, 8.6, 24


def _lines(text: str, width: float, char_width: float = CHAR_WIDTH) -> int:
    return max(1, math.ceil(len(text) * char_width / max(width, 1)))


def panel_height(question: Question, width: float, height: float) -> float:
    """How tall the open panel is: what its question needs, at most its share of the window.

    Flet 1.0.5 has no box with only a maximum height, so what the question needs is estimated
    from its text and the width (generously: a little blank is better than a scroll), and the
    question scrolls inside the panel when it needs more than the window can give.
    """
    text_width = min(width or MAX_WIDTH, MAX_WIDTH) - 2 * side_padding(width)
    needed = CHROME + HEADER_ROW + OTHER_FIELD + SLACK
    needed += QUESTION_LINE * _lines(question.question, text_width, CHAR_WIDTH * 1.1)
    for option in question.options:
        rows = _lines(option.label, text_width - 56) + (
            _lines(option.description, text_width - 56) if option.description else 0
        )
        needed += max(OPTION_ROW, 8 + OPTION_LINE * rows) + 2
    if not height:
        return needed
    share = SHORT_SHARE if height < SHORT_WINDOW else TALL_SHARE
    return min(needed, max(0.0, height - APP_BAR) * share)


def others_waiting(
    shown: TimelineItem, waiting: list[TimelineItem], screen: Screen, strings: Strings
) -> list[ft.Control]:
    """ "2 more waiting ▾": a menu of the others, each by who asks and what, to pick the one
    the panel shows (#53: only the oldest could be reached). Nothing when none waits."""
    others = [i for i in reversed(waiting) if i.id != shown.id]  # oldest first, as they queue
    if not others:
        return []

    def entry(item: TimelineItem) -> ft.PopupMenuItem:
        asker = asker_label(item.record.session_key, item.record.agent_id)
        first = item.record.questions[0]
        return ft.PopupMenuItem(
            content=ft.Text(
                f"{asker} · {first.header}: {first.question}",
                max_lines=2,
                overflow=ft.TextOverflow.ELLIPSIS,
                rtl=is_rtl(first.question),
            ),
            on_click=lambda _: screen.dock(item.id),
        )

    return [
        ft.PopupMenuButton(
            content=ft.Row(
                [
                    ft.Text(
                        strings("more_waiting", count=len(others)),
                        size=13,
                        color=ft.Colors.PRIMARY,
                        weight=ft.FontWeight.W_600,
                    ),
                    ft.Icon(ft.Icons.ARROW_DROP_DOWN, color=ft.Colors.PRIMARY, size=20),
                ],
                spacing=0,
                tight=True,
            ),
            items=[entry(i) for i in others],
            tooltip=strings("pick_waiting"),  # read before the count; Flutter's: "Show menu"
            size_constraints=ft.BoxConstraints(min_height=TAP, max_width=420),
        )
    ]


@ft.component
def StepBar(
    item: TimelineItem, step: int, waiting: list[TimelineItem], screen: Screen, strings: Strings
) -> ft.Control:
    """Where the person is: "Question 2 of 3", the time left, who asks, the others waiting
    (to pick from); and Hide."""
    count = len(item.record.questions)
    words: list[ft.Control] = [
        ft.Text(strings("step_of", n=step + 1, count=count), size=14, weight=ft.FontWeight.W_600),
        Countdown(item.record, strings, screen.clock),
        AskerLine(item.record),
        *others_waiting(item, waiting, screen, strings),
    ]
    return ft.Row(
        [
            ft.Row(
                words,
                spacing=12,
                run_spacing=2,
                wrap=True,
                expand=True,
                vertical_alignment=ft.CrossAxisAlignment.CENTER,
            ),
            icon_button(
                ft.Icons.KEYBOARD_ARROW_DOWN,
                strings("collapse_question"),
                lambda _: screen.collapse_stepper(True),
            ),
        ],
        vertical_alignment=ft.CrossAxisAlignment.CENTER,
        rtl=strings.rtl,
    )


@ft.component
def StepButtons(
    prompt_id: str, answers: CardAnswers, screen: Screen, strings: Strings
) -> ft.Control:
    """Dismiss at the start; Back, then Next (once this question is answered) or, on the last
    question, Submit (once every question is)."""
    order = list(answers.by_id)
    step = order.index(answers.active)
    last = step == len(order) - 1
    forward = (
        submit_button(prompt_id, answers.complete, screen, strings)
        if last
        else ft.FilledButton(
            content=strings("next"),
            icon=ft.Icons.ARROW_FORWARD,
            on_click=lambda _: screen.step(prompt_id, forward=True),
            disabled=not answers[answers.active].complete,
            height=TAP,
            key="next",
        )
    )
    return ft.Row(
        [
            dismiss_button(prompt_id, screen, strings),
            ft.Row(
                [
                    ft.TextButton(
                        strings("back"),
                        on_click=lambda _: screen.step(prompt_id, forward=False),
                        disabled=step == 0,
                        visible=len(order) > 1,
                        height=TAP,
                    ),
                    forward,
                ],
                spacing=8,
                tight=True,
            ),
        ],
        alignment=ft.MainAxisAlignment.SPACE_BETWEEN,
        wrap=True,
        run_spacing=8,
        rtl=strings.rtl,
    )


@ft.component
def CollapsedBar(
    item: TimelineItem, step: int, waiting: list[TimelineItem], screen: Screen, strings: Strings
) -> ft.Control:
    """The thin bar the panel folds into: who asks, the question's header and where the
    person is, and the others waiting (to pick from)."""
    question = item.record.questions[step]
    where = strings("step_of", n=step + 1, count=len(item.record.questions))
    asker = asker_label(item.record.session_key, item.record.agent_id)
    return ft.Container(
        ft.Row(
            [
                ft.Icon(ft.Icons.HELP_OUTLINE, color=ft.Colors.PRIMARY, size=20),
                ft.Text(
                    f"{asker} · {question.header} · {where}",
                    size=14,
                    weight=ft.FontWeight.W_600,
                    max_lines=1,
                    overflow=ft.TextOverflow.ELLIPSIS,
                    expand=True,
                ),
                *others_waiting(item, waiting, screen, strings),
                Countdown(item.record, strings, screen.clock),
                icon_button(
                    ft.Icons.KEYBOARD_ARROW_UP,
                    strings("expand_question"),
                    lambda _: screen.collapse_stepper(False),
                ),
            ],
            spacing=8,
            vertical_alignment=ft.CrossAxisAlignment.CENTER,
            rtl=strings.rtl,
        ),
        on_click=lambda _: screen.collapse_stepper(False),
    )


def stop_block(item: TimelineItem, strings: Strings) -> list[ft.Control]:
    """A permission's or a plan's stop, above its one question (stop_view.py)."""
    record = item.record
    if record.stop is None:
        return []
    return [StopBlock(record.stop, strings, key="stop")]  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so


def drafted_line(where: DraftedElsewhere | None, strings: Strings) -> list[ft.Control]:
    """Where the shown choices were made, when not here (not sent)."""
    return [] if where is None else [DraftLine(where, strings)]


@ft.component
def StepperPanel(screen: Screen, state: ScreenState, strings: Strings) -> ft.Control:
    """The panel docked under the timeline; hidden while nothing waits (or in cards layout)."""
    item = docked(state)
    children: list[ft.Control] = []
    height: float | None = None
    if item is not None and item.id in state.undo:
        answered = one_tap_answer(state, item.id)
        children = [
            UndoRow(
                item.id, state.undo[item.id], screen, strings, screen.clock, answered, key="undo"
            )
        ]
    elif item is not None:
        answers = state.selections[item.id]
        step = list(answers.by_id).index(answers.active)
        question = item.record.questions[step]
        if state.stepper_collapsed:
            children = [CollapsedBar(item, step, state.waiting, screen, strings, key="bar")]  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
        else:
            height = panel_height(question, state.width, state.height)
            error = state.errors.get(item.id)
            children = [
                StepBar(item, step, state.waiting, screen, strings, key="where"),  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                ft.Column(
                    [
                        *stop_block(item, strings),
                        QuestionBlock(  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                            item.id,
                            question,
                            None,
                            answers[question.id],
                            screen,
                            strings,
                            key=f"{item.id}-{question.id}",
                        ),
                        *drafted_line(state.drafted.get(item.id), strings),
                        ft.Text(
                            error or "", color=ft.Colors.ERROR, rtl=strings.rtl, visible=bool(error)
                        ),
                    ],
                    scroll=ft.ScrollMode.AUTO,
                    expand=True,
                    horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
                    key="question",
                ),
                StepButtons(item.id, answers, screen, strings, key="buttons"),  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
            ]
    side = side_padding(state.width)
    return ft.Container(
        ft.Column(
            children,
            spacing=8,
            tight=height is None,
            horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
        ),
        visible=item is not None,
        height=height,
        padding=ft.Padding.only(left=side, right=side, top=4, bottom=8),
        bgcolor=ft.Colors.SURFACE_CONTAINER,
        border=ft.Border.only(top=ft.BorderSide(1, ft.Colors.OUTLINE_VARIANT)),
    )
