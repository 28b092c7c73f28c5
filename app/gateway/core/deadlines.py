"""One timer for every deadline: a heap of (expires, prompt) and a single armed loop callback.

Re-armed at start from the store. Entries of prompts resolved early stay in the heap until
their time and are skipped then; the expiry callback re-checks the store. A pass the store
could not take (locked, disk full, the database restarting) is tried again, sooner at first,
then every few seconds, until one goes through: expiry never stops for good (#39).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .clock import Clock
from .eager import spawn

log = logging.getLogger("ask_user.gateway")

RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS = 0.25, 4.0


class DeadlineTimer:
    def __init__(self, clock: Clock, on_due: Callable[[int], Coroutine[Any, Any, object]]) -> None:
        self._clock = clock
        self._on_due = on_due
        self._heap: list[tuple[int, str]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] = lambda: None
        self._retry_seconds = 0.0  # the back-off after a failed pass (0: none failed)
        self._retry_at: float | None = None  # then: the loop's time of the next pass
        self._passing = False  # a pass is waiting for the store: the timer is armed after it

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
        if self._loop is None or self._passing:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        delays = []
        if self._heap:
            delays.append((self._heap[0][0] - self._clock.now_ms()) / 1000)
        if self._retry_at is not None:
            delays.append(self._retry_at - self._loop.time())
        if delays:
            self._handle = self._loop.call_later(max(0.0, min(delays)), self._fire)

    def _fire(self) -> None:
        self._handle = None
        now = self._clock.now_ms()
        due = False
        while self._heap and self._heap[0][0] <= now:
            heapq.heappop(self._heap)
            due = True
        if due or self._retry_at is not None:
            self._retry_at = None
            self._passing = True
            spawn(self._pass(self._on_due(now)), "expiry")  # SQLite's: done before this returns
            return
        self.rearm()

    async def _pass(self, expiring: Awaitable[object]) -> None:
        try:
            await expiring
        except Exception as exc:  # whatever the store raised, expiry goes on
            self._retry_later(exc)
        else:
            if self._retry_seconds:
                log.warning("expiry caught up: the store takes writes again")
            self._retry_seconds = 0.0
        finally:
            self._passing = False
        self.rearm()

    def _retry_later(self, exc: Exception) -> None:
        """The store could not take this pass: what it missed is still due in the store, so
        another pass comes a little later (backing off to a few seconds while it stays away)."""
        if not self._retry_seconds:
            log.warning(
                "expiry could not be written, trying again until it can: %s",
                getattr(exc, "message", None) or exc,
            )
        self._retry_seconds = min(
            RETRY_MAX_SECONDS, max(RETRY_FIRST_SECONDS, self._retry_seconds * 2)
        )
        if self._loop is not None:  # None: stopped meanwhile
            self._retry_at = self._loop.time() + self._retry_seconds
