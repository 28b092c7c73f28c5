"""What the UI renders: timeline items with a display status, the connection, the server clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from app.protocol import PromptRecord

from .store import StoredPrompt


class ServerClock:
    """The gateway's time, from its last `serverTime` plus a monotonic clock since then.

    A device whose wall clock is wrong by an hour still counts down to the gateway's deadline.
    Before the first response it falls back to the wall clock plus the last known offset.
    """

    def __init__(
        self,
        offset_ms: int = 0,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wall = wall
        self._monotonic = monotonic
        self._anchor: tuple[int, float] | None = None  # (server ms, monotonic s) at receipt
        self.offset_ms = offset_ms  # server minus wall, remembered across restarts

    def observe(self, server_time_ms: int) -> None:
        self._anchor = (server_time_ms, self._monotonic())
        self.offset_ms = server_time_ms - int(self._wall() * 1000)

    def now_ms(self) -> int:
        if self._anchor is None:
            return int(self._wall() * 1000) + self.offset_ms
        server_ms, at = self._anchor
        return server_ms + int((self._monotonic() - at) * 1000)

    def seconds_left(self, record: PromptRecord) -> float:
        return record.seconds_left(self.now_ms())


# What changed in the device's store, as its listeners are told: these prompts (an empty set:
# none; the connection, say), or EVERYTHING (a resync, other settings, a cleared history).
Change = frozenset[str] | None
EVERYTHING: Change = None


class DisplayStatus(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    ANSWERED_HERE = "answered"
    ANSWERED_ELSEWHERE = "answered_elsewhere"
    ANSWERED_BY_LINK = "answered_by_link"  # through its answer link, in a browser
    DISMISSED = "dismissed"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class SharedDraft:
    """An answer in progress on another of the person's devices, or in another window of this
    app (v1.4): shown there as not sent. `serial` orders them: the newest wins."""

    serial: int
    answers: dict[str, list[str]]
    source: object | None  # the window it came from; None: another device
    device_name: str | None = None


@dataclass(frozen=True)
class TimelineItem:
    record: PromptRecord
    status: DisplayStatus
    answers: dict[str, list[str]] | None  # what to show in the summary

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def is_open(self) -> bool:
        """A card that still takes input."""
        return self.status == DisplayStatus.PENDING

    def late_answer_offered(self, now_ms: int) -> bool:
        """ "Answer anyway" (docs/PROTOCOL.md v1.4): its prompt takes a late answer now, and
        none is on its way from here."""
        return self.status != DisplayStatus.SENDING and self.record.late_answer_open(now_ms)


def display_status(item: StoredPrompt, device_id: str, clock: ServerClock) -> TimelineItem:
    record = item.record
    answers = (
        record.answers
        if record.status == "answered"
        else record.late_answer.answers
        if record.late_answer is not None
        else item.local_answers
    )
    if item.outbox_kind is not None:
        status = DisplayStatus.SENDING
    elif record.status == "answered":
        by = record.resolved_by.device_id if record.resolved_by else None
        if record.resolved_by is not None and record.resolved_by.kind == "link":
            status = DisplayStatus.ANSWERED_BY_LINK
        elif by == device_id:
            status = DisplayStatus.ANSWERED_HERE
        else:
            status = DisplayStatus.ANSWERED_ELSEWHERE
    elif record.status == "dismissed":
        status = DisplayStatus.DISMISSED
    elif record.status == "expired":
        status = DisplayStatus.EXPIRED
    elif record.status == "cancelled":
        status = DisplayStatus.CANCELLED
    elif item.gone:
        status = DisplayStatus.UNAVAILABLE
    elif clock.seconds_left(record) <= 0:
        status = DisplayStatus.EXPIRED  # read-only at the deadline, before the gateway says so
    else:
        status = DisplayStatus.PENDING
    return TimelineItem(record, status, answers)


class Connection(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    UNAUTHORIZED = "unauthorized"
    UNCONFIGURED = "unconfigured"


@dataclass(frozen=True)
class ConnectionState:
    kind: Connection
    next_try_monotonic: float | None = None
    detail: str = ""

    def seconds_to_retry(self, now: float | None = None) -> int:
        if self.next_try_monotonic is None:
            return 0
        return max(0, round(self.next_try_monotonic - (now or time.monotonic())))
