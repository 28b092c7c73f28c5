"""One reminder per prompt through the notifiers, when a fifth of its time is left
(docs/PROTOCOL.md v1.4): a question announced once and then silence is easy to miss.

Only prompts asked for at least a minute get one, only while still pending when it is due, and
none once the person has started answering (the app said so, or its deadline was moved for it).
The reminder carries the same answer link as the announcement, whose token only this process
knows (the store keeps its hash): so the process that announced a prompt reminds of it, and a
prompt it announced before a restart is not reminded of. Its timer is the deadline timer's,
on the gateway's clock.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from app.protocol import PromptRecord, ProtocolError

from .clock import Clock
from .deadlines import DeadlineTimer

MIN_SECONDS = 60  # a prompt asked for less gets no reminder
LEFT_SHARE = 5  # reminded when 1/5 of its time is left


@dataclass(frozen=True, slots=True)
class _Due:
    at_ms: int
    record: PromptRecord
    link_token: str


class Reminders:
    """`remind(record, token, minutes_left)` is called once per prompt still pending when its
    reminder is due; `still_pending(prompt_id)` says whether it is (and not being answered)."""

    def __init__(
        self,
        clock: Clock,
        still_pending: Callable[[str], Awaitable[bool]],
        remind: Callable[[PromptRecord, str, int], None],
    ) -> None:
        self._clock = clock
        self._still_pending = still_pending
        self._remind = remind
        self._due: dict[str, _Due] = {}
        self._timer = DeadlineTimer(clock, self._remind_due)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer.start(loop, [])

    def stop(self) -> None:
        self._timer.stop()

    def created(self, record: PromptRecord, link_token: str) -> None:
        """A new prompt, announced with `link_token`: its reminder is set, if it gets one."""
        total_ms = record.expires_ms - int(record.created_at.timestamp() * 1000)
        if total_ms < MIN_SECONDS * 1000:
            return
        at_ms = record.expires_ms - total_ms // LEFT_SHARE
        self._due[record.id] = _Due(at_ms, record, link_token)
        self._timer.add(at_ms, record.id)

    def engaged(self, prompt_id: str) -> None:
        """The person is answering this prompt: a reminder would only interrupt them."""
        self._due.pop(prompt_id, None)

    async def _remind_due(self, now_ms: int) -> None:
        for prompt_id in [p for p, due in self._due.items() if due.at_ms <= now_ms]:
            due = self._due.pop(prompt_id)
            try:
                pending = await self._still_pending(prompt_id)
            except ProtocolError:
                pending = False
            if pending:
                left = max(1, math.ceil((due.record.expires_ms - now_ms) / 60_000))
                self._remind(due.record, due.link_token, left)
