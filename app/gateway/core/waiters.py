"""In-memory wake-ups for agents' result waits: no polling of the database, no task each.

A wait is woken by the change that resolves its prompt, its own deadline, or the gateway's stop.
`ResultWait` is the one an agent's `GET /result?wait=` parks: a `Later`, like a device's poll,
so the connection answers it without an ASGI task (#27); `result_of` is the awaitable one, for
the MCP tool served inside the gateway. Everything runs on the gateway's event loop, so a check
and a registration never race with a notification. (Device polls wait in feed.py.)
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

from app.protocol import PromptRecord

from . import eager
from .feed import Later, Outcome, Page

RESOLVED_LATELY = 4096  # far more than resolve between a read and the wait it decides

# A woken wait's answer: from the record that resolved its prompt, or (None: its deadline, the
# gateway's stop, another process's change) from the store.
Answer = Callable[[PromptRecord | None], Coroutine[Any, Any, Page]]


class _Waiting:
    __slots__ = ()

    def wake(self, record: PromptRecord | None) -> None:
        raise NotImplementedError


class Waiters:
    """Who waits for which prompt. A wait is decided on a read of the store; with PostgreSQL
    the prompt may be resolved between that read and the wait's start (the read waited for the
    network, #42), so the prompts resolved lately are remembered, and a wait for one of them
    ends as it starts instead of missing its wake-up."""

    def __init__(self) -> None:
        self._results: dict[str, set[_Waiting]] = {}
        self._resolved_lately: OrderedDict[str, None] = OrderedDict()
        self.closing = False  # the gateway is stopping: nothing waits any more

    def add(self, prompt_id: str, waiting: _Waiting) -> None:
        """Wait for `prompt_id`; woken at once if it was resolved lately."""
        if prompt_id in self._resolved_lately:
            waiting.wake(None)
            return
        self._results.setdefault(prompt_id, set()).add(waiting)

    def discard(self, prompt_id: str, waiting: _Waiting) -> None:
        found = self._results.get(prompt_id)
        if found is not None:
            found.discard(waiting)
            if not found:
                del self._results[prompt_id]

    async def result_of(self, prompt_id: str, timeout: float) -> bool:
        """Wait until the prompt leaves pending, or `timeout` passes; True if woken."""
        if timeout <= 0 or self.closing:
            return False
        waiting = _Awaited()
        self.add(prompt_id, waiting)
        try:
            async with asyncio.timeout(timeout):
                await waiting.future
            return True
        except TimeoutError:
            return False
        finally:
            self.discard(prompt_id, waiting)

    @property
    def waiting(self) -> int:
        """Agents waiting on a result here."""
        return sum(len(found) for found in self._results.values())

    def prompt_resolved(self, prompt_id: str, record: PromptRecord | None = None) -> None:
        """`record`: the prompt as it was resolved (None: read it again)."""
        lately = self._resolved_lately
        lately[prompt_id] = None
        if len(lately) > RESOLVED_LATELY:
            lately.popitem(last=False)
        for waiting in self._results.pop(prompt_id, ()):
            waiting.wake(record)

    def prompt_changed(self, prompt_id: str) -> None:
        """Still pending, with a new deadline (the person is answering): its waits end now,
        pending, saying so, and the agents wait again."""
        for waiting in self._results.pop(prompt_id, ()):
            waiting.wake(None)

    def release_all(self) -> None:
        """The gateway is stopping: every waiting agent hears "pending" now and asks again;
        a wait that arrives from now on does not wait."""
        self.closing = True
        results, self._results = self._results, {}
        for found in results.values():
            for waiting in found:
                waiting.wake(None)


class _Awaited(_Waiting):
    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(self, record: PromptRecord | None) -> None:
        if not self.future.done():
            self.future.set_result(None)


class ResultWait(_Waiting, Later):
    """An agent's result wait, parked until its prompt is resolved, `timeout` seconds pass,
    the gateway stops, or a pipelined request needs the answer now. Holds only its prompt's
    id, its answer function and one timer: thousands of agents may wait at once (#8)."""

    __slots__ = ("_answer", "_deliver", "_timeout", "_timer", "_waiters", "prompt_id")

    def __init__(self, waiters: Waiters, prompt_id: str, timeout: float, answer: Answer) -> None:
        self._waiters = waiters
        self.prompt_id = prompt_id
        self._timeout = timeout
        self._answer = answer
        self._deliver: Callable[[Outcome], None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def attach(self, deliver: Callable[[Outcome], None]) -> None:
        self._deliver = deliver
        if self._waiters.closing:
            self.wake(None)
            return
        self._waiters.add(self.prompt_id, self)
        if self._deliver is None:  # resolved lately: answered as it was added
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self._timeout, self.wake, None)

    def detach(self) -> None:
        self._deliver = None
        self._let_go()

    def answer_now(self) -> None:
        self.wake(None)

    def wake(self, record: PromptRecord | None) -> None:
        """Answer once: later calls do nothing."""
        to, self._deliver = self._deliver, None
        if to is None:
            return
        self._let_go()
        eager.deliver(self._answer(record), to)  # at once from a record; from the store, when read

    def _let_go(self) -> None:
        self._waiters.discard(self.prompt_id, self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
