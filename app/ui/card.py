"""The prompt card: every question of a prompt stacked, options as full-width touch rows,
an always-present Other field, a countdown, Submit and Dismiss.

The card renders one pending timeline item and emits intents (submit, dismiss); the
selection lives in CardAnswers, so it is tested without a screen.
"""

from __future__ import annotations

from collections.abc import Callable

import flet as ft

from app.device import TimelineItem
from app.protocol import Question, is_rtl

from .answers import CardAnswers
from .strings import Strings, countdown
from .theme import TAP

SubmitHandler = Callable[[str, dict[str, list[str]]], None]
DismissHandler = Callable[[str], None]


class QuestionBlock:
    """One question: header label, sentence, options, Other field."""

    def __init__(self, card: PromptCard, question: Question, number: int) -> None:
        self.card = card
        self.question = question
        self.state = card.answers[question.id]
        s = card.strings
        rtl = is_rtl(question.question)
        self.rows: list[ft.Control] = []
        self.checkboxes: dict[str, ft.Checkbox] = {}
        for option in question.options:
            if question.multi_select:
                box = ft.Checkbox(
                    label=option.label,
                    value=False,
                    data=option.label,
                    on_change=self._on_check,
                    height=TAP,
                )
                self.checkboxes[option.label] = box
                selector: ft.Control = box
            else:
                selector = ft.Radio(value=option.label, label=option.label, height=TAP)
            body: list[ft.Control] = [selector]
            if option.description:
                body.append(
                    ft.Container(
                        ft.Text(option.description, size=13, color=ft.Colors.ON_SURFACE_VARIANT),
                        padding=ft.Padding.only(
                            left=0 if rtl else 48, right=48 if rtl else 0, bottom=6
                        ),
                    )
                )
            self.rows.append(
                ft.Container(
                    content=ft.Column(body, spacing=0, tight=True),
                    data=option.label,
                    on_click=self._on_row_click,
                    border_radius=12,
                    ink=True,
                    padding=ft.Padding.symmetric(horizontal=4, vertical=2),
                    alignment=ft.Alignment.CENTER_LEFT if not rtl else ft.Alignment.CENTER_RIGHT,
                )
            )
        options: ft.Control = ft.Column(
            self.rows,
            spacing=2,
            tight=True,
            horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
        )
        self.group: ft.RadioGroup | None = None
        if not question.multi_select:
            self.group = ft.RadioGroup(content=options, on_change=self._on_radio)
            options = self.group
        self.other = ft.TextField(
            label=s("other"),
            hint_text=s("other_hint"),
            dense=False,
            on_change=self._on_other,
            on_focus=self._on_focus,
            on_submit=lambda e: card.submit(),
            rtl=rtl,
            text_align=ft.TextAlign.RIGHT if rtl else None,
        )
        header = ft.Container(
            ft.Text(
                question.header,
                size=12,
                weight=ft.FontWeight.W_600,
                color=ft.Colors.ON_SECONDARY_CONTAINER,
            ),
            bgcolor=ft.Colors.SECONDARY_CONTAINER,
            border_radius=8,
            padding=ft.Padding.symmetric(horizontal=8, vertical=2),
        )
        prefix = f"{number}. " if len(card.item.record.questions) > 1 else ""
        self.view = ft.Column(
            [
                ft.Row(
                    [
                        header,
                        ft.Text(
                            s("choose_many") if question.multi_select else s("choose_one"),
                            size=12,
                            color=ft.Colors.ON_SURFACE_VARIANT,
                        ),
                    ],
                    spacing=8,
                ),
                ft.Text(prefix + question.question, size=17, weight=ft.FontWeight.W_500),
                options,
                self.other,
            ],
            spacing=8,
            rtl=rtl,
            horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
        )

    # intents from the controls -----------------------------------------------------------

    def _on_radio(self, e: ft.Event) -> None:
        self.choose(e.control.value)

    def _on_check(self, e: ft.Event) -> None:
        label = e.control.data
        if e.control.value:
            self.state.choose(label)
        else:
            self.state.unchoose(label)
        self.card.activate(self)
        self.card.refresh_submit()

    def _on_row_click(self, e: ft.Event) -> None:
        label = e.control.data
        if self.question.multi_select:
            self.toggle(label)
        else:
            self.choose(label)

    def _on_other(self, e: ft.Event) -> None:
        self.state.set_other(e.control.value or "")
        if self.group is not None and self.state.other.strip():
            self.group.value = None  # typing your own answer replaces the chosen option
        self.card.activate(self)
        self.card.refresh_submit()

    def _on_focus(self, e: ft.Event) -> None:
        self.card.activate(self)

    # what the card and the keyboard do --------------------------------------------------

    def choose(self, label: str) -> None:
        self.state.choose(label)
        if self.group is not None:
            self.group.value = label
            if self.other.value:
                self.other.value = ""  # choosing an option clears the free text
        else:
            self.checkboxes[label].value = True
        self.card.activate(self)
        self.card.refresh_submit()

    def toggle(self, label: str) -> None:
        box = self.checkboxes[label]
        box.value = not box.value
        (self.state.choose if box.value else self.state.unchoose)(label)
        self.card.activate(self)
        self.card.refresh_submit()

    def press_number(self, number: int) -> bool:
        labels = self.question.option_labels()
        if not 1 <= number <= len(labels):
            return False
        if self.question.multi_select:
            self.toggle(labels[number - 1])
        else:
            self.choose(labels[number - 1])
        return True


class PromptCard:
    """An inline card for one pending prompt; all its questions stacked, never a stepper."""

    def __init__(
        self,
        item: TimelineItem,
        strings: Strings,
        on_submit: SubmitHandler,
        on_dismiss: DismissHandler,
        on_activate: Callable[[PromptCard], None] | None = None,
    ) -> None:
        self.item = item
        self.strings = strings
        self.answers = CardAnswers(item.record.questions)
        self._on_submit = on_submit
        self._on_dismiss = on_dismiss
        self._on_activate = on_activate
        s = strings
        self.blocks = [
            QuestionBlock(self, q, n) for n, q in enumerate(item.record.questions, start=1)
        ]
        self.active: QuestionBlock = self.blocks[0]
        self.countdown = ft.Text(
            s("time_left", time=countdown(item.seconds_left)),
            size=13,
            weight=ft.FontWeight.W_600,
            color=ft.Colors.PRIMARY,
        )
        self.error = ft.Text("", color=ft.Colors.ERROR, visible=False, rtl=s.rtl)
        self.submit_button = ft.FilledButton(
            content=s("submit"),
            icon=ft.Icons.SEND,
            on_click=lambda e: self.submit(),
            disabled=True,
            height=TAP,
            style=ft.ButtonStyle(padding=ft.Padding.symmetric(horizontal=24)),
        )
        self.dismiss_button = ft.OutlinedButton(
            content=s("dismiss"),
            icon=ft.Icons.CLOSE,
            on_click=lambda e: self.dismiss(),
            height=TAP,
            style=ft.ButtonStyle(padding=ft.Padding.symmetric(horizontal=20)),
        )
        children: list[ft.Control] = [
            ft.Row(
                [
                    ft.Row(
                        [
                            ft.Icon(ft.Icons.HELP_OUTLINE, color=ft.Colors.PRIMARY, size=20),
                            ft.Text(s("status_pending"), size=13, weight=ft.FontWeight.W_600),
                        ],
                        spacing=6,
                    ),
                    self.countdown,
                ],
                alignment=ft.MainAxisAlignment.SPACE_BETWEEN,
                rtl=s.rtl,  # the app's chrome; each question block has its own direction
            ),
        ]
        for index, block in enumerate(self.blocks):
            if index:
                children.append(ft.Divider(height=16))
            children.append(block.view)
        children += [
            self.error,
            ft.Row(
                [self.dismiss_button, self.submit_button],
                alignment=ft.MainAxisAlignment.END,
                spacing=12,
                wrap=True,
                rtl=s.rtl,
            ),
        ]
        self.view = ft.Card(
            content=ft.Container(
                ft.Column(
                    children,
                    spacing=12,
                    tight=True,
                    horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
                ),
                padding=16,
            ),
            semantic_container=False,
            key=item.id,
            data=item.id,
        )

    @property
    def prompt_id(self) -> str:
        return self.item.id

    def activate(self, block: QuestionBlock) -> None:
        self.active = block
        if self._on_activate:
            self._on_activate(self)

    def refresh_submit(self) -> None:
        self.submit_button.disabled = not self.answers.complete
        self.error.visible = False

    def show_error(self, message: str) -> None:
        self.error.value = message
        self.error.visible = True

    def tick(self, item: TimelineItem) -> None:
        """A new second: the countdown follows the gateway's deadline."""
        self.item = item
        self.countdown.value = self.strings("time_left", time=countdown(item.seconds_left))

    def submit(self) -> bool:
        if not self.answers.complete:
            return False
        self._on_submit(self.prompt_id, self.answers.answers())
        return True

    def dismiss(self) -> None:
        self._on_dismiss(self.prompt_id)
