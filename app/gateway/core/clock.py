"""Where the gateway reads the time: the system clock, or one a test moves by hand."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime


class Clock:
    """Wall-clock milliseconds since the epoch; deadlines are compared against this."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def subscribe(self, on_change: Callable[[], None]) -> Callable[[], None]:
        """Call `on_change` when the clock is moved; returns the way to stop. The system clock
        is never moved on purpose, so there is nothing to tell."""
        return lambda: None


class ManualClock(Clock):
    """A clock that only moves when told to, and tells its subscribers when it does."""

    def __init__(self, start_ms: int | None = None) -> None:
        self._now = start_ms if start_ms is not None else time.time_ns() // 1_000_000
        self._lock = threading.Lock()
        self._subscribers: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += int(seconds * 1000)
        for notify in list(self._subscribers):
            notify()

    def subscribe(self, on_change: Callable[[], None]) -> Callable[[], None]:
        self._subscribers.append(on_change)
        return lambda: self._subscribers.remove(on_change)


def to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
