"""One timer for every deadline: a heap of (expires, prompt) and a single armed loop callback.

Re-armed at start from the store. Entries of prompts resolved early stay in the heap until
their time and are skipped then; the expiry callback re-checks the store.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable

from .clock import Clock


class DeadlineTimer:
    def __init__(self, clock: Clock, on_due: Callable[[int], object]) -> None:
        self._clock = clock
        self._on_due = on_due
        self._heap: list[tuple[int, str]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] = lambda: None

    def start(self, loop: asyncio.AbstractEventLoop, deadlines: list[tuple[int, str]]) -> None:
        self._loop = loop
        self._heap = list(deadlines)
        heapq.heapify(self._heap)
        self._unsubscribe = self._clock.subscribe(self._rearm_from_any_thread)
        self.rearm()

    def _rearm_from_any_thread(self) -> None:
        """The clock moved (a test's clock moves in the test's thread)."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self.rearm)

    def stop(self) -> None:
        self._unsubscribe()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._loop = None

    def add(self, expires_ms: int, prompt_id: str) -> None:
        heapq.heappush(self._heap, (expires_ms, prompt_id))
        if self._heap[0] == (expires_ms, prompt_id):
            self.rearm()

    @property
    def next_deadline_ms(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def rearm(self) -> None:
        if self._loop is None:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._heap:
            return
        delay = max(0.0, (self._heap[0][0] - self._clock.now_ms()) / 1000)
        self._handle = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        now = self._clock.now_ms()
        due = False
        while self._heap and self._heap[0][0] <= now:
            heapq.heappop(self._heap)
            due = True
        if due:
            self._on_due(now)
        self.rearm()
