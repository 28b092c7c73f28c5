"""One way to ask and wait, whatever carries it: create, wait for the result, cancel on stop.

An `Asker` reaches prompts at a gateway: over HTTP (`client.HttpAsker`, for `ask_user()`, the
CLI and the stdio MCP server) or in the gateway's own process (its `/mcp` endpoint). The flow
here — a create that is finished and then cancelled when the call stops half-way, waits that
ride out an unreachable gateway, and a cancel that always goes out — is written once for both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import anyio

from app.protocol.backoff import backoff_delay

log = logging.getLogger("ask_user.agent")

RUN_ABORT = "run-abort"
RESULT_WAIT_SECONDS = 30
DEADLINE_MARGIN_SECONDS = 30  # how long past the deadline we keep trying to reach the gateway
CANCEL_GRACE_SECONDS = 10  # how long a stopped call still waits to cancel what it asked
BACKOFF_START, BACKOFF_CAP = 0.25, 5.0

AbortEvent = asyncio.Event | threading.Event
T = TypeVar("T")


class Unreachable(Exception):
    """The gateway did not answer this time (network, restart, 5xx): try again later."""


class Asker(Protocol):
    """What the flow needs from a gateway. `create` raises `AskUserError` when refused."""

    async def create(self, body: dict[str, Any], abort: AbortEvent | None) -> dict[str, Any] | None:
        """The new (or replayed) prompt record; None when `abort` was set first."""
        ...

    async def result(self, prompt_id: str, wait: float) -> dict[str, Any] | None:
        """The tool result once terminal; while pending, `{"status": "pending",
        "secondsLeft", "answering"}` (or None); raises Unreachable."""
        ...

    async def cancel(self, prompt_id: str) -> None:
        """Best effort, never raises: the run stopped, so its question goes too."""
        ...

    async def late_answers(
        self, session_key: str, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The late answers meant for this agent or its project (v1.4), each claimed and
        confirmed (v1.5); best effort: [] when the gateway cannot be asked."""
        ...


def aborted(abort: AbortEvent | None) -> bool:
    return abort is not None and abort.is_set()


async def sleep_or_abort(seconds: float, abort: AbortEvent | None) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0 and not aborted(abort):
        await asyncio.sleep(min(left, 0.1))


def backoff(attempt: int) -> float:
    return backoff_delay(attempt, BACKOFF_START, BACKOFF_CAP)


async def despite_cancel(work: Awaitable[T]) -> T:
    """Run `work` to its end even when the caller is being cancelled (anyio scopes or a plain
    task.cancel()), then let the cancellation go on. A stopped call's cancel must reach the
    gateway: cut off half-way it left the prompt pending on the phone with nobody waiting."""
    task = asyncio.ensure_future(work)
    cancelled = False
    with anyio.CancelScope(shield=True):
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.done():
                    break
                cancelled = True  # a native cancel arrives once: keep waiting for the work
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


async def create(
    asker: Asker, body: dict[str, Any], abort: AbortEvent | None
) -> dict[str, Any] | None:
    """Create the prompt; stopped half-way, finish the create and cancel what it made."""
    creating = asyncio.ensure_future(asker.create(body, abort))
    try:
        return await asyncio.shield(creating)
    except (asyncio.CancelledError, KeyboardInterrupt):

        async def undo() -> None:
            with contextlib.suppress(Exception):
                made = await asyncio.wait_for(creating, CANCEL_GRACE_SECONDS)
                if made is not None:
                    await asker.cancel(made["id"])

        await despite_cancel(undo())
        raise


def is_pending(result: dict[str, Any] | None) -> bool:
    return result is None or result.get("status") == "pending"


async def wait_result(
    asker: Asker,
    prompt_id: str,
    give_up_at: float,
    abort: AbortEvent | None = None,
    on_pending: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Wait until the prompt is terminal (riding out restarts and dropped connections); None
    when `abort` was set first. Past `give_up_at` an unreachable gateway means it expired;
    a deadline the person's answering moved (v1.4) moves it too. `on_pending` hears how long
    the prompt has left each time a wait ends before it does."""
    attempt = 0
    while not aborted(abort):
        poll = asyncio.ensure_future(asker.result(prompt_id, RESULT_WAIT_SECONDS))
        try:
            while not poll.done():
                await asyncio.wait({poll}, timeout=0.1 if abort is not None else None)
                if aborted(abort):
                    return None
            result = poll.result()
        except Unreachable as exc:
            if time.monotonic() > give_up_at:  # the deadline has long passed: it expired
                return {"status": "no_answer", "reason": "expired"}
            if attempt == 0:  # said once per outage, not silent for a minute (#53)
                log.warning("lost the gateway (%s); still waiting, trying again", exc)
            await sleep_or_abort(backoff(attempt), abort)
            attempt += 1
            continue
        finally:
            poll.cancel()  # no-op when done; stops the request when we leave early
        attempt = 0
        if not is_pending(result):
            return result
        if result is not None:
            left = result.get("secondsLeft")
            if isinstance(left, int | float):
                give_up_at = max(give_up_at, time.monotonic() + left + DEADLINE_MARGIN_SECONDS)
            if on_pending is not None:
                on_pending(result)
    return None


def give_up_at(timeout_seconds: float) -> float:
    return time.monotonic() + timeout_seconds + DEADLINE_MARGIN_SECONDS


async def ask(
    asker: Asker,
    body: dict[str, Any],
    timeout_seconds: float,
    abort: AbortEvent | None = None,
    on_asked: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Create, wait, and return the tool result; a stop (cancellation, Ctrl-C, `abort`)
    cancels the prompt before returning or raising. `on_asked`: told the prompt's id."""
    record = await create(asker, body, abort)
    if record is None:
        return {"status": "no_answer", "reason": "cancelled"}
    if on_asked is not None:
        on_asked(record["id"])
    try:
        result = await wait_result(asker, record["id"], give_up_at(timeout_seconds), abort)
    except (asyncio.CancelledError, KeyboardInterrupt):
        await despite_cancel(asker.cancel(record["id"]))
        raise
    if result is None:  # aborted by the caller
        await asker.cancel(record["id"])
        return {"status": "no_answer", "reason": "cancelled"}
    return await with_late_answers(asker, body["sessionKey"], result, body.get("agentId"))


async def with_late_answers(
    asker: Asker, session_key: str, result: dict[str, Any], agent_id: str | None = None
) -> dict[str, Any]:
    """The tool result, carrying `lateAnswers` when the person answered earlier questions of
    this agent (or its project) after their deadline (v1.4): it hears of them without
    asking."""
    late = await asker.late_answers(session_key, agent_id)
    return {**result, "lateAnswers": late} if late else result
