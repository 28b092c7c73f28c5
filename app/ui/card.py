"""The prompt card: every question of a prompt stacked (the phone and desktop apps never use a
stepper; a browser offers one, stepper.py), options as full-width touch rows that wrap, an
Other field per question, a countdown, Submit and Dismiss.

Each piece is one small component rendering what it is given; what a tap means is `Screen`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import flet as ft

from app.device import TimelineItem
from app.protocol import PromptRecord, Question, is_rtl
from app.protocol.asker import asker_label
from app.protocol.selection import CardAnswers, QuestionAnswer
from app.protocol.strings import Strings
from app.protocol.text import shown_label

from .screen import Screen
from .state import Clock, DraftedElsewhere, scroll_key
from .stop_view import StopBlock
from .theme import MONO_FONT_FAMILY, TAP
from .typed_field import TypedField

URGENT_SECONDS = 60


@ft.component
def Countdown(record: PromptRecord, strings: Strings, clock: Clock) -> ft.Control:
    """Time left on the gateway's clock, by the contract's one rule (`seconds_left`); it turns
    urgent in the last minute. Re-rendered alone each second: `clock` is observed."""
    left = record.seconds_left(clock.now_ms)
    urgent = left <= URGENT_SECONDS
    color = ft.Colors.ERROR if urgent else ft.Colors.PRIMARY
    return ft.Row(
        [
            ft.Icon(
                ft.Icons.TIMER_OUTLINED if not urgent else ft.Icons.ALARM, size=16, color=color
            ),
            ft.Text(
                strings("time_left", time=strings.countdown(left)),
                size=13,
                weight=ft.FontWeight.W_700 if urgent else ft.FontWeight.W_600,
                color=color,
            ),
        ],
        spacing=4,
        tight=True,
    )


@ft.component
def RecommendedBadge(strings: Strings) -> ft.Control:
    return ft.Container(
        ft.Row(
            [
                ft.Icon(ft.Icons.STAR_ROUNDED, size=14, color=ft.Colors.ON_TERTIARY_CONTAINER),
                ft.Text(
                    strings("recommended"),
                    size=12,
                    weight=ft.FontWeight.W_600,
                    color=ft.Colors.ON_TERTIARY_CONTAINER,
                ),
            ],
            spacing=2,
            tight=True,
        ),
        bgcolor=ft.Colors.TERTIARY_CONTAINER,
        border_radius=8,
        padding=ft.Padding.symmetric(horizontal=6, vertical=1),
    )


@ft.component
def OptionRow(
    question: Question,
    label: str,
    description: str | None,
    chosen: bool,
    on_tap: Callable[[], None],
    on_set: Callable[[bool], None],
    strings: Strings,
) -> ft.Control:
    """One option as a full-width row: radio or checkbox, then the label and its description,
    wrapping at any width. Read by screen readers as one radio or checkbox named by its label."""
    text, recommended = shown_label(label)
    indicator: ft.Control = (
        ft.Checkbox(value=chosen, on_change=lambda e: on_set(bool(e.control.value)))
        if question.multi_select
        else ft.Radio(value=label)
    )
    words: list[ft.Control] = [ft.Text(text, size=16)]
    if recommended:
        words = [
            ft.Row(
                [ft.Text(text, size=16), RecommendedBadge(strings)],
                wrap=True,
                spacing=8,
                run_spacing=4,
                vertical_alignment=ft.CrossAxisAlignment.CENTER,
            )
        ]
    if description:
        words.append(ft.Text(description, size=14, color=ft.Colors.ON_SURFACE_VARIANT))
    return ft.MergeSemantics(
        ft.Container(
            ft.Row(
                [indicator, ft.Column(words, spacing=2, expand=True, tight=True)],
                spacing=4,
                vertical_alignment=ft.CrossAxisAlignment.CENTER,
            ),
            on_click=lambda _: on_tap(),
            ink=True,
            border_radius=12,
            bgcolor=ft.Colors.with_opacity(0.08, ft.Colors.PRIMARY) if chosen else None,
            padding=ft.Padding.symmetric(horizontal=8, vertical=2),
        )
    )


PREVIEW_HEIGHT = 220  # a preview taller than this scrolls inside its frame


@ft.component
def PreviewBlock(label: str, preview: str, strings: Strings) -> ft.Control:
    """An option's preview (a mockup, code: v1.5) as its program shows it beside the option:
    monospace, its lines kept, folded until asked for, scrolling inside a frame of its own at
    any width (a wide line scrolls sideways rather than wrapping a mockup apart)."""
    shown, set_shown = ft.use_state(False)
    toggle = ft.TextButton(
        strings("hide_preview" if shown else "show_preview"),
        icon=ft.Icons.EXPAND_LESS if shown else ft.Icons.EXPAND_MORE,
        on_click=lambda _: set_shown(not shown),
        tooltip=label,
    )
    if not shown:
        return ft.Row([toggle])  # at the start of the line, as the opened one
    code = ft.Text(preview, font_family=MONO_FONT_FAMILY, size=13, selectable=True, no_wrap=True)
    frame = ft.Container(
        ft.Column(
            [ft.Row([code], scroll=ft.ScrollMode.AUTO)],
            scroll=ft.ScrollMode.AUTO,
            tight=True,
        ),
        height=min(PREVIEW_HEIGHT, 24 + 18 * (preview.count("\n") + 1)),
        padding=8,
        border_radius=8,
        bgcolor=ft.Colors.SURFACE_CONTAINER_HIGHEST,
    )
    return ft.Column([toggle, frame], spacing=2, tight=True)


@ft.component
def QuestionBlock(
    prompt_id: str,
    question: Question,
    number: int | None,
    answer: QuestionAnswer,
    screen: Screen,
    strings: Strings,
) -> ft.Control:
    """One question: its header, the sentence, every option, and an Other field."""
    qid = question.id
    rtl = is_rtl(question.question)
    rows: list[ft.Control] = []
    for option in question.options:
        rows.append(
            OptionRow(  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                question,
                option.label,
                option.description,
                answer.is_chosen(option.label),
                partial(screen.tap_option, prompt_id, qid, option.label),
                partial(screen.set_option, prompt_id, qid, option.label),
                strings,
                key=option.label,
            )
        )
        if option.preview:
            rows.append(
                ft.Container(
                    PreviewBlock(option.label, option.preview, strings, key=f"p:{option.label}"),  # type: ignore[call-arg]
                    padding=ft.Padding.only(left=40),
                )
            )
    options: ft.Control = ft.Column(
        rows, spacing=2, tight=True, horizontal_alignment=ft.CrossAxisAlignment.STRETCH
    )
    if not question.multi_select:
        options = ft.RadioGroup(
            content=options,
            value=answer.chosen[0] if answer.chosen else None,
            on_change=lambda e: (
                screen.set_option(prompt_id, qid, e.control.value, True)
                if e.control.value
                else None
            ),
        )

    def focused(_: ft.Event[Any]) -> None:
        screen.set_typing(True)
        screen.focus(prompt_id, qid)

    other = TypedField(
        answer.other,
        partial(screen.set_other, prompt_id, qid),
        label=strings("other"),
        hint_text=strings("other_hint"),
        on_focus=focused,
        on_blur=lambda _: screen.set_typing(False),
        on_submit=lambda _: screen.confirm(prompt_id),
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
    hint = strings("choose_many") if question.multi_select else strings("choose_one")
    prefix = f"{strings.digits(number)}. " if number else ""
    return ft.Column(
        [
            ft.Row(
                [header, ft.Text(hint, size=12, color=ft.Colors.ON_SURFACE_VARIANT)],
                spacing=8,
                wrap=True,
            ),
            ft.Text(prefix + question.question, size=17, weight=ft.FontWeight.W_500),
            options,
            other,
        ],
        spacing=8,
        rtl=rtl,  # each question keeps its own direction, whatever the UI language
        horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
    )


def AskerLine(record: PromptRecord) -> ft.Control:
    """Who is asking: "Claude Code · shop-api" (app/protocol/asker.py), one quiet line."""
    label = asker_label(record.session_key, record.agent_id)
    return ft.Text(
        label,
        size=12,
        color=ft.Colors.ON_SURFACE_VARIANT,
        max_lines=1,
        overflow=ft.TextOverflow.ELLIPSIS,
        rtl=is_rtl(label),
    )


@ft.component
def StatusRow(item: TimelineItem, strings: Strings, clock: Clock) -> ft.Control:
    return ft.Row(
        [
            ft.Row(
                [
                    ft.Icon(ft.Icons.HELP_OUTLINE, color=ft.Colors.PRIMARY, size=20),
                    ft.Text(strings("status_pending"), size=13, weight=ft.FontWeight.W_600),
                ],
                spacing=6,
                tight=True,
            ),
            Countdown(item.record, strings, clock),
        ],
        alignment=ft.MainAxisAlignment.SPACE_BETWEEN,
        wrap=True,
        rtl=strings.rtl,
    )


def LateRow(strings: Strings) -> ft.Control:
    """A late card's status: its time ran out, the answer still reaches the agent."""
    return ft.Row(
        [
            ft.Icon(ft.Icons.TIMER_OFF, color=ft.Colors.TERTIARY, size=20),
            ft.Text(strings("late_card"), size=13, weight=ft.FontWeight.W_600, expand=True),
        ],
        spacing=6,
        rtl=strings.rtl,
    )


def DraftLine(where: DraftedElsewhere, strings: Strings) -> ft.Control:
    """These choices were made on another device (or window) and are not sent (v1.4):
    "Chosen on Pixel · not sent yet"."""
    return ft.Row(
        [
            ft.Icon(ft.Icons.DEVICES, color=ft.Colors.ON_SURFACE_VARIANT, size=18),
            ft.Text(
                where.said(strings),
                size=13,
                color=ft.Colors.ON_SURFACE_VARIANT,
                expand=True,
                rtl=strings.rtl,
            ),
        ],
        spacing=6,
        rtl=strings.rtl,
    )


@ft.component
def LateButtons(prompt_id: str, complete: bool, screen: Screen, strings: Strings) -> ft.Control:
    """Cancel (back to the summary, nothing sent) and Send."""
    return ft.Row(
        [
            ft.OutlinedButton(
                content=strings("cancel_late"),
                icon=ft.Icons.CLOSE,
                on_click=lambda _: screen.cancel_late(prompt_id),
                height=TAP,
            ),
            ft.FilledButton(
                content=strings("send_late"),
                icon=ft.Icons.SEND,
                on_click=lambda _: screen.submit(prompt_id),
                disabled=not complete,
                height=TAP,
                key="submit",
            ),
        ],
        alignment=ft.MainAxisAlignment.END,
        spacing=12,
        run_spacing=8,
        wrap=True,
        rtl=strings.rtl,
    )


def dismiss_button(prompt_id: str, screen: Screen, strings: Strings) -> ft.Control:
    return ft.OutlinedButton(
        content=strings("dismiss"),
        icon=ft.Icons.CLOSE,
        on_click=lambda _: screen.dismiss(prompt_id),
        height=TAP,
    )


def submit_button(prompt_id: str, complete: bool, screen: Screen, strings: Strings) -> ft.Control:
    return ft.FilledButton(
        content=strings("submit"),
        icon=ft.Icons.SEND,
        on_click=lambda _: screen.submit(prompt_id),
        disabled=not complete,
        height=TAP,
        key="submit",
    )


@ft.component
def CardButtons(prompt_id: str, complete: bool, screen: Screen, strings: Strings) -> ft.Control:
    """Dismiss and Submit, next to the content, at the end of the card."""
    return ft.Row(
        [
            dismiss_button(prompt_id, screen, strings),
            submit_button(prompt_id, complete, screen, strings),
        ],
        alignment=ft.MainAxisAlignment.END,
        spacing=12,
        run_spacing=8,
        wrap=True,
        rtl=strings.rtl,
    )


# the timeline re-renders with each change; an unchanged row is skipped
@ft.memo  # type: ignore[untyped-decorator]  # ft.memo has no annotations
@ft.component
def UndoRow(
    prompt_id: str,
    send_at: float,
    screen: Screen,
    strings: Strings,
    clock: Clock,
    answered: str | None = None,
) -> ft.Control:
    """A dismissed card, or one answered by one tap (`answered`: the choice), for a few
    seconds: nothing has reached the gateway yet. Its seconds move with `clock` (observed)."""
    seconds = max(0, round(send_at - clock.monotonic))
    said = (
        strings("answered_undo", answer=answered, seconds=seconds)
        if answered is not None
        else strings("dismissed_undo", seconds=seconds)
    )
    icon = ft.Icons.SCHEDULE_SEND if answered is not None else ft.Icons.CANCEL_OUTLINED
    return ft.Container(
        ft.Row(
            [
                ft.Icon(icon, size=18, color=ft.Colors.ON_SURFACE_VARIANT),
                ft.Text(said, size=14, expand=True),
                ft.TextButton(
                    strings("undo"),
                    icon=ft.Icons.UNDO,
                    on_click=lambda _: screen.undo_dismiss(prompt_id),
                    height=TAP,
                ),
            ],
            spacing=8,
            rtl=strings.rtl,
        ),
        padding=ft.Padding.symmetric(horizontal=14, vertical=4),
        border_radius=12,
        border=ft.Border.all(1, ft.Colors.OUTLINE_VARIANT),
    )


# re-rendered only when its own prompt, choices or error change (#43)
@ft.memo  # type: ignore[untyped-decorator]  # ft.memo has no annotations
@ft.component
def PromptCard(
    item: TimelineItem,
    answers: CardAnswers,
    error: str | None,
    screen: Screen,
    strings: Strings,
    linked: bool = False,
    late: bool = False,
    drafted: DraftedElsewhere | None = None,
) -> ft.Control:
    """An inline card for one pending prompt; all its questions stacked. Outlined when a link
    opened it. `late`: an expired or run-stopped prompt answered anyway (v1.4): no countdown,
    and Cancel and Send instead of Dismiss and Submit. `drafted`: where its choices were made,
    when another device or window made them (not sent)."""
    questions = item.record.questions
    numbered = len(questions) > 1
    status = LateRow(strings) if late else StatusRow(item, strings, screen.clock)
    heading: list[ft.Control] = [status, AskerLine(item.record)]
    if drafted is not None:
        heading.append(DraftLine(drafted, strings))
    children: list[ft.Control] = [ft.Column(heading, spacing=2, tight=True)]
    if item.record.stop is not None:  # a permission or a plan: what it is about, first
        children.append(StopBlock(item.record.stop, strings, key="stop"))  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
    for index, question in enumerate(questions):
        if index:
            children.append(ft.Divider(height=16))
        children.append(
            QuestionBlock(  # type: ignore[call-arg]  # @ft.component takes key=; its stubs do not say so
                item.id,
                question,
                index + 1 if numbered else None,
                answers[question.id],
                screen,
                strings,
                key=question.id,
            )
        )
    children.append(
        ft.Text(error or "", color=ft.Colors.ERROR, rtl=strings.rtl, visible=bool(error))
    )
    buttons = LateButtons if late else CardButtons
    children.append(buttons(item.id, answers.complete, screen, strings))
    return ft.Card(
        ft.Container(
            ft.Column(
                children,
                spacing=12,
                tight=True,
                horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
            ),
            padding=16,
        ),
        semantic_container=False,
        key=ft.ScrollKey(scroll_key(item.id)),  # type: ignore[call-arg]  # stubs: no value
        shape=ft.RoundedRectangleBorder(
            radius=12,
            side=ft.BorderSide(2 if linked else 0, ft.Colors.PRIMARY if linked else "#00000000"),
        ),
    )
