"""A text field the app never types over: what the person types is what it holds.

The browser tells the app each new text (a patch of the field's value, then a change event);
the app re-renders from its state, which lags the field by whatever keys are still on their
way. Rendering that older text would send it back and erase the newer keys ("Use the
blue-gn rollout;atcthe…" at 30 ms a key on a busy machine, #53). So the field renders the
app's value only when it is news (it changed, and not to what the field last reported: a
draft from another device, a form cleared); otherwise it keeps what the field holds now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flet as ft


@ft.component
def TypedField(value: str, on_text: Callable[[str], None], **props: Any) -> ft.TextField:
    """An `ft.TextField` showing `value` and reporting each text the person types to
    `on_text`; `props` are the TextField's own (label, on_submit, …)."""
    live: ft.MutableRef[ft.TextField] = ft.use_ref()  # the field on screen
    reported: ft.MutableRef[str] = ft.use_ref()  # the field's last text, until news
    rendered = ft.use_ref(value)  # the app's value when last rendered
    news = value not in (reported.current, rendered.current)
    rendered.current = value
    on_screen = live.current
    if news:
        reported.current = None  # what the field says next is the echo to wait for
    elif on_screen is not None:
        value = on_screen.value or ""  # nothing new: keep the keys typed since

    def changed(e: ft.Event[ft.TextField]) -> None:
        reported.current = e.control.value or ""
        on_text(reported.current)

    field = live.current = ft.TextField(value=value, on_change=changed, **props)
    return field
