"""Prompts: what agents ask and wait for, what devices list, answer, dismiss or reply to."""

from __future__ import annotations

import logging
from typing import Any

from starlette.responses import PlainTextResponse, Response

from app.protocol import (
    AnswerRequest,
    DismissRequest,
    DraftRequest,
    EngagedRequest,
    ErrorCode,
    LateAnswerAckRequest,
    LateAnswerClaimRequest,
    LateAnswerList,
    LateAnswerRequest,
    ProtocolError,
    ReplyRequest,
    ensure_main_session,
    render_prompt_text,
)
from app.protocol.wire import prompt_list

from ...core.feed import Later, Page, Parked
from ...core.service import Gateway
from ..responses import record_response
from ..routing import Call

log = logging.getLogger("ask_user.gateway")


# ---- agent -----------------------------------------------------------------------------------


async def create_prompt(call: Call) -> Response:
    """201 with the new record, or 200 with the one an earlier try of this requestId made."""
    ensure_main_session(call.body)
    record, created = await call.gateway.create(call.owner, call.person, call.body)
    return record_response(record, 201 if created else 200)


async def prompt_result(call: Call) -> Page | Later:
    """The tool result once the prompt is terminal; `{"status": "pending"}` if `wait` passes."""
    # A wait parks as a `Later`, answered by the connection like a device's poll (#27).
    return await call.gateway.result_wait(call.owner, call.params["prompt_id"], call.query.wait)


async def cancel_prompt(call: Call) -> dict[str, Any]:
    """Cancel a pending prompt: its agent's run stopped."""
    reason = call.body.reason if call.body else None
    return (await call.gateway.cancel(call.owner, call.params["prompt_id"], reason)).to_wire()


async def cancel_run(call: Call) -> dict[str, Any]:
    """Cancel every pending prompt of a run."""
    reason = call.body.reason if call.body and call.body.reason else "run-abort"
    return {"cancelled": await call.gateway.cancel_run(call.owner, call.params["run_id"], reason)}


# ---- device ----------------------------------------------------------------------------------


async def list_prompts(call: Call) -> Page:
    """A snapshot, newest first, and the cursor to long-poll from after it."""
    gateway, query = call.gateway, call.query
    await gateway.expire_due(gateway.clock.now_ms())  # the snapshot shows nothing past its time
    records = await gateway.store.list_json(
        person=call.person,
        pending_only=query.status == "pending",
        session_key=query.session_key,
        limit=query.limit,
        before=query.before,
    )
    if records is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"before: no prompt with id {query.before!r}")
    return Page(prompt_list(records, gateway.feed.head, gateway.server_time()))


async def get_prompt(call: Call) -> dict[str, Any]:
    """One prompt's record."""
    return (await call.gateway.get(call.params["prompt_id"], call.person)).to_wire()


async def prompt_text(call: Call) -> Response:
    """The prompt as readable text, for channels without buttons."""
    record = await call.gateway.get(call.params["prompt_id"], call.person)
    return PlainTextResponse(render_prompt_text(record.questions))


async def events(call: Call) -> Page | Parked:
    """The long-poll: events after the cursor, at once or when the next one is appended (only
    the events of the device's person); 401 at once when the device is revoked meanwhile."""
    # A parked poll is answered with the page shared by every poll parked at its cursor;
    # thousands wait at once, each holding only what its Parked keeps (#8).
    gateway, query = call.gateway, call.query
    return await gateway.feed.poll(
        call.person,
        await _cursor(query.after, gateway),
        query.limit,
        query.wait,
        call.caller,
        call.auth.still_valid,
    )


async def _cursor(value: str | None, gateway: Gateway) -> int:
    if value is None:
        return gateway.feed.head
    seq = int(value)  # ASCII digits: EventsQuery checked them
    if seq > gateway.feed.head:  # given by another gateway process, ahead of what this one heard
        await gateway.catch_up()
    if seq < gateway.store.pruned_through or seq > gateway.feed.head:
        raise ProtocolError(
            ErrorCode.CURSOR_EXPIRED,
            "the cursor is older than the events this gateway keeps (or from another "
            "gateway): re-sync from GET /v1/prompts",
        )
    return seq


async def answer_prompt(call: Call) -> dict[str, Any]:
    """First answer wins; the same idempotencyKey again gets the original 200."""
    body: AnswerRequest = call.body
    return await call.gateway.answer(
        call.params["prompt_id"], call.person, body.answers, body.device_id, body.idempotency_key
    )


async def dismiss_prompt(call: Call) -> dict[str, Any]:
    """The person declined: the agent gets no_answer."""
    body: DismissRequest = call.body or DismissRequest()
    return await call.gateway.dismiss(
        call.params["prompt_id"], call.person, body.device_id, body.idempotency_key
    )


async def engaged_on_prompt(call: Call) -> dict[str, Any]:
    """The person is choosing or typing: with little time left, the deadline moves."""
    body: EngagedRequest = call.body or EngagedRequest()
    prompt_id = call.params["prompt_id"]
    return (await call.gateway.engaged(prompt_id, call.person, body.device_id)).to_wire()


async def draft_prompt(call: Call) -> dict[str, Any]:
    """The person's answer in progress, for their other devices (v1.4); never the agent's."""
    body: DraftRequest = call.body
    paired = call.caller.device_id if call.caller is not None else None
    name = await call.auth.registry.name_of(paired) if paired is not None else body.device_name
    # The id the device gives itself (as in resolvedBy), so it knows its own draft again.
    record = await call.gateway.drafts.put(
        call.params["prompt_id"], call.person, body.answers, body.device_id or paired, name, paired
    )
    return record.to_wire()


async def late_answer_prompt(call: Call) -> dict[str, Any]:
    """An answer after the deadline or the run's stop (v1.4): the agent collects it."""
    body: LateAnswerRequest = call.body
    return await call.gateway.late.answer(
        call.params["prompt_id"], call.person, body.answers, body.device_id, body.idempotency_key
    )


async def late_answers(call: Call) -> dict[str, Any]:
    """A look at the late answers waiting for this agent or project, oldest first (claiming
    nothing); with none, waits up to `wait` seconds for one."""
    query = call.query
    found = await call.gateway.late.wait(call.person, query.session_key, query.wait, query.agent_id)
    return LateAnswerList(late_answers=found).to_wire()


async def claim_late_answers(call: Call) -> dict[str, Any]:
    """Take the late answers meant for this agent or project, under a lease (v1.5)."""
    body: LateAnswerClaimRequest = call.body
    found = await call.gateway.late.claim(
        call.person, body.session_key, body.agent_id, body.claim_id, body.lease_seconds, body.wait
    )
    return LateAnswerList(late_answers=found).to_wire()


async def acknowledge_late_answer(call: Call) -> dict[str, Any]:
    """The agent has the late answer: it is delivered (idempotent; with `claimId`, only by
    the claim that holds it)."""
    body: LateAnswerAckRequest | None = call.body
    claim_id = body.claim_id if body is not None else None
    return await call.gateway.late.acknowledge(call.params["prompt_id"], call.person, claim_id)


async def reply_to_prompt(call: Call) -> dict[str, Any]:
    """A plain-text reply from a channel, read by the contract's rules."""
    body: ReplyRequest = call.body
    return await call.gateway.reply(
        call.params["prompt_id"], call.person, body.text, body.device_id, body.idempotency_key
    )
