"""The HTTP surface of PROTOCOL.md, declared in one place. Rules live in service/app.protocol."""

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, unquote

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import __version__
from app.protocol import (
    AnswerRequest,
    CancelRequest,
    CreatePromptRequest,
    DismissRequest,
    ErrorBody,
    ErrorCode,
    EventsPage,
    EventsQuery,
    FieldError,
    Health,
    PendingResult,
    PromptList,
    PromptRecord,
    ProtocolError,
    ReplyRequest,
    ResultQuery,
    RunCancelled,
    ToolResult,
    ensure_main_session,
    field_errors,
    limits,
    parse_model,
    render_prompt_text,
)

from .auth import Authenticator
from .clock import Clock
from .config import GatewayConfig
from .service import Gateway, fingerprint
from .store import PromptStore

log = logging.getLogger("ask_user.gateway")

_bearer = HTTPBearer(auto_error=False, description="An agent or a device token.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]

_ERROR_STATUS_TEXT = {
    401: "Missing or unknown token (`unauthorized`).",
    403: "A token of the wrong role (`forbidden`), or not the main session.",
    404: "No such prompt (`not_found`).",
    409: "No longer pending (`already_resolved`, with the record) or `pending_exists`.",
    410: "The cursor is older than the events kept (`cursor_expired`): re-sync.",
    413: "The request body is over 64 KiB (`payload_too_large`).",
    422: "Invalid input, with `fields` naming each problem.",
}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    every = (401, 403, 413, 422, *statuses)
    return {s: {"model": ErrorBody, "description": _ERROR_STATUS_TEXT[s]} for s in sorted(every)}


# The error code a malformed body of each route gets.
_INVALID_BODY_CODE = {
    "create_prompt": ErrorCode.INVALID_PROMPT,
    "answer_prompt": ErrorCode.INVALID_ANSWER,
    "reply_to_prompt": ErrorCode.INVALID_REPLY,
}


_HTTP_ERROR_CODE = {
    404: ErrorCode.NOT_FOUND,
    405: "method_not_allowed",
    413: ErrorCode.PAYLOAD_TOO_LARGE,
}
_HTTP_ERROR_MESSAGE = {
    404: "no such route; see /openapi.json",
    405: "this route does not take that method; see /openapi.json",
    413: f"request bodies are limited to {limits.MAX_BODY_BYTES} bytes",
}


def error_response(exc: ProtocolError) -> JSONResponse:
    return JSONResponse(exc.to_body(), status_code=exc.http_status)


class BodyLimit:
    """413 with the contract's error body for request bodies over the limit.

    The body (at most 64 KiB) is read before the route runs, whether or not it declares its
    length, then handed on unchanged; later receives (disconnects) pass straight through.
    """

    def __init__(self, app: Any, max_bytes: int = limits.MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        too_large = error_response(
            ProtocolError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"request bodies are limited to {self.max_bytes} bytes",
            )
        )
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await too_large(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        buffered: list[dict] = [{"type": "http.request", "body": b"".join(chunks)}]

        async def replay() -> dict:
            return buffered.pop() if buffered else await receive()

        await self.app(scope, replay, send)


class RequestLog:
    """One info line per request: method, path, status, milliseconds. Never a header."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            if log.isEnabledFor(logging.INFO):
                log.info(
                    "%s %s %d %.1fms",
                    scope["method"],
                    scope["path"],
                    status,
                    (time.perf_counter() - started) * 1000,
                )


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


async def events_page(gateway: Gateway, query: EventsQuery) -> str:
    """The long-poll: events after the cursor, at once or when the next one is appended."""
    cursor = _cursor(query.after, gateway)
    if gateway.store.last_seq <= cursor:
        await gateway.waiters.next_event(query.wait)
    found = gateway.store.events_after(cursor, query.limit)
    return _events_body(gateway, found, found[-1].seq if found else cursor)


async def result_body(gateway: Gateway, owner: str, prompt_id: str, query: ResultQuery) -> dict:
    result = await gateway.wait_result(owner, prompt_id, query.wait)
    return result.to_wire() if result else {"status": "pending"}


_RESULT_PATH = re.compile(r"^/v1/prompts/([^/]+)/result$")


class LongPolls:
    """Serves the two long-polls (`/v1/events`, `/result`) straight from ASGI.

    A parked request then holds only this handler, not the framework's request stack, which
    is most of what an idle poll costs. Same auth, query model and responses as the routes.
    """

    def __init__(self, app: Any, fastapi_app: FastAPI) -> None:
        self.app = app
        self.fastapi_app = fastapi_app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            path = scope["path"]
            match = None if path == "/v1/events" else _RESULT_PATH.match(path)
            if path == "/v1/events" or match:
                await self._serve(scope, receive, send, match.group(1) if match else None)
                return
        await self.app(scope, receive, send)

    async def _serve(self, scope: dict, receive: Any, send: Any, prompt_id: str | None) -> None:
        state = self.fastapi_app.state
        headers = dict(scope.get("headers") or ())
        authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        params = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        try:
            if prompt_id is None:
                state.auth.require(authorization, "device")
                query = parse_model(EventsQuery, params)
                response: Response = Response(
                    await events_page(state.gateway, query), media_type="application/json"
                )
            else:
                owner = fingerprint(state.auth.require(authorization, "agent"))
                query = parse_model(ResultQuery, params)
                response = JSONResponse(
                    await result_body(state.gateway, owner, unquote(prompt_id), query)
                )
        except ProtocolError as exc:
            response = error_response(exc)
        await response(scope, receive, send)


def _gateway(request: Request) -> Gateway:
    return request.app.state.gateway


def _agent(credentials: Credentials, request: Request) -> str:
    """The fingerprint of the agent token: prompts belong to the agent that made them."""
    auth: Authenticator = request.app.state.auth
    return fingerprint(auth.require(request.headers.get("authorization"), "agent"))


def _device(credentials: Credentials, request: Request) -> None:
    request.app.state.auth.require(request.headers.get("authorization"), "device")


GatewayDep = Annotated[Gateway, Depends(_gateway)]
Agent = Annotated[str, Depends(_agent)]
Device = Annotated[None, Depends(_device)]


def create_app(config: GatewayConfig, clock: Clock | None = None) -> FastAPI:
    """The gateway as an ASGI app; its store opens and its deadlines arm at start-up."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        store = PromptStore(config.db_path, synchronous=config.synchronous)
        gateway = Gateway(store, clock)
        expired = gateway.start(asyncio.get_running_loop())
        if expired:
            log.info(
                "expired %d prompt(s) whose deadline passed while the gateway was down", expired
            )
        app.state.gateway = gateway
        retention = asyncio.create_task(_retain(gateway, config))
        try:
            yield
        finally:
            retention.cancel()
            gateway.stop()
            store.close()

    app = FastAPI(
        title="Ask User gateway",
        version=__version__,
        description="Holds ask_user prompts between the agents that ask and the devices that "
        "answer. See PROTOCOL.md.",
        lifespan=lifespan,
        strict_content_type=False,  # `curl -d '{...}'` without a JSON content type is fine
    )
    app.state.auth = Authenticator(config.tokens)

    @app.exception_handler(ProtocolError)
    async def _protocol_error(_: Request, exc: ProtocolError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_ERROR_CODE.get(exc.status_code, "http_error")
        message = _HTTP_ERROR_MESSAGE.get(exc.status_code, str(exc.detail))
        response = error_response(ProtocolError(code, message))
        response.status_code = exc.status_code
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        endpoint = request.scope.get("endpoint")
        code = _INVALID_BODY_CODE.get(getattr(endpoint, "__name__", ""), ErrorCode.INVALID_REQUEST)
        fields = field_errors(exc)  # type: ignore[arg-type]
        summary = "; ".join(str(f) for f in fields) or "invalid request"
        return error_response(ProtocolError(code, summary, fields))

    @app.get("/v1/health", response_model=Health, tags=["meta"])
    async def health() -> dict:
        """200 without a token, for load balancers and benchmarks."""
        return {"status": "ok"}

    # ---- agent -------------------------------------------------------------------------

    @app.post(
        "/v1/prompts",
        status_code=201,
        response_model=PromptRecord,
        responses={
            200: {"model": PromptRecord, "description": "Idempotent replay"},
            **_errors(409),
        },
        tags=["agent"],
    )
    async def create_prompt(
        gateway: GatewayDep, body: CreatePromptRequest, owner: Agent
    ) -> Response:
        ensure_main_session(body)
        record, created = gateway.create(owner, body)
        return JSONResponse(record.to_wire(), status_code=201 if created else 200)

    @app.get(
        "/v1/prompts/{prompt_id}/result",
        response_model=ToolResult | PendingResult,
        responses=_errors(404),
        tags=["agent"],
    )
    async def prompt_result(
        gateway: GatewayDep, prompt_id: str, owner: Agent, query: Annotated[ResultQuery, Query()]
    ) -> Response:
        """Normally answered by LongPolls before this route; kept for the OpenAPI document."""
        return JSONResponse(await result_body(gateway, owner, prompt_id, query))

    @app.post(
        "/v1/prompts/{prompt_id}/cancel",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["agent"],
    )
    async def cancel_prompt(
        gateway: GatewayDep, prompt_id: str, owner: Agent, body: CancelRequest | None = None
    ) -> dict:
        return gateway.cancel(owner, prompt_id, body.reason if body else None).to_wire()

    @app.post(
        "/v1/runs/{run_id}/cancel", response_model=RunCancelled, responses=_errors(), tags=["agent"]
    )
    async def cancel_run(
        gateway: GatewayDep, run_id: str, owner: Agent, body: CancelRequest | None = None
    ) -> dict:
        return {
            "cancelled": gateway.cancel_run(owner, run_id, body.reason if body else "run-abort")
        }

    # ---- device ------------------------------------------------------------------------

    @app.get("/v1/prompts", response_model=PromptList, responses=_errors(404), tags=["device"])
    async def list_prompts(
        gateway: GatewayDep,
        _device: Device,
        status: Literal["pending", "all"] = "pending",
        session_key: Annotated[str | None, Query(alias="sessionKey", max_length=200)] = None,
        limit: Annotated[int, Query(ge=1, le=limits.MAX_LIMIT)] = limits.DEFAULT_LIST_LIMIT,
        before: Annotated[str | None, Query(max_length=64)] = None,
    ) -> Response:
        gateway.expire_due(gateway.clock.now_ms())  # the snapshot shows nothing past its time
        records = gateway.store.list_json(
            pending_only=status == "pending", session_key=session_key, limit=limit, before=before
        )
        if records is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"before: no prompt with id {before!r}")
        body = (
            f'{{"prompts":[{",".join(records)}],"cursor":"{gateway.store.last_seq}",'
            f'"serverTime":"{gateway.server_time()}"}}'
        )
        return Response(body, media_type="application/json")

    @app.get(
        "/v1/prompts/{prompt_id}",
        response_model=PromptRecord,
        responses=_errors(404),
        tags=["device"],
    )
    async def get_prompt(gateway: GatewayDep, prompt_id: str, _device: Device) -> dict:
        return gateway.get(prompt_id).to_wire()

    @app.get(
        "/v1/prompts/{prompt_id}/text",
        response_class=Response,  # 200 is text/plain (below); errors stay JSON
        responses={
            200: {
                "content": {"text/plain": {"schema": {"type": "string"}}},
                "description": "The prompt as readable text",
            },
            **_errors(404),
        },
        tags=["device"],
    )
    async def prompt_text(
        gateway: GatewayDep, prompt_id: str, _device: Device
    ) -> PlainTextResponse:
        return PlainTextResponse(render_prompt_text(gateway.get(prompt_id).questions))

    @app.get("/v1/events", response_model=EventsPage, responses=_errors(410), tags=["device"])
    async def events(
        gateway: GatewayDep, _device: Device, query: Annotated[EventsQuery, Query()]
    ) -> Response:
        """Normally answered by LongPolls before this route; kept for the OpenAPI document."""
        return Response(await events_page(gateway, query), media_type="application/json")

    @app.post(
        "/v1/prompts/{prompt_id}/answer",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def answer_prompt(
        gateway: GatewayDep, prompt_id: str, body: AnswerRequest, _device: Device
    ) -> dict:
        return gateway.answer(prompt_id, body.answers, body.device_id, body.idempotency_key)

    @app.post(
        "/v1/prompts/{prompt_id}/dismiss",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def dismiss_prompt(
        gateway: GatewayDep, prompt_id: str, _device: Device, body: DismissRequest | None = None
    ) -> dict:
        body = body or DismissRequest()
        return gateway.dismiss(prompt_id, body.device_id, body.idempotency_key)

    @app.post(
        "/v1/prompts/{prompt_id}/reply",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def reply_to_prompt(
        gateway: GatewayDep, prompt_id: str, body: ReplyRequest, _device: Device
    ) -> dict:
        return gateway.reply(prompt_id, body.text, body.device_id, body.idempotency_key)

    app.add_middleware(BodyLimit)
    app.add_middleware(LongPolls, fastapi_app=app)
    app.add_middleware(RequestLog)
    return app


async def _retain(gateway: Gateway, config: GatewayConfig) -> None:
    """Hourly: drop terminal prompts after 30 days, events and keys after 24 h (configurable)."""
    while True:
        now = gateway.clock.now_ms()
        gone = gateway.store.prune(
            prompts_before_ms=now - int(config.prompt_retention_days * 86_400_000),
            events_before_ms=now - int(config.event_retention_hours * 3_600_000),
        )
        if any(gone):
            log.info("retention: removed %d prompt(s), %d event(s)", *gone)
        await asyncio.sleep(3600)
