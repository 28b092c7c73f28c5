"""A system notification when a question arrives while the app is not in front.

Only a built app (`flet build`) carries the Flutter half of `flet-notifications`; `python -m
app` (desktop window or web) does not, and there the window title's count is the signal. A
notification can fire only while the app's process runs: phones suspend apps in the
background, so the dependable way to reach a phone is the gateway's ASK_USER_NOTIFY.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Sequence

import flet as ft

from app.device import TimelineItem
from app.protocol import prompt_link

from .screen import Screen

log = logging.getLogger("ask_user.app")

_IN_FRONT = {ft.AppLifecycleState.SHOW, ft.AppLifecycleState.RESUME}
_REMEMBERED = 500  # prompts already announced, so a reload never announces one twice


class AlertPolicy:
    """Which arrivals become a notification: only while the app is not in front, each once."""

    def __init__(self) -> None:
        self.in_front = True
        self._told: list[str] = []

    def lifecycle(self, state: ft.AppLifecycleState) -> None:
        self.in_front = state in _IN_FRONT

    def to_announce(self, arrived: Sequence[TimelineItem]) -> list[TimelineItem]:
        if self.in_front:
            return []
        fresh = [item for item in arrived if item.id not in self._told]
        self._told = (self._told + [item.id for item in fresh])[-_REMEMBERED:]
        return fresh


def notification_id(prompt_id: str) -> int:
    """A stable 31-bit id per prompt: showing it again replaces, never duplicates."""
    return zlib.crc32(prompt_id.encode()) & 0x7FFFFFFF


def start_system_alerts(page: ft.Page, screen: Screen, built_app: bool) -> AlertPolicy | None:
    """Notify of arrivals while in the background, where the platform can (a `flet build`
    app: `DeviceEnvironment.built_app`); None elsewhere."""
    if not built_app:
        return None
    try:
        from flet_notifications import (  # type: ignore[import-untyped]  # no py.typed
            LocalNotifications,
        )
    except ImportError:
        return None
    policy = AlertPolicy()
    notifications = LocalNotifications()
    notifications.on_tap = lambda e: screen.dialogs.open_link(e.payload)

    async def show(item: TimelineItem) -> None:
        first = item.record.questions[0]
        try:
            await notifications.show(
                id=notification_id(item.id),
                title=first.header,
                body=first.question,
                payload=prompt_link(item.id),
            )
        except Exception as exc:  # the platform said no (e.g. permission): the app goes on
            log.warning("system notification failed: %s", exc)

    async def ask_permission() -> None:
        try:
            await notifications.request_permissions()
        except Exception as exc:
            log.warning("notification permission request failed: %s", exc)

    def lifecycle(e: ft.AppLifecycleStateChangeEvent) -> None:
        policy.lifecycle(e.state)

    page.on_app_lifecycle_state_change = lifecycle

    def arrived(items: list[TimelineItem]) -> None:
        for item in policy.to_announce(items):
            page.run_task(show, item)

    screen.on_arrival = arrived
    page.run_task(ask_permission)
    return policy
