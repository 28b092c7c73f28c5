"""In-memory wake-ups for agents' result waits: no polling of the database, no task each.

A waiter is a bare future; the change that resolves its prompt resolves it. Everything runs on
the gateway's event loop, so a check and a registration never race with a notification.
(Device polls wait in feed.py.)
"""

from __future__ import annotations

import asyncio


class Waiters:
    def __init__(self) -> None:
        self._results: dict[str, set[asyncio.Future[None]]] = {}
        self._closing = False  # the gateway is stopping: nothing waits any more

    async def result_of(self, prompt_id: str, timeout: float) -> bool:
        """Wait until the prompt leaves pending, or `timeout` passes; True if woken."""
        if timeout <= 0 or self._closing:
            return False
        waiters = self._results.setdefault(prompt_id, set())
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.add(future)
        try:
            async with asyncio.timeout(timeout):
                await future
            return True
        except TimeoutError:
            return False
        finally:
            waiters.discard(future)
            if not waiters:
                self._results.pop(prompt_id, None)

    @property
    def waiting(self) -> int:
        """Agents waiting on a result here."""
        return sum(len(futures) for futures in self._results.values())

    def prompt_resolved(self, prompt_id: str) -> None:
        for future in self._results.pop(prompt_id, ()):
            if not future.done():
                future.set_result(None)

    def release_all(self) -> None:
        """The gateway is stopping: every waiting agent hears "pending" now and asks again;
        a wait that arrives from now on does not wait."""
        self._closing = True
        results, self._results = self._results, {}
        for waiting in results.values():
            for future in waiting:
                if not future.done():
                    future.set_result(None)
