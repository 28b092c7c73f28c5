"""Coroutines run now, as far as they go without waiting (#42).

The store's calls are coroutines. The embedded store (SQLite) finishes them without ever
waiting, so a request run eagerly is answered where it was parsed, with no task, as before
(#27); PostgreSQL's wait for the network, and the rest of the request then runs as a task
while the loop serves everything else. Python 3.12's eager tasks do this; 3.11 has none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar, cast

from app.protocol import ProtocolError

log = logging.getLogger("ask_user.gateway")

T = TypeVar("T")

_running: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to tasks


def step(coro: Coroutine[Any, Any, T]) -> tuple[T | None, asyncio.Task[T] | None]:
    """Run `coro` until it finishes or first waits: `(result, None)` when it finished (its
    exception, if any, is raised here), `(None, task)` when it waits and the task runs the
    rest."""
    try:
        first = coro.send(None)
    except StopIteration as done:
        return done.value, None
    task: asyncio.Task[T] = asyncio.get_running_loop().create_task(_rest(coro, first))
    _running.add(task)
    task.add_done_callback(_running.discard)
    return None, task


async def _rest(coro: Coroutine[Any, Any, T], first: Any) -> T:
    result: T = await _Resumed(coro, first)
    return result


class _Resumed:
    """A coroutine that has already run to its first wait, awaited from where it stopped: what
    it waits on is handed to the task as it is, and what the task sends or throws back is
    passed on."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self._coro, self._first = coro, first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, waiting_on = self._coro, self._first
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    waiting_on = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    waiting_on = coro.send(sent)
                except StopIteration as done:
                    return done.value


def deliver(coro: Coroutine[Any, Any, T], to: Callable[[T | ProtocolError], None]) -> None:
    """Run `coro` eagerly and hand its result, or the `ProtocolError` it raised, to `to`: now
    when it never waits, else when its task ends. Any other failure is logged (a callback of the
    loop has nobody to raise it to)."""
    try:
        result, task = step(coro)
    except ProtocolError as exc:
        to(exc)
        return
    if task is None:
        to(result)  # type: ignore[arg-type]  # finished: its value
        return

    def done(finished: asyncio.Task[T]) -> None:
        if finished.cancelled():
            return
        exc = finished.exception()
        if exc is None:
            to(finished.result())
        elif isinstance(exc, ProtocolError):
            to(exc)
        else:
            log.error("a deferred answer failed", exc_info=exc)

    task.add_done_callback(done)


def spawn(coro: Coroutine[Any, Any, Any], what: str) -> None:
    """Run `coro` eagerly for its effect alone; a failure is logged, naming `what`."""

    def logged(result: Any) -> None:
        if isinstance(result, ProtocolError):
            log.warning("%s: %s", what, result.message)

    try:
        deliver(coro, logged)
    except Exception:
        log.exception("%s failed", what)


def finished(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never waits (the embedded store's), for code that is not
    a coroutine itself: tools and tests. One that would wait is closed, and this says so."""
    try:
        coro.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coro.close()
    raise RuntimeError("finished() was given a coroutine that waits; await it instead")
