"""The routes every prompt goes through, served straight from ASGI in front of the framework.

Creating a prompt, the device's long-poll, the answer (or dismissal, or reply) and the agent's
wait for the result are most of a gateway's traffic. The profile (#8) showed the framework's
routing, dependency solving and middleware as about two thirds of a create's or an answer's
time, and most of what a parked poll holds in memory. So these are answered here, with the same
auth, the same contract models and the same responses as the FastAPI routes in api.py, which
stay declared (and call the same functions below) for the OpenAPI document.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response

from app.protocol import (
    AnswerRequest,
    CreatePromptRequest,
    DismissRequest,
    ErrorCode,
    EventsQuery,
    FieldError,
    ProtocolError,
    ReplyRequest,
    ResultQuery,
    ensure_main_session,
    parse_model,
)

from .auth import Authenticator, Caller
from .middleware import decode_json_body, error_response, let_woken_polls_answer, read_body
from .service import Gateway, fingerprint

# ---- what the routes answer (shared with the FastAPI declarations) ----------------------------


def _cursor(value: str | None, gateway: Gateway) -> int:
    if value is None or value == "":
        return gateway.store.last_seq
    if not value.isdigit():
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST,
            "after: not a cursor this gateway made",
            [FieldError("after", "must be a cursor returned by this gateway")],
        )
    seq = int(value)
    if seq < gateway.store.pruned_through or seq > gateway.store.last_seq:
        raise ProtocolError(
            ErrorCode.CURSOR_EXPIRED,
            "the cursor is older than the events this gateway keeps (or from another "
            "gateway): re-sync from GET /v1/prompts",
        )
    return seq


def _events_body(gateway: Gateway, events: list, cursor: int) -> str:
    """The events page as JSON text, splicing in the stored record JSON without re-encoding."""
    items = ",".join(
        f'{{"seq":{e.seq},"type":"{e.type}","prompt":{e.record_json}}}' for e in events
    )
    return f'{{"events":[{items}],"cursor":"{cursor}","serverTime":"{gateway.server_time()}"}}'


async def events_response(
    gateway: Gateway, auth: Authenticator, caller: Caller, query: EventsQuery
) -> Response:
    """The long-poll: events after the cursor, at once or when the next one is appended; 401
    at once when the device is revoked meanwhile."""
    cursor = _cursor(query.after, gateway)
    if gateway.store.last_seq <= cursor:
        await gateway.waiters.next_event(query.wait, caller.device_id)
        auth.still_valid(caller)
    found = gateway.store.events_after(cursor, query.limit)
    body = _events_body(gateway, found, found[-1].seq if found else cursor)
    return Response(body, media_type="application/json")


async def result_response(gateway: Gateway, owner: str, prompt_id: str, wait: float) -> Response:
    result = await gateway.wait_result(owner, prompt_id, wait)
    return JSONResponse(result.to_wire() if result else {"status": "pending"})


def create_response(gateway: Gateway, owner: str, request: CreatePromptRequest) -> Response:
    """201 with the new record, or 200 with the one an earlier try of this requestId made."""
    ensure_main_session(request)
    record, created = gateway.create(owner, request)
    return JSONResponse(record.to_wire(), status_code=201 if created else 200)


def device_change_response(
    gateway: Gateway, prompt_id: str, action: str, request: Any
) -> JSONResponse:
    """An answer, a dismissal or a reply: the resolved record (first one wins)."""
    if action == "answer":
        record = gateway.answer(
            prompt_id, request.answers, request.device_id, request.idempotency_key
        )
    elif action == "reply":
        record = gateway.reply(prompt_id, request.text, request.device_id, request.idempotency_key)
    else:
        request = request or DismissRequest()
        record = gateway.dismiss(prompt_id, request.device_id, request.idempotency_key)
    return JSONResponse(record)


# The error code a malformed body of each change gets (the FastAPI routes use it too).
INVALID_BODY_CODE = {
    "create": ErrorCode.INVALID_PROMPT,
    "answer": ErrorCode.INVALID_ANSWER,
    "dismiss": ErrorCode.INVALID_REQUEST,
    "reply": ErrorCode.INVALID_REPLY,
}
# A device change's body model, and whether a body is required.
_DEVICE_CHANGES: dict[str, tuple[type, bool]] = {
    "answer": (AnswerRequest, True),
    "dismiss": (DismissRequest, False),
    "reply": (ReplyRequest, True),
}

# ---- the ASGI handler -------------------------------------------------------------------------

_PROMPT_PATH = re.compile(r"^/v1/prompts/([^/]+)/(result|answer|dismiss|reply)$")


class HotRoutes:
    """Answers the hot routes itself; every other request goes on to `app` (FastAPI).

    A parked poll holds only this handler's frames and the waiter, never the request's headers
    or the prompt's record, because thousands of them wait at once.
    """

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        route = _route(scope) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        try:
            response = await self._respond(scope, receive, *route)
        except ProtocolError as exc:
            response = error_response(exc)
        if response is not None:
            await response(scope, receive, send)

    async def _respond(
        self, scope: dict, receive: Any, action: str, prompt_id: str | None
    ) -> Response | None:
        auth, gateway = self.app.state.auth, self.app.state.gateway
        if action == "events":
            caller = auth.require(_authorization(scope), "device")
            query = parse_model(EventsQuery, _params(scope))
            return await events_response(gateway, auth, caller, query)
        if action == "result":
            owner = fingerprint(auth.require(_authorization(scope), "agent").token)
            wait = parse_model(ResultQuery, _params(scope)).wait
            return await result_response(gateway, owner, prompt_id or "", wait)
        raw = await read_body(scope, receive)  # 413 comes before 401, as for every route
        if raw is None:
            return None  # the client went away
        code = INVALID_BODY_CODE[action]
        if action == "create":
            owner = fingerprint(auth.require(_authorization(scope), "agent").token)
            data = decode_json_body(scope, raw, code)
            request = parse_model(CreatePromptRequest, data, code)
            response = create_response(gateway, owner, request)
        else:
            auth.require(_authorization(scope), "device")
            model, required = _DEVICE_CHANGES[action]
            data = decode_json_body(scope, raw, code, required)
            request = None if data is None else parse_model(model, data, code)
            response = device_change_response(gateway, prompt_id or "", action, request)
        await let_woken_polls_answer()
        return response


def _route(scope: dict) -> tuple[str, str | None] | None:
    """(action, prompt id) for a hot route, else None."""
    method, path = scope["method"], scope["path"]
    if path == "/v1/events":
        return ("events", None) if method == "GET" else None
    if path == "/v1/prompts":
        return ("create", None) if method == "POST" else None
    match = _PROMPT_PATH.match(path)
    if match is None:
        return None
    prompt_id, action = match.groups()
    if (action == "result") != (method == "GET") or method not in ("GET", "POST"):
        return None  # a wrong method gets the framework's 405
    return action, prompt_id


def _authorization(scope: dict) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            return value.decode("latin-1")
    return None


def _params(scope: dict) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
