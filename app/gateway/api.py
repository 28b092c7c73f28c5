"""The HTTP surface of PROTOCOL.md, declared in one place. Rules live in service/app.protocol."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

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
    DeviceInfo,
    DeviceList,
    DismissRequest,
    ErrorBody,
    ErrorCode,
    EventsPage,
    EventsQuery,
    Health,
    PairDeviceRequest,
    PairedDevice,
    Pairing,
    PairingRequest,
    PendingResult,
    PromptList,
    PromptRecord,
    ProtocolError,
    ReplyRequest,
    ResultQuery,
    RunCancelled,
    ToolResult,
    limits,
    pair_link,
    protocol_error_from,
    render_prompt_text,
)

from .auth import Authenticator, Caller
from .clock import Clock, to_datetime
from .config import GatewayConfig
from .devices import DeviceRegistry
from .hot_routes import (
    INVALID_BODY_CODE,
    HotRoutes,
    create_response,
    device_change_response,
    events_response,
    result_response,
)
from .middleware import BodyLimit, RequestLog, WokenFirst, error_response
from .notify import Announcer
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


# Which change each body-taking route is: its malformed body gets that change's error code.
_ACTION_OF_ENDPOINT = {
    "create_prompt": "create",
    "answer_prompt": "answer",
    "dismiss_prompt": "dismiss",
    "reply_to_prompt": "reply",
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


def served_app(app: FastAPI) -> Any:
    """What uvicorn runs: the request log, then the hot routes, then the framework."""
    return RequestLog(HotRoutes(app))


# The dependencies are `async def` on purpose: FastAPI runs a plain `def` dependency on a worker
# thread, a thread hop per request for a dictionary lookup (seen in the profile, #8).
async def _gateway(request: Request) -> Gateway:
    return request.app.state.gateway


async def _agent(credentials: Credentials, request: Request) -> str:
    """The fingerprint of the agent token: prompts belong to the agent that made them."""
    auth: Authenticator = request.app.state.auth
    return fingerprint(auth.require(request.headers.get("authorization"), "agent").token)


async def _device(credentials: Credentials, request: Request) -> Caller:
    return request.app.state.auth.require(request.headers.get("authorization"), "device")


async def _admin(credentials: Credentials, request: Request) -> None:
    request.app.state.auth.require(request.headers.get("authorization"), "admin")


async def _devices(request: Request) -> DeviceRegistry:
    return request.app.state.auth.devices


GatewayDep = Annotated[Gateway, Depends(_gateway)]
Agent = Annotated[str, Depends(_agent)]
Device = Annotated[Caller, Depends(_device)]
Admin = Annotated[None, Depends(_admin)]
Devices = Annotated[DeviceRegistry, Depends(_devices)]


def create_app(config: GatewayConfig, clock: Clock | None = None) -> FastAPI:
    """The gateway's routes as a FastAPI app (serve it through `served_app`); its store opens
    and its deadlines arm at start-up."""

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
        app.state.auth.attach(DeviceRegistry(store.connection), gateway.clock.now_ms)
        announcer = _announcer(config)
        if announcer is not None:
            gateway.on_created = announcer.announce
        retention = asyncio.create_task(_retain(gateway, config))
        try:
            yield
        finally:
            if announcer is not None:
                announcer.close()
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
        action = _ACTION_OF_ENDPOINT.get(getattr(endpoint, "__name__", ""), "")
        code = INVALID_BODY_CODE.get(action, ErrorCode.INVALID_REQUEST)
        return error_response(protocol_error_from(exc, code))  # type: ignore[arg-type]

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
        return create_response(gateway, owner, body)

    @app.get(
        "/v1/prompts/{prompt_id}/result",
        response_model=ToolResult | PendingResult,
        responses=_errors(404),
        tags=["agent"],
    )
    async def prompt_result(
        gateway: GatewayDep, prompt_id: str, owner: Agent, query: Annotated[ResultQuery, Query()]
    ) -> Response:
        """Answered by HotRoutes in front of the framework; declared here for the OpenAPI."""
        return await result_response(gateway, owner, prompt_id, query.wait)

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
        gateway: GatewayDep,
        device: Device,
        request: Request,
        query: Annotated[EventsQuery, Query()],
    ) -> Response:
        """Answered by HotRoutes in front of the framework; declared here for the OpenAPI."""
        return await events_response(gateway, request.app.state.auth, device, query)

    @app.post(
        "/v1/prompts/{prompt_id}/answer",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def answer_prompt(
        gateway: GatewayDep, prompt_id: str, body: AnswerRequest, _device: Device
    ) -> Response:
        return device_change_response(gateway, prompt_id, "answer", body)

    @app.post(
        "/v1/prompts/{prompt_id}/dismiss",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def dismiss_prompt(
        gateway: GatewayDep, prompt_id: str, _device: Device, body: DismissRequest | None = None
    ) -> Response:
        return device_change_response(gateway, prompt_id, "dismiss", body)

    @app.post(
        "/v1/prompts/{prompt_id}/reply",
        response_model=PromptRecord,
        responses=_errors(404, 409),
        tags=["device"],
    )
    async def reply_to_prompt(
        gateway: GatewayDep, prompt_id: str, body: ReplyRequest, _device: Device
    ) -> Response:
        return device_change_response(gateway, prompt_id, "reply", body)

    # ---- devices and pairing (admin; pairing itself needs only the code) --------------------

    @app.post(
        "/v1/pairings", status_code=201, response_model=Pairing, responses=_errors(), tags=["admin"]
    )
    async def create_pairing(
        gateway: GatewayDep,
        devices: Devices,
        _admin: Admin,
        request: Request,
        body: PairingRequest | None = None,
    ) -> dict:
        """A single-use code (10 minutes) and the `askuser://pair` link a phone opens."""
        body = body or PairingRequest()
        now = gateway.clock.now_ms()
        code, expires_ms = devices.new_pairing(body.name, now)
        url = body.gateway_url or config.public_url or _own_url(request)
        return Pairing(
            code=code, expires_at=to_datetime(expires_ms), link=pair_link(url, code)
        ).to_wire()

    @app.post(
        "/v1/devices",
        status_code=201,
        response_model=PairedDevice,
        responses={
            413: {"model": ErrorBody, "description": _ERROR_STATUS_TEXT[413]},
            422: {"model": ErrorBody, "description": _ERROR_STATUS_TEXT[422]},
            403: {"model": ErrorBody, "description": "Unknown, used or expired code."},
            429: {"model": ErrorBody, "description": "Too many wrong codes from this address."},
        },
        tags=["pairing"],
    )
    async def pair_device(
        gateway: GatewayDep, devices: Devices, request: Request, body: PairDeviceRequest
    ) -> dict:
        """No token: the pairing code is the credential. The token is shown only here."""
        address = request.client.host if request.client else "unknown"
        device, token = devices.pair(body.code, body.name, address, gateway.clock.now_ms())
        log.info("paired device %s (%s)", device.id, device.name)
        return PairedDevice(device_id=device.id, token=token, name=device.name).to_wire()

    @app.get("/v1/devices", response_model=DeviceList, responses=_errors(), tags=["admin"])
    async def list_devices(devices: Devices, _admin: Admin) -> dict:
        return DeviceList(
            devices=[
                DeviceInfo(
                    device_id=d.id,
                    name=d.name,
                    created_at=to_datetime(d.created_ms),
                    last_seen_at=to_datetime(d.last_seen_ms) if d.last_seen_ms else None,
                )
                for d in devices.devices()
            ]
        ).to_wire()

    @app.delete("/v1/devices/{device_id}", status_code=204, responses=_errors(404), tags=["admin"])
    async def revoke_device(
        gateway: GatewayDep, devices: Devices, device_id: str, _admin: Admin
    ) -> Response:
        """The device's token gets 401 from now on; a long-poll it has parked ends with 401."""
        if not devices.revoke(device_id):
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no device with id {device_id!r}")
        gateway.waiters.device_revoked(device_id)
        log.info("revoked device %s", device_id)
        return Response(status_code=204)

    app.add_middleware(BodyLimit)
    app.add_middleware(WokenFirst)
    return app


def _announcer(config: GatewayConfig) -> Announcer | None:
    if not config.notify_urls:
        return None
    try:
        announcer = Announcer(config.notify_urls)
    except ImportError:
        log.error("ASK_USER_NOTIFY is set but Apprise is missing: pip install 'ask-user[notify]'")
        return None
    log.info("announcing new prompts to %d notifier(s)", announcer.targets)
    return announcer


def _own_url(request: Request) -> str:
    """The address this request reached the gateway by, for a link made without one."""
    host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
    return f"{request.url.scheme}://{host}"


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
