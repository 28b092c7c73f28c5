"""The compact summary a resolved prompt leaves in the timeline: a line per question."""

from __future__ import annotations

from datetime import datetime

import flet as ft

from app.device import DisplayStatus, TimelineItem
from app.protocol import is_rtl

from .strings import Strings

STATUS_ICONS = {
    DisplayStatus.SENDING: (ft.Icons.SCHEDULE_SEND, ft.Colors.TERTIARY),
    DisplayStatus.ANSWERED_HERE: (ft.Icons.CHECK_CIRCLE, ft.Colors.PRIMARY),
    DisplayStatus.ANSWERED_ELSEWHERE: (ft.Icons.DEVICES, ft.Colors.PRIMARY),
    DisplayStatus.DISMISSED: (ft.Icons.CANCEL_OUTLINED, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.EXPIRED: (ft.Icons.TIMER_OFF, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.CANCELLED: (ft.Icons.BLOCK, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.UNAVAILABLE: (ft.Icons.CLOUD_OFF, ft.Colors.ON_SURFACE_VARIANT),
    DisplayStatus.PENDING: (ft.Icons.HELP_OUTLINE, ft.Colors.PRIMARY),
}


def summary_lines(item: TimelineItem, strings: Strings) -> list[str]:
    """`Header: answer1, answer2` for each question; no answer is said as such."""
    answers = item.answers or {}
    lines = []
    for question in item.record.questions:
        values = answers.get(question.id)
        lines.append(f"{question.header}: {', '.join(values) if values else '—'}")
    return lines


def status_text(item: TimelineItem, strings: Strings) -> str:
    return strings(f"status_{item.status.value}")


def _time(item: TimelineItem) -> str:
    when = item.record.resolved_at or item.record.created_at
    local = when.astimezone()
    today = datetime.now().astimezone().date()
    return local.strftime("%H:%M") if local.date() == today else local.strftime("%Y-%m-%d %H:%M")


class SummaryTile:
    def __init__(self, item: TimelineItem, strings: Strings) -> None:
        self.item = item
        icon, color = STATUS_ICONS[item.status]
        lines = [ft.Text(line, size=14, rtl=is_rtl(line)) for line in summary_lines(item, strings)]
        self.view = ft.Container(
            content=ft.Column(
                [
                    ft.Row(
                        [
                            ft.Row(
                                [
                                    ft.Icon(icon, color=color, size=18),
                                    ft.Text(
                                        status_text(item, strings),
                                        size=13,
                                        weight=ft.FontWeight.W_600,
                                        color=color,
                                    ),
                                ],
                                spacing=6,
                            ),
                            ft.Text(_time(item), size=12, color=ft.Colors.ON_SURFACE_VARIANT),
                        ],
                        alignment=ft.MainAxisAlignment.SPACE_BETWEEN,
                        rtl=strings.rtl,  # the status is the app's; each line has its own
                    ),
                    *lines,
                ],
                spacing=4,
                tight=True,
            ),
            padding=ft.Padding.symmetric(horizontal=14, vertical=10),
            border_radius=12,
            border=ft.Border.all(1, ft.Colors.OUTLINE_VARIANT),
            key=item.id,
            data=item.id,
        )
