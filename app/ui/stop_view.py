"""What a permission or a plan is about (v1.5), on its card above the choices: the command, the
file and its change as a diff, the URL, the plan as Markdown. The person decides in front of
exactly what they allow, at 320 px as at 1440: a command's or a diff's long line wraps rather
than scroll sideways (`npm test && rm -rf ~` must not hide its end past the edge); a long one
scrolls down inside a frame of its own.
"""

from __future__ import annotations

import flet as ft

from app.protocol.stops import Stop
from app.protocol.strings import Strings

from .theme import MONO_FONT_FAMILY

CODE_HEIGHT = 320  # the most a command or diff takes of the card before it scrolls
PLAN_HEIGHT = 420
LINE = 18


def _framed(content: ft.Control, lines: int, most: float) -> ft.Control:
    return ft.Container(
        ft.Column([content], scroll=ft.ScrollMode.AUTO, tight=True),
        height=min(most, 24 + LINE * lines),
        padding=8,
        border_radius=8,
        bgcolor=ft.Colors.SURFACE_CONTAINER_HIGHEST,
    )


def _lines(text: str, width: int = 34) -> int:
    """Lines a text takes wrapped at a phone's width (monospace, ~34 characters at 320 px):
    the frame is as tall as that, up to its most."""
    return sum(max(1, -(-len(line) // width)) for line in text.split("\n"))


def _code(text: str) -> ft.Control:
    shown = ft.Text(text, font_family=MONO_FONT_FAMILY, size=13)
    return _framed(shown, _lines(text), CODE_HEIGHT)


def _diff(diff: str) -> ft.Control:
    """A unified diff with its added lines green and its removed lines red, as a reviewer
    reads one; one text of spans, however long."""
    spans = []
    for line in diff.splitlines():
        color: ft.Colors | None
        if line.startswith("+") and not line.startswith("+++"):
            color = ft.Colors.GREEN_800
        elif line.startswith("-") and not line.startswith("---"):
            color = ft.Colors.RED_800
        else:
            color = ft.Colors.ON_SURFACE_VARIANT if line.startswith("@@") else None
        spans.append(ft.TextSpan(line + "\n", ft.TextStyle(color=color)))
    shown = ft.Text(spans=spans, font_family=MONO_FONT_FAMILY, size=13)
    return _framed(shown, _lines(diff), CODE_HEIGHT)


@ft.component
def StopBlock(stop: Stop, strings: Strings) -> ft.Control:
    """The stop's parts it holds, each under its own small heading."""
    parts: list[ft.Control] = []

    def heading(key: str, **values: object) -> None:
        parts.append(
            ft.Text(strings(key, **values), size=12, weight=ft.FontWeight.W_600, rtl=strings.rtl)
        )

    if stop.command is not None:
        heading("stop_command", tool=stop.tool or stop.program)
        parts.append(_code(stop.command))
    if stop.path is not None:
        heading("stop_file")
        parts.append(ft.Text(strings.code(stop.path), size=13))
    if stop.diff is not None:
        parts.append(_diff(stop.diff))
    if stop.url is not None:
        heading("stop_url")
        parts.append(ft.Text(strings.code(stop.url), size=14))
    if stop.plan is not None:
        heading("stop_plan")
        plan = ft.Markdown(
            stop.plan,
            extension_set=ft.MarkdownExtensionSet.GITHUB_FLAVORED,
            code_style_sheet=ft.MarkdownStyleSheet(
                code_text_style=ft.TextStyle(font_family=MONO_FONT_FAMILY, size=13)
            ),
        )
        parts.append(
            ft.Container(
                ft.Column([plan], scroll=ft.ScrollMode.AUTO, tight=True),
                height=min(PLAN_HEIGHT, 40 + LINE * (stop.plan.count("\n") + 2)),
                padding=8,
                border_radius=8,
                bgcolor=ft.Colors.SURFACE_CONTAINER_HIGHEST,
            )
        )
    if stop.rule is not None:
        parts.append(
            ft.Text(
                strings("stop_rule", rule=stop.rule),
                size=12,
                color=ft.Colors.ON_SURFACE_VARIANT,
                rtl=strings.rtl,
            )
        )
    return ft.Column(
        parts, spacing=4, tight=True, horizontal_alignment=ft.CrossAxisAlignment.STRETCH
    )
