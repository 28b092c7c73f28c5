"""The event feed: the log's newest events in memory, and the device polls parked at its head.

Every device polls at the same cursor, the head, so an event wakes them all at once. With one
page built per (cursor, limit) and shared by every poll parked there, a new event costs one
JSON page and a future set per device, not a SQL query and a response built per device (#14,
#16: 1,000 subscribed devices once cost 150-200 µs of CPU each per event). Events are added
only after their transaction committed, so nothing is served that the store does not hold.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable

from starlette.responses import Response

from .store import PromptStore, StoredEvent

RECENT_EVENTS = 2048  # served from memory; an older cursor reads the store
WAKE_BATCH = 200  # parked polls answered per turn of the loop
TICK_SECONDS = 0.1  # parked polls time out on these ticks: one timer per tick, not per poll


class EventFeed:
    def __init__(self, store: PromptStore, server_time: Callable[[], str]) -> None:
        self.store = store
        self.server_time = server_time
        self._recent: deque[StoredEvent] = deque(maxlen=RECENT_EVENTS)
        self._parked: dict[tuple[int, int], set[asyncio.Future[Response | None]]] = {}
        self._of_device: dict[str, set[asyncio.Future[Response | None]]] = {}
        self._expiring: dict[int, set[asyncio.Future[Response | None]]] = {}  # by tick
        self._closing = False  # the gateway is stopping: nothing parks any more

    @property
    def parked(self) -> int:
        """Device polls waiting for the next event."""
        return sum(len(group) for group in self._parked.values())

    # ---- serving -----------------------------------------------------------------------

    def page(self, cursor: int, limit: int) -> Response:
        """Events after `cursor` (at most `limit`), from memory when the feed still holds them."""
        recent = self._recent
        if cursor >= self.store.last_seq:
            found: list[StoredEvent] = []
        elif recent and cursor >= recent[0].seq - 1:
            start = cursor - recent[0].seq + 1  # seqs are consecutive within the feed
            found = [recent[i] for i in range(max(start, 0), min(start + limit, len(recent)))]
        else:
            found = self.store.events_after(cursor, limit)
        items = ",".join(
            f'{{"seq":{e.seq},"type":"{e.type}","prompt":{e.record_json}}}' for e in found
        )
        next_cursor = found[-1].seq if found else cursor
        body = (
            f'{{"events":[{items}],"cursor":"{next_cursor}","serverTime":"{self.server_time()}"}}'
        )
        return Response(body, media_type="application/json")

    async def next_page(
        self, cursor: int, limit: int, wait: float, device_id: str | None
    ) -> Response | None:
        """The page that the next event makes, shared with every poll parked at `cursor`; None
        when `wait` seconds pass or the device is revoked first."""
        if wait <= 0 or self._closing:
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response | None] = loop.create_future()
        group = self._parked.setdefault((cursor, limit), set())
        group.add(future)
        mine = self._of_device.setdefault(device_id, set()) if device_id else None
        if mine is not None:
            mine.add(future)
        tick = math.ceil((loop.time() + wait) / TICK_SECONDS)
        expiring = self._expiring.get(tick)
        if expiring is None:
            expiring = self._expiring[tick] = set()
            loop.call_at(tick * TICK_SECONDS, self._expire, tick)
        expiring.add(future)
        try:
            return await future
        finally:
            expiring.discard(future)
            group.discard(future)
            if not group and self._parked.get((cursor, limit)) is group:
                del self._parked[(cursor, limit)]
            if mine is not None:
                mine.discard(future)
                if not mine:
                    self._of_device.pop(device_id, None)  # type: ignore[arg-type]

    def _expire(self, tick: int) -> None:
        for future in self._expiring.pop(tick, ()):
            if not future.done():
                future.set_result(None)

    # ---- changes -----------------------------------------------------------------------

    def committed(self, event: StoredEvent) -> None:
        """A committed event: keep it, then answer every parked poll, one page per cursor."""
        if self._recent and event.seq != self._recent[-1].seq + 1:
            self._recent.clear()  # a gap (events written elsewhere): the store fills it
        self._recent.append(event)
        parked, self._parked = self._parked, {}
        woken = [
            (future, page)
            for (cursor, limit), group in parked.items()
            for page in (self.page(cursor, limit),)
            for future in group
        ]
        self._wake(woken, 0)

    def _wake(self, woken: list, start: int) -> None:
        """Answer parked polls a batch at a time, letting other requests in between: with
        5,000 devices, waking all at once held health and creates for a second (#14)."""
        for future, page in woken[start : start + WAKE_BATCH]:
            if not future.done():
                future.set_result(page)
        if start + WAKE_BATCH < len(woken):
            asyncio.get_running_loop().call_soon(self._wake, woken, start + WAKE_BATCH)

    def device_revoked(self, device_id: str) -> None:
        """End the revoked device's parked polls at once (they then answer 401)."""
        for future in self._of_device.pop(device_id, ()):
            if not future.done():
                future.set_result(None)

    def release_all(self) -> None:
        """The gateway is stopping: every parked poll answers now (an empty page), and a poll
        that arrives from now on does not park."""
        self._closing = True
        parked, self._parked = self._parked, {}
        for group in parked.values():
            for future in group:
                if not future.done():
                    future.set_result(None)
