"""The event feed: the log's newest events in memory, and the device polls parked at its head.

Every device polls at the same cursor, the head, so an event wakes them all at once. With one
page built per (person, cursor, limit) and shared by every poll parked there, a new event costs one
JSON page and a callback per device, not a SQL query and a response built per device (#14,
#16: 1,000 subscribed devices once cost 150-200 µs of CPU each per event). A parked poll is a
`Parked` (no task, no future): the connection answers it with the shared page's bytes. Events
are added only after their transaction committed, so nothing is served that the store does
not hold. A device hears only of its person's prompts (docs/PROTOCOL.md v1.3): an event wakes the
polls of its person, and a page skips other people's events (its cursor moves past them).

This is the core's floor: it deals in pages of bytes and the contract's errors. What becomes of
them on the wire (HTTP heads, the connection a page is written to) is routing.py's and
connections.py's.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from app.protocol import ProtocolError
from app.protocol.wire import events_page

from ..store.storage import Store, StoredEvent
from . import eager

RECENT_EVENTS = 2048  # served from memory; an older cursor reads the store
WAKE_SLICE_SECONDS = 0.005  # parked polls are answered for this long per turn of the loop
_CLOCK_EVERY = 32  # polls answered between looks at the clock
TICK_SECONDS = 0.1  # parked polls time out on these ticks: one timer per tick, not per poll


class Page:
    """One page of events, encoded once and shared by every poll parked at its cursor.

    `memo` belongs to whoever serves it: the connection keeps the page's whole HTTP response
    there, so a page written to a thousand devices is framed once (#16)."""

    __slots__ = ("body", "memo")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.memo: bytes | None = None


Outcome = Page | ProtocolError  # what a poll is answered with


class Later:
    """An answer that comes later: a long-poll's. Whoever serves the request attaches what
    writes the answer (called once), detaches when the client leaves first, or asks for the
    answer now (a pipelined request is behind it). No task and no future per waiting request:
    with thousands parked, each costs one small object (#16)."""

    __slots__ = ()

    def attach(self, deliver: Callable[[Outcome], None]) -> None:
        raise NotImplementedError

    def detach(self) -> None:
        raise NotImplementedError

    def answer_now(self) -> None:
        raise NotImplementedError


class Parked(Later):
    """One poll parked at the feed's head until the next event, its deadline tick, the device's
    revocation, or the gateway's stop. On waking, `check(caller)` runs first (it raises when
    the caller lost its access meanwhile); then the page is the answer, or, with no event, the
    page at its cursor now. Allocations are few on purpose: this is made once per device per
    event, and the collector's time grew with every object it left behind (#16)."""

    __slots__ = ("_caller", "_check", "_deliver", "_feed", "device_id", "key", "tick")

    def __init__(
        self,
        feed: EventFeed,
        key: tuple[str, int, int],  # person, cursor, limit
        tick: int,
        caller: Any,
        check: Callable[[Any], None],
    ) -> None:
        self._feed = feed
        self.key = key
        self.tick = tick
        self._caller = caller
        self.device_id: str | None = caller.device_id
        self._check = check
        self._deliver: Callable[[Outcome], None] | None = None

    def attach(self, deliver: Callable[[Outcome], None]) -> None:
        self._deliver = deliver
        self._feed._park(self)

    def detach(self) -> None:
        self._deliver = None
        self._feed._unpark(self)

    def answer_now(self) -> None:
        self._feed._unpark(self)
        self.settle(None)

    def settle(self, page: Page | None) -> None:
        """Answer once: later calls (a tick after a wake-up, say) do nothing."""
        deliver, self._deliver = self._deliver, None
        if deliver is None:
            return
        try:
            self._check(self._caller)
        except ProtocolError as exc:
            deliver(exc)
            return
        if page is not None:
            deliver(page)
        else:  # from memory at once; an old cursor's from the store, when read
            eager.deliver(self._feed.page(*self.key), deliver)


class EventFeed:
    def __init__(self, store: Store, server_time: Callable[[], str]) -> None:
        self.store = store
        self.server_time = server_time
        # The newest event fed, in order and only once committed: no cursor served runs ahead
        # of the store (#14), nor past an event of another gateway process not yet heard.
        self.head = 0  # read from the store at start()
        self._recent: deque[StoredEvent] = deque(maxlen=RECENT_EVENTS)
        # person → (person, cursor, limit) → the polls parked there
        self._parked: dict[str, dict[tuple[str, int, int], set[Parked]]] = {}
        self._of_device: dict[str, set[Parked]] = {}
        self._expiring: dict[int, set[Parked]] = {}  # by tick
        self._closing = False  # the gateway is stopping: nothing parks any more
        self._loop = asyncio.get_running_loop()  # made at start-up, on the serving loop

    async def start(self) -> None:
        self.head = await self.store.newest_seq()

    @property
    def parked(self) -> int:
        """Device polls waiting for the next event."""
        return sum(len(group) for groups in self._parked.values() for group in groups.values())

    # ---- serving -----------------------------------------------------------------------

    async def poll(
        self,
        person: str,
        cursor: int,
        limit: int,
        wait: float,
        caller: Any,
        check: Callable[[Any], None],
    ) -> Page | Parked:
        """A long-poll: `person`'s events after `cursor` now, or, with none and `wait` > 0, a
        poll to park at the head for at most `wait` seconds (it parks once attached)."""
        found, head = await self._after(person, cursor, limit)
        if found or wait <= 0 or self._closing:
            return self._page(found, head)
        tick = math.ceil((self._loop.time() + wait) / TICK_SECONDS)
        return Parked(self, (person, head, limit), tick, caller, check)

    async def page(self, person: str, cursor: int, limit: int) -> Page:
        """`person`'s events after `cursor` (at most `limit`), and the cursor to poll from."""
        return self._page(*await self._after(person, cursor, limit))

    async def _after(self, person: str, cursor: int, limit: int) -> tuple[list[StoredEvent], int]:
        """The events, from memory when the feed still holds them, and the next cursor: past
        other people's events too, so a device never reads them again."""
        held = self._held_after(person, cursor, limit)
        if held is not None:
            return held
        found = await self.store.events_after(cursor, limit, person)
        if len(found) == limit:
            return found, found[-1].seq
        return [e for e in found if e.seq <= self.head], self.head

    def _held_after(
        self, person: str, cursor: int, limit: int
    ) -> tuple[list[StoredEvent], int] | None:
        """As `_after`, from memory; None when the feed no longer holds the cursor's events."""
        recent = self._recent
        if cursor >= self.head:
            return [], cursor
        if recent and cursor >= recent[0].seq - 1:
            found: list[StoredEvent] = []
            for index in range(max(cursor - recent[0].seq + 1, 0), len(recent)):
                event = recent[index]  # seqs are consecutive within the feed
                if event.person == person:
                    found.append(event)
                    if len(found) == limit:
                        return found, event.seq
            return found, recent[-1].seq
        return None

    def _page(self, found: list[StoredEvent], next_cursor: int) -> Page:
        events = [(e.seq, e.type, e.record_json) for e in found]
        return Page(events_page(events, next_cursor, self.server_time()))

    def _park(self, parked: Parked) -> None:
        if self._closing:
            parked.settle(None)
            return
        person, cursor, limit = parked.key
        if cursor < self.head:  # events came while its page was read from the store (#42)
            held = self._held_after(person, cursor, limit)
            if held is None or held[0]:  # some are its person's (or cannot tell): answer now
                parked.settle(self._page(*held) if held is not None else None)
                return
        self._parked.setdefault(parked.key[0], {}).setdefault(parked.key, set()).add(parked)
        if (device_id := parked.device_id) is not None:
            self._of_device.setdefault(device_id, set()).add(parked)
        expiring = self._expiring.get(parked.tick)
        if expiring is None:
            expiring = self._expiring[parked.tick] = set()
            self._loop.call_at(parked.tick * TICK_SECONDS, self._expire, parked.tick)
        expiring.add(parked)

    def _unpark(self, parked: Parked) -> None:
        groups = self._parked.get(parked.key[0])
        group = groups.get(parked.key) if groups is not None else None
        if groups is not None and group is not None:
            group.discard(parked)
            if not group:
                del groups[parked.key]
                if not groups:
                    del self._parked[parked.key[0]]
        self._forget(parked)

    def _forget(self, parked: Parked) -> None:
        """Out of the deadline and device indexes (its cursor group is already gone)."""
        expiring = self._expiring.get(parked.tick)
        if expiring is not None:
            expiring.discard(parked)
        if (device_id := parked.device_id) is not None:
            mine = self._of_device.get(device_id)
            if mine is not None:
                mine.discard(parked)
                if not mine:
                    del self._of_device[device_id]

    def _expire(self, tick: int) -> None:
        for parked in self._expiring.pop(tick, ()):
            parked.answer_now()

    # ---- changes -----------------------------------------------------------------------

    def committed(self, event: StoredEvent) -> None:
        """The next committed event (seq `head` + 1): keep it, then answer every parked poll,
        one page per cursor."""
        if self._recent and event.seq != self._recent[-1].seq + 1:
            self._recent.clear()  # a gap (events pruned or unheard): the store fills it
        self._recent.append(event)
        self.head = event.seq
        parked = self._parked.pop(event.person, None)
        if parked is None:
            return
        woken: list[tuple[Parked, Page | None]] = []
        for (person, cursor, limit), group in parked.items():
            held = self._held_after(person, cursor, limit)
            page = self._page(*held) if held is not None else None  # None: each reads the store
            woken += [(poll, page) for poll in group]
        if woken:  # now: the agent's result wait, if any, was woken first (#16)
            self._wake(woken, 0)

    def _wake(self, woken: list[tuple[Parked, Page | None]], start: int) -> None:
        """Answer parked polls for a slice of time per turn, letting other requests in between:
        with 5,000 devices, waking all at once held health and creates for a second (#14). A
        slice, not a count: a fixed batch of 200 let the re-polls of the first batches in
        before the last devices heard at all (#16)."""
        until = time.monotonic() + WAKE_SLICE_SECONDS
        end = len(woken)
        index = start
        while index < end:
            for poll, page in woken[index : index + _CLOCK_EVERY]:
                self._forget(poll)
                poll.settle(page)
            index += _CLOCK_EVERY
            if time.monotonic() >= until:
                break
        if index < end:
            self._loop.call_soon(self._wake, woken, index)

    def device_revoked(self, device_id: str) -> None:
        """End the revoked device's parked polls at once (they then answer 401)."""
        for parked in list(self._of_device.get(device_id, ())):
            parked.answer_now()

    def release_all(self) -> None:
        """The gateway is stopping: every parked poll answers now (an empty page), and a poll
        that arrives from now on does not park."""
        self._closing = True
        for groups in list(self._parked.values()):
            for group in list(groups.values()):
                for parked in list(group):
                    parked.answer_now()
