"""What the HTTP floor answers with: handler results made responses, errors in the contract's
JSON shape, and the answers that come later (a long-poll's page, once it is there). The core
(service, feed, store) hands over records, pages and `ProtocolError`s; only this floor knows
Starlette."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse, Response

from app.protocol import PromptRecord, ProtocolError

from ..core.feed import Later, Outcome, Page

JSON = "application/json"


def error_response(exc: ProtocolError) -> JSONResponse:
    headers = {"Allow": ", ".join(exc.extra["allow"])} if "allow" in exc.extra else None
    return JSONResponse(exc.to_body(), status_code=exc.http_status, headers=headers)


def record_response(record: PromptRecord, status: int) -> Response:
    """A prompt's record as its body: pydantic's own JSON of it, the bytes `to_wire()` through
    JSONResponse would make, without the dict between (#27)."""
    return Response(record.model_dump_json(by_alias=True).encode(), status, media_type=JSON)


def outcome_response(outcome: Outcome) -> Response:
    """A long-poll's page, or the error it ended with."""
    if isinstance(outcome, Page):
        return Response(outcome.body, media_type=JSON)
    return error_response(outcome)


def result_response(result: Any, status: int) -> Response | Later:
    """What a handler returned, as a response: a response as it is, a page or a record (a dict)
    as JSON, a poll that parked as the `Later` it is."""
    if isinstance(result, Response | Later):
        return result
    if isinstance(result, Page):
        return Response(result.body, status_code=status, media_type=JSON)
    return JSONResponse(result, status_code=status)


PIPELINE_WATCH = "ask_user.pipeline"  # in a scope: its connection's PipelineWatch


class PipelineWatch:
    """One per connection (connections.py), for a long-poll served the ASGI way: HTTP/1.1
    answers in order, so a poll with requests pipelined behind it answers now (an empty page)
    instead of holding them for its whole wait."""

    __slots__ = ("followed", "parked")

    def __init__(self, followed: Callable[[], bool]) -> None:
        self.followed = followed  # are requests queued behind the one being served?
        self.parked: Later | None = None  # the poll waiting now, told when one arrives


async def when_ready(later: Later, watch: PipelineWatch | None = None) -> Response:
    """The response of `later`, awaited (for a request served by the ASGI app)."""
    future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
    later.attach(future.set_result)
    if watch is not None:
        if watch.followed():
            later.answer_now()
        else:
            watch.parked = later
    try:
        return outcome_response(await future)
    finally:
        later.detach()
        if watch is not None and watch.parked is later:
            watch.parked = None


async def let_woken_polls_answer() -> None:
    """Yield once, so the long-polls a change just woke write their responses first.

    A change resolves waiters' futures; their tasks are then ready to run. Letting them go
    before the change's own response means a device hears of a new prompt (and an agent of its
    answer) before the caller hears "done" (#8: delivery latency).
    """
    await asyncio.sleep(0)
