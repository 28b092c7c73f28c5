"""In-memory wake-ups for long-polls and result waits: no polling of the database, no task each.

A waiter is a bare future; the change that concerns it resolves it. Everything runs on the
gateway's event loop, so a check and a registration never race with a notification.
"""

from __future__ import annotations

import asyncio


class Waiters:
    def __init__(self) -> None:
        self._events: set[asyncio.Future[None]] = set()
        self._results: dict[str, set[asyncio.Future[None]]] = {}
        self._of_device: dict[str, set[asyncio.Future[None]]] = {}  # paired devices' polls

    @property
    def idle_event_polls(self) -> int:
        return len(self._events)

    async def next_event(self, timeout: float, device_id: str | None = None) -> bool:
        """Wait until any event is appended, the device is revoked, or `timeout` passes;
        True if woken."""
        if device_id is None:
            return await self._wait(self._events, timeout)
        mine = self._of_device.setdefault(device_id, set())
        try:
            return await self._wait(self._events, timeout, also=mine)
        finally:
            if not mine:
                self._of_device.pop(device_id, None)

    async def result_of(self, prompt_id: str, timeout: float) -> bool:
        """Wait until the prompt leaves pending, or `timeout` passes; True if woken."""
        waiters = self._results.setdefault(prompt_id, set())
        try:
            return await self._wait(waiters, timeout)
        finally:
            if not waiters:
                self._results.pop(prompt_id, None)

    def event_appended(self) -> None:
        waiters, self._events = self._events, set()
        for future in waiters:
            if not future.done():
                future.set_result(None)

    def device_revoked(self, device_id: str) -> None:
        for future in self._of_device.pop(device_id, ()):
            if not future.done():
                future.set_result(None)

    def prompt_resolved(self, prompt_id: str) -> None:
        for future in self._results.pop(prompt_id, ()):
            if not future.done():
                future.set_result(None)

    @staticmethod
    async def _wait(
        waiters: set[asyncio.Future[None]],
        timeout: float,
        also: set[asyncio.Future[None]] | None = None,
    ) -> bool:
        if timeout <= 0:
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.add(future)
        if also is not None:
            also.add(future)
        try:
            async with asyncio.timeout(timeout):
                await future
            return True
        except TimeoutError:
            return False
        finally:
            waiters.discard(future)
            if also is not None:
                also.discard(future)
