"""The compact summary a resolved prompt leaves in the timeline: its status and time, then
"header: answer — question" for each question, one line each; a tap shows them whole. The
answer comes first: it is what a person looks for, and a narrow line cuts only the question."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import flet as ft

from app.device import DisplayStatus, TimelineItem
from app.protocol import is_rtl
from app.protocol.strings import Strings

from .card import AskerLine
from .state import scroll_key
from .theme import TAP

STATUS_ICONS = {
    DisplayStatus.SENDING: (ft.Icons.SCHEDULE_SEND, ft.Colors.TERTIARY),
    DisplayStatus.ANSWERED_HERE: (ft.Icons.CHECK_CIRCLE, ft.Colors.PRIMARY),
    DisplayStatus.ANSWERED_ELSEWHERE: (ft.Icons.DEVICES, ft.Colors.PRIMARY),
    DisplayStatus.ANSWERED_BY_LINK: (ft.Icons.LINK, ft.Colors.PRIMARY),
    DisplayStatus.DISMISSED: (ft.Icons.CANCEL_OUTLINED, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.EXPIRED: (ft.Icons.TIMER_OFF, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.CANCELLED: (ft.Icons.BLOCK, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.UNAVAILABLE: (ft.Icons.CLOUD_OFF, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.PENDING: (ft.Icons.HELP_OUTLINE, ft.Colors.PRIMARY),
}
SHORT_QUESTION = 60  # characters of the question kept on a collapsed line


def shorten(text: str, limit: int = SHORT_QUESTION) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def summary_lines(item: TimelineItem, strings: Strings, whole: bool = False) -> list[str]:
    """`Header: answer1, answer2 — question` per question; no answer is said as such."""
    answers = item.answers or {}
    lines = []
    for question in item.record.questions:
        values = answers.get(question.id)
        asked = question.question if whole else shorten(question.question)
        answer = ", ".join(values) if values else strings("no_answer")
        lines.append(f"{question.header}: {answer} — {asked}")
    return lines


def when(item: TimelineItem, strings: Strings) -> str:
    stamp = (item.record.resolved_at or item.record.created_at).astimezone()
    today = datetime.now().astimezone().date()
    shown = stamp.strftime("%H:%M") if stamp.date() == today else stamp.strftime("%Y-%m-%d %H:%M")
    return strings.digits(shown)


# a new question re-renders the timeline, never its unchanged summaries (#43)
@ft.memo  # type: ignore[untyped-decorator]  # ft.memo has no annotations
def late_line(item: TimelineItem, strings: Strings) -> list[ft.Control]:
    """Answered late: whether the agent has picked the answer up yet."""
    late = item.record.late_answer
    if late is None:
        return []
    said = strings("late_delivered" if late.delivered_at else "late_waiting")
    return [
        ft.Text(
            said, size=13, color=ft.Colors.TERTIARY, weight=ft.FontWeight.W_600, rtl=strings.rtl
        )
    ]


@ft.component
def SummaryTile(
    item: TimelineItem,
    strings: Strings,
    linked: bool = False,
    answer_anyway: Callable[[str], None] | None = None,
) -> ft.Control:
    """`answer_anyway`: offered on an expired or run-stopped prompt within its day (v1.4)."""
    whole, set_whole = ft.use_state(linked)
    icon, color = STATUS_ICONS[item.status]
    lines = [
        ft.Text(
            line,
            size=14,
            rtl=is_rtl(line),
            max_lines=None if whole else 1,
            overflow=ft.TextOverflow.VISIBLE if whole else ft.TextOverflow.ELLIPSIS,
        )
        for line in summary_lines(item, strings, whole)
    ]
    content = ft.Column(
        [
            ft.Row(
                [
                    ft.Row(
                        [
                            ft.Icon(icon, color=color, size=18),
                            ft.Text(
                                strings(f"status_{item.status.value}"),
                                size=13,
                                weight=ft.FontWeight.W_600,
                                color=color,
                            ),
                        ],
                        spacing=6,
                        tight=True,
                    ),
                    ft.Text(when(item, strings), size=12, color=ft.Colors.ON_SURFACE_VARIANT),
                ],
                alignment=ft.MainAxisAlignment.SPACE_BETWEEN,
                rtl=strings.rtl,  # the status is the app's; each line has its own direction
            ),
            AskerLine(item.record),
            *late_line(item, strings),
            *lines,
        ],
        spacing=4,
        tight=True,
        # Each line as wide as the card: a right-to-left one then starts at the right edge
        # (a Persian summary sat at the left in the Persian layout, #53).
        horizontal_alignment=ft.CrossAxisAlignment.STRETCH,
    )
    # The summary is one button (a tap shows its lines whole; a screen reader reads it as one);
    # "Answer anyway" is a button of its own beside it, inside the same frame.
    summary = ft.Container(
        content,
        on_click=lambda _: set_whole(not whole),
        padding=ft.Padding.only(left=14, right=14, top=10, bottom=4 if answer_anyway else 10),
        border_radius=12,
    )
    parts: list[ft.Control] = [summary]
    if answer_anyway is not None:
        parts.append(
            ft.Container(
                ft.Row(
                    [
                        ft.TextButton(
                            strings("answer_anyway"),
                            icon=ft.Icons.REPLY,
                            on_click=lambda _: answer_anyway(item.id),
                            height=TAP,
                        )
                    ],
                    rtl=strings.rtl,  # at the start of the line, in either direction
                ),
                padding=ft.Padding.only(left=4, right=4, bottom=4),
            )
        )
    return ft.Container(
        ft.Column(parts, spacing=0, tight=True, horizontal_alignment=ft.CrossAxisAlignment.STRETCH),
        border_radius=12,
        border=ft.Border.all(2, ft.Colors.PRIMARY)
        if linked
        else ft.Border.all(1, ft.Colors.OUTLINE_VARIANT),
        key=ft.ScrollKey(scroll_key(item.id)),  # type: ignore[call-arg]  # stubs: no value
    )
