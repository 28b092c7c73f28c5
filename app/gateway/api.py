"""The HTTP surface of PROTOCOL.md: every endpoint in one table, and the app that serves it.

Handlers only translate between the wire and `Gateway`; the rules live in service.py and
app.protocol, the way through a request in routing.py, the OpenAPI document in openapi.py.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse, PlainTextResponse, Response

from app import __version__
from app.protocol import (
    DEFAULT_PERSON_ID,
    AgentToken,
    AnswerRequest,
    CancelRequest,
    CreatePromptRequest,
    DeviceInfo,
    DeviceList,
    DismissRequest,
    ErrorCode,
    EventsPage,
    EventsQuery,
    Health,
    ListQuery,
    PairDeviceRequest,
    PairedDevice,
    Pairing,
    PairingRequest,
    PendingResult,
    Person,
    PersonList,
    PersonRequest,
    PromptList,
    PromptRecord,
    ProtocolError,
    ReplyRequest,
    ResultQuery,
    RunCancelled,
    ToolResult,
    ensure_main_session,
    pair_link,
    render_prompt_text,
)
from app.protocol.selection import QuestionAnswer
from app.protocol.strings import Strings
from app.protocol.wire import prompt_list

from .config import GatewayConfig
from .core.auth import Authenticator
from .core.clock import Clock, to_datetime
from .core.devices import DeviceRegistry
from .core.feed import Later, Page, Parked
from .core.guesses import Guesses
from .core.notify import LINK_PATH, Announcer
from .core.people import People, PersonRow
from .core.service import Gateway
from .http.answer_page import PageState, language_of, render, security_headers
from .http.openapi import openapi_document
from .http.remote_mcp import CALLER_KEY, RemoteMcp
from .http.request_log import RequestLog
from .http.responses import record_response
from .http.routing import Call, Endpoint, Router, header, query_params
from .store.storage import PRUNE_BATCH, Store

log = logging.getLogger("ask_user.gateway")

# ---- meta ------------------------------------------------------------------------------------


def health(call: Call) -> dict:
    """200 without a token (HEAD too), for load balancers and benchmarks."""
    return {"status": "ok"}


def openapi(call: Call) -> Response:
    """This table as an OpenAPI 3.1 document."""
    return Response(call.state.schema, media_type="application/json")


# ---- agent -----------------------------------------------------------------------------------


def create_prompt(call: Call) -> Response:
    """201 with the new record, or 200 with the one an earlier try of this requestId made."""
    ensure_main_session(call.body)
    record, created = call.gateway.create(call.owner, call.person, call.body)
    return record_response(record, 201 if created else 200)


def prompt_result(call: Call) -> Page | Later:
    """The tool result once the prompt is terminal; `{"status": "pending"}` if `wait` passes."""
    # A wait parks as a `Later`, answered by the connection like a device's poll (#27).
    return call.gateway.result_wait(call.owner, call.params["prompt_id"], call.query.wait)


def cancel_prompt(call: Call) -> dict:
    """Cancel a pending prompt: its agent's run stopped."""
    reason = call.body.reason if call.body else None
    return call.gateway.cancel(call.owner, call.params["prompt_id"], reason).to_wire()


def cancel_run(call: Call) -> dict:
    """Cancel every pending prompt of a run."""
    reason = call.body.reason if call.body and call.body.reason else "run-abort"
    return {"cancelled": call.gateway.cancel_run(call.owner, call.params["run_id"], reason)}


# ---- device ----------------------------------------------------------------------------------


def list_prompts(call: Call) -> Page:
    """A snapshot, newest first, and the cursor to long-poll from after it."""
    gateway, query = call.gateway, call.query
    gateway.expire_due(gateway.clock.now_ms())  # the snapshot shows nothing past its time
    records = gateway.store.list_json(
        person=call.person,
        pending_only=query.status == "pending",
        session_key=query.session_key,
        limit=query.limit,
        before=query.before,
    )
    if records is None:
        raise ProtocolError(ErrorCode.NOT_FOUND, f"before: no prompt with id {query.before!r}")
    return Page(prompt_list(records, gateway.feed.head, gateway.server_time()))


def get_prompt(call: Call) -> dict:
    """One prompt's record."""
    return call.gateway.get(call.params["prompt_id"], call.person).to_wire()


def prompt_text(call: Call) -> Response:
    """The prompt as readable text, for channels without buttons."""
    return PlainTextResponse(
        render_prompt_text(call.gateway.get(call.params["prompt_id"], call.person).questions)
    )


def events(call: Call) -> Page | Parked:
    """The long-poll: events after the cursor, at once or when the next one is appended (only
    the events of the device's person); 401 at once when the device is revoked meanwhile."""
    # A parked poll is answered with the page shared by every poll parked at its cursor;
    # thousands wait at once, each holding only what its Parked keeps (#8).
    gateway, query = call.gateway, call.query
    return gateway.feed.poll(
        call.person,
        _cursor(query.after, gateway),
        query.limit,
        query.wait,
        call.caller,
        call.auth.still_valid,
    )


def _cursor(value: str | None, gateway: Gateway) -> int:
    if value is None:
        return gateway.feed.head
    seq = int(value)  # ASCII digits: EventsQuery checked them
    if seq > gateway.feed.head:  # given by another gateway process, ahead of what this one heard
        gateway.catch_up()
    if seq < gateway.store.pruned_through or seq > gateway.feed.head:
        raise ProtocolError(
            ErrorCode.CURSOR_EXPIRED,
            "the cursor is older than the events this gateway keeps (or from another "
            "gateway): re-sync from GET /v1/prompts",
        )
    return seq


def answer_prompt(call: Call) -> dict:
    """First answer wins; the same idempotencyKey again gets the original 200."""
    body: AnswerRequest = call.body
    return call.gateway.answer(
        call.params["prompt_id"], call.person, body.answers, body.device_id, body.idempotency_key
    )


def dismiss_prompt(call: Call) -> dict:
    """The person declined: the agent gets no_answer."""
    body: DismissRequest = call.body or DismissRequest()
    return call.gateway.dismiss(
        call.params["prompt_id"], call.person, body.device_id, body.idempotency_key
    )


def reply_to_prompt(call: Call) -> dict:
    """A plain-text reply from a channel, read by the contract's rules."""
    body: ReplyRequest = call.body
    return call.gateway.reply(
        call.params["prompt_id"], call.person, body.text, body.device_id, body.idempotency_key
    )


# ---- remote agents --------------------------------------------------------------------------


async def mcp(call: Call, receive: Any, send: Any) -> None:
    """MCP over Streamable HTTP: the `ask_user` tool, its guidance and result, as over stdio.
    POST sends a JSON-RPC message (answered as JSON or an SSE stream), GET opens the server's
    stream, DELETE ends the session. `Ask-User-Session` names the prompt's sessionKey."""
    call.scope[CALLER_KEY] = call.caller
    await call.state.remote_mcp.serve(call.scope, receive, send)


# ---- answer links: a page for any browser (the token in the path is the credential) --------


def answer_page(call: Call) -> Response:
    """The prompt as a page with a form; `?choose=N` (one single-select question) shows that
    option with one confirm button. A GET never decides: link previews and mail scanners
    fetch links."""
    return _link_page(call, lambda record, strings: _choice_state(call, record))


def answer_from_page(call: Call) -> Response:
    """The page's form answers or dismisses, as a device would (first answer wins; the same
    form sent again is safe); `?choose=N` with no body answers with that option (what a
    notification's button sends)."""

    def decide(record: PromptRecord, strings: Strings) -> PageState:
        gateway, token = call.gateway, call.params["token"]
        choice = _choice_state(call, record)
        if choice.choose is not None:
            label = record.questions[0].options[choice.choose - 1].label
            gateway.answer_by_link(token, {record.questions[0].id: [label]}, choice.attempt)
            return PageState(notice=strings("link_sent"))
        form = _form(call.raw)
        attempt = (form.get("attempt") or [""])[0][:64] or secrets.token_urlsafe(9)
        if (form.get("action") or [""])[0] == "dismiss":
            gateway.dismiss_by_link(token, attempt)
            return PageState(notice=strings("link_dismissed"))
        selection = _form_selection(record, form)
        chosen = {qid: list(a.chosen) for qid, a in selection.items()}
        other = {qid: a.other for qid, a in selection.items()}
        if missing := [a.question.header for a in selection.values() if not a.complete]:
            listed = ", ".join(missing)
            raise _Refill(PageState(strings("link_missing", questions=listed), chosen, other))
        answers = {qid: a.values() for qid, a in selection.items()}
        try:
            gateway.answer_by_link(token, answers, attempt)
        except ProtocolError as exc:
            if exc.code != ErrorCode.INVALID_ANSWER:
                raise
            raise _Refill(PageState(exc.message, chosen, other), 422) from None
        return PageState(notice=strings("link_sent"))

    return _link_page(call, decide)


class _Refill(Exception):
    """The form comes back as it was sent, with what is missing or wrong."""

    def __init__(self, state: PageState, status: int = 422) -> None:
        self.state, self.status = state, status


def _link_page(call: Call, decide: Callable[[PromptRecord, Strings], PageState]) -> Response:
    """Find the prompt of the link (a wrong token counts against the address, like a pairing
    code), let `decide` act, and render what is true now; every outcome is a page."""
    strings = Strings(language_of(header(call.scope, b"accept-language")))
    gateway, token = call.gateway, call.params["token"]
    guesses, now = call.state.link_guesses, gateway.clock.now_ms()
    action = LINK_PATH.format(token=token)
    record = gateway.prompt_of_link(token)
    status, state = 200, PageState()
    try:
        if record is None:
            guesses.refuse_when_limited(call.client_address, now)
            guesses.failed(call.client_address, now)
            raise ProtocolError(ErrorCode.NOT_FOUND, strings("link_unknown"))
        state = decide(record, strings)
    except _Refill as refill:
        status, state = refill.status, refill.state
    except ProtocolError as exc:
        status = exc.http_status
        if exc.code == ErrorCode.TOO_MANY_ATTEMPTS:
            state = PageState(strings("link_too_many"))
        elif exc.code in (ErrorCode.ALREADY_RESOLVED, ErrorCode.IDEMPOTENCY_CONFLICT):
            state = PageState()  # the page says what became of it
        else:
            state = PageState(exc.message)
    if record is not None:
        record = gateway.prompt_of_link(token)  # as it is now
        if not state.attempt:
            state.attempt = secrets.token_urlsafe(9)
    left = record.seconds_left(now) if record is not None else 0.0
    nonce = secrets.token_urlsafe(12)
    return HTMLResponse(
        render(record, action, strings, state, nonce, left),
        status_code=status,
        headers=security_headers(nonce),
    )


def _choice_state(call: Call, record: PromptRecord) -> PageState:
    """`?choose=N`: 1-based, for a prompt of one single-select question; else ignored."""
    value = query_params(call.scope).get("choose")
    [first, *more] = record.questions
    if value is None or more or first.multi_select or not value.isascii() or not value.isdigit():
        return PageState()
    number = int(value[:2])
    if not 1 <= number <= len(first.options):
        return PageState()
    return PageState(choose=number, attempt=f"choose:{number}")


def _form(raw: bytes) -> dict[str, list[str]]:
    try:
        return parse_qs(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError(ErrorCode.INVALID_ANSWER, "the form could not be read") from None


def _form_selection(record: PromptRecord, form: dict[str, list[str]]) -> dict[str, QuestionAnswer]:
    """Each question as the form chose it, by the app's own selection rules (on one choice,
    words typed in Other replace the option)."""
    selection = {}
    for question in record.questions:
        answer = QuestionAnswer(question)
        labels = question.option_labels()
        for value in form.get(f"q.{question.id}", []):
            if value in labels:
                answer = answer.choose(value)
        selection[question.id] = answer.set_other(
            (form.get(f"other.{question.id}") or [""])[0].strip()
        )
    return selection


# ---- devices and pairing (admin; pairing itself needs only the code) --------------------------


def create_pairing(call: Call) -> dict:
    """A single-use code (10 minutes) and the `askuser://pair` link a phone opens."""
    body: PairingRequest = call.body or PairingRequest()
    person = call.auth.people.require(body.person_id or DEFAULT_PERSON_ID, "personId")
    code, expires_ms = call.auth.registry.new_pairing(
        body.name, call.gateway.clock.now_ms(), person.id
    )
    url = body.gateway_url or call.state.config.public_url or call.own_url
    return Pairing(
        code=code, expires_at=to_datetime(expires_ms), link=pair_link(url, code)
    ).to_wire()


def pair_device(call: Call) -> dict:
    """No token: the pairing code is the credential. The token is shown only here."""
    body: PairDeviceRequest = call.body
    device, token = call.auth.registry.pair(
        body.code, body.name, call.client_address, call.gateway.clock.now_ms()
    )
    log.info("paired device %s (%s)", device.id, device.name)
    return PairedDevice(device_id=device.id, token=token, name=device.name).to_wire()


def list_devices(call: Call) -> dict:
    """Paired devices (not the tokens named in the environment)."""
    return DeviceList(
        devices=[
            DeviceInfo(
                device_id=d.id,
                name=d.name,
                person_id=d.person,
                created_at=to_datetime(d.created_ms),
                last_seen_at=to_datetime(d.last_seen_ms) if d.last_seen_ms else None,
            )
            for d in call.auth.registry.devices()
        ]
    ).to_wire()


def revoke_device(call: Call) -> Response:
    """The device's token gets 401 from now on; a long-poll it has parked ends with 401."""
    device_id = call.params["device_id"]
    if not call.auth.registry.revoke(device_id):
        raise ProtocolError(ErrorCode.NOT_FOUND, f"no device with id {device_id!r}")
    call.gateway.feed.device_revoked(device_id)
    log.info("revoked device %s", device_id)
    return Response(status_code=204)


# ---- people (admin) ----------------------------------------------------------------------------


def _person(row: PersonRow) -> Person:
    created = to_datetime(row.created_ms) if row.created_ms is not None else None
    return Person(person_id=row.id, name=row.name, created_at=created)


def add_person(call: Call) -> dict:
    """A person of the team: their agents' prompts reach only their devices."""
    body: PersonRequest = call.body
    person = call.auth.people.add(body.name, call.gateway.clock.now_ms())
    log.info("added person %s", person.id)
    return _person(person).to_wire()


def list_people(call: Call) -> dict:
    """Everyone, the default person (the environment's and tokens.json's tokens) first."""
    return PersonList(people=[_person(row) for row in call.auth.people.all()]).to_wire()


def remove_person(call: Call) -> Response:
    """Their pending prompts are cancelled (their agents stop waiting), then their agent
    tokens and devices stop at once: a long-poll parked by one of them ends with 401."""
    person_id, people = call.params["person_id"], call.auth.people
    people.removable(person_id)
    call.gateway.cancel_person(person_id, reason="person-removed")
    for device_id in people.remove(person_id, call.auth.registry):
        call.gateway.feed.device_revoked(device_id)
    log.info("removed person %s", person_id)
    return Response(status_code=204)


def new_agent_token(call: Call) -> dict:
    """One more agent token of the person: shown only here, stored hashed."""
    person_id = call.params["person_id"]
    token = call.auth.people.new_agent_token(person_id, call.gateway.clock.now_ms())
    return AgentToken(token=token, person_id=person_id).to_wire()


# ---- the table -------------------------------------------------------------------------------

_PROMPT = "/v1/prompts/{prompt_id}"

ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        method="GET",
        path="/v1/health",
        handler=health,
        role=None,
        summary="Health",
        tag="meta",
        served="at_once",
        response=Health,
    ),
    Endpoint(
        method="GET",
        path="/openapi.json",
        handler=openapi,
        role=None,
        summary="This document",
        tag="meta",
        served="at_once",
        in_schema=False,
    ),
    # agent
    Endpoint(
        method="POST",
        path="/v1/prompts",
        handler=create_prompt,
        role="agent",
        summary="Create a prompt",
        tag="agent",
        served="at_once",
        status=201,
        response=PromptRecord,
        errors=(409,),
        body=CreatePromptRequest,
        invalid_code=ErrorCode.INVALID_PROMPT,
        replays=True,
    ),
    Endpoint(
        method="GET",
        path=f"{_PROMPT}/result",
        handler=prompt_result,
        role="agent",
        summary="Wait for the tool result",
        tag="agent",
        served="at_once",
        response=(ToolResult, PendingResult),
        errors=(404,),
        query=ResultQuery,
    ),
    Endpoint(
        method="POST",
        path=f"{_PROMPT}/cancel",
        handler=cancel_prompt,
        role="agent",
        summary="Cancel a prompt",
        tag="agent",
        served="at_once",
        response=PromptRecord,
        errors=(404, 409),
        body=CancelRequest,
        body_required=False,
    ),
    Endpoint(
        method="POST",
        path="/v1/runs/{run_id}/cancel",
        handler=cancel_run,
        role="agent",
        summary="Cancel a run's prompts",
        tag="agent",
        served="at_once",
        response=RunCancelled,
        body=CancelRequest,
        body_required=False,
    ),
    # device
    Endpoint(
        method="GET",
        path="/v1/prompts",
        handler=list_prompts,
        role="device",
        summary="List prompts",
        tag="device",
        served="at_once",
        response=PromptList,
        errors=(404,),
        query=ListQuery,
    ),
    Endpoint(
        method="GET",
        path=_PROMPT,
        handler=get_prompt,
        role="device",
        summary="Get a prompt",
        tag="device",
        served="at_once",
        response=PromptRecord,
        errors=(404,),
    ),
    Endpoint(
        method="GET",
        path=f"{_PROMPT}/text",
        handler=prompt_text,
        role="device",
        summary="A prompt as text",
        tag="device",
        served="at_once",
        response="text",
        errors=(404,),
    ),
    Endpoint(
        method="GET",
        path="/v1/events",
        handler=events,
        role="device",
        summary="Long-poll events",
        tag="device",
        served="at_once",
        response=EventsPage,
        errors=(410,),
        query=EventsQuery,
    ),
    Endpoint(
        method="POST",
        path=f"{_PROMPT}/answer",
        handler=answer_prompt,
        role="device",
        summary="Answer a prompt",
        tag="device",
        served="at_once",
        response=PromptRecord,
        errors=(404, 409),
        body=AnswerRequest,
        invalid_code=ErrorCode.INVALID_ANSWER,
    ),
    Endpoint(
        method="POST",
        path=f"{_PROMPT}/dismiss",
        handler=dismiss_prompt,
        role="device",
        summary="Dismiss a prompt",
        tag="device",
        served="at_once",
        response=PromptRecord,
        errors=(404, 409),
        body=DismissRequest,
        body_required=False,
    ),
    Endpoint(
        method="POST",
        path=f"{_PROMPT}/reply",
        handler=reply_to_prompt,
        role="device",
        summary="Reply in plain text",
        tag="device",
        served="at_once",
        response=PromptRecord,
        errors=(404, 409),
        body=ReplyRequest,
        invalid_code=ErrorCode.INVALID_REPLY,
    ),
    # remote agents: the MCP SDK's transport serves these once the agent token is checked
    *(
        Endpoint(
            method=method,
            path="/mcp",
            handler=mcp,
            role="agent",
            summary=summary,
            tag="agent",
            served="mounted",
            response="mcp",
            errors=(400, 404, 429) if method != "POST" else (400, 404, 406, 429),
        )
        for method, summary in (
            ("POST", "MCP: send a message"),
            ("GET", "MCP: the server's stream"),
            ("DELETE", "MCP: end the session"),
        )
    ),
    # answer links
    Endpoint(
        method="GET",
        path=LINK_PATH,
        handler=answer_page,
        role=None,
        summary="The answer page of a link",
        tag="links",
        served="at_once",
        response="html",
        errors=(404, 429),
    ),
    Endpoint(
        method="POST",
        path=LINK_PATH,
        handler=answer_from_page,
        role=None,
        summary="Answer or dismiss from the page",
        tag="links",
        served="at_once",
        response="html",
        errors=(404, 409, 422, 429),
    ),
    # devices and pairing
    Endpoint(
        method="POST",
        path="/v1/pairings",
        handler=create_pairing,
        role="admin",
        summary="Make a pairing code",
        tag="admin",
        served="at_once",
        status=201,
        response=Pairing,
        errors=(404,),
        body=PairingRequest,
        body_required=False,
    ),
    Endpoint(
        method="POST",
        path="/v1/devices",
        handler=pair_device,
        role=None,
        summary="Pair a device with a code",
        tag="pairing",
        served="at_once",
        status=201,
        response=PairedDevice,
        errors=(403, 429),
        body=PairDeviceRequest,
    ),
    Endpoint(
        method="GET",
        path="/v1/devices",
        handler=list_devices,
        role="admin",
        summary="List paired devices",
        tag="admin",
        served="at_once",
        response=DeviceList,
    ),
    Endpoint(
        method="DELETE",
        path="/v1/devices/{device_id}",
        handler=revoke_device,
        role="admin",
        summary="Revoke a device",
        tag="admin",
        served="at_once",
        status=204,
        errors=(404,),
    ),
    # people
    Endpoint(
        method="POST",
        path="/v1/people",
        handler=add_person,
        role="admin",
        summary="Add a person",
        tag="admin",
        served="at_once",
        status=201,
        response=Person,
        errors=(409,),
        body=PersonRequest,
    ),
    Endpoint(
        method="GET",
        path="/v1/people",
        handler=list_people,
        role="admin",
        summary="List people",
        tag="admin",
        served="at_once",
        response=PersonList,
    ),
    Endpoint(
        method="DELETE",
        path="/v1/people/{person_id}",
        handler=remove_person,
        role="admin",
        summary="Remove a person",
        tag="admin",
        served="at_once",
        status=204,
        errors=(404, 409),
    ),
    Endpoint(
        method="POST",
        path="/v1/people/{person_id}/agent-tokens",
        handler=new_agent_token,
        role="admin",
        summary="Make an agent token for a person",
        tag="admin",
        served="at_once",
        status=201,
        response=AgentToken,
        errors=(404,),
    ),
)


# ---- the app ---------------------------------------------------------------------------------


def open_store(config: GatewayConfig) -> Store:
    """PostgreSQL when a database URL is configured, else the SQLite file in the data folder."""
    if config.database_url:
        from .store.postgres import PostgresStore

        return PostgresStore(config.database_url)
    from .store.sqlite import PromptStore

    return PromptStore(config.db_path, synchronous=config.synchronous)


class GatewayApp:
    """The gateway's parts: `asgi` (the request log around the router) is what uvicorn runs;
    the store opens and the deadlines arm at start-up (lifespan), and close at shut-down."""

    def __init__(self, config: GatewayConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock
        self.state = SimpleNamespace(
            config=config,
            auth=Authenticator(config.tokens),
            gateway=None,
            schema=b"",
            link_guesses=Guesses("answer links"),
        )
        self.state.schema = openapi_document(
            ENDPOINTS,
            title="Ask User gateway",
            version=__version__,
            description="Holds ask_user prompts between the agents that ask and the devices "
            "that answer. See PROTOCOL.md.",
        )
        self.state.remote_mcp = RemoteMcp(self.state)
        self.router = Router(ENDPOINTS, self.state, lifespan=self._lifespan)
        self.asgi = RequestLog(self.router)  # what uvicorn runs
        self._stop: list[Any] = []
        # Where answer links point without a public URL: this address (the embedded gateway
        # sets the port it really got).
        self.own_url = f"http://{config.host}:{config.port}"

    async def _lifespan(self, scope: dict, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    self._start()
                    await self.state.remote_mcp.start()
                except Exception as exc:
                    log.exception("the gateway could not start")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.state.remote_mcp.stop()  # its calls cancel their prompts first
                self._shut()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _start(self) -> None:
        config = self.config
        store = open_store(config)
        gateway = Gateway(store, self.clock)
        expired = gateway.start(asyncio.get_running_loop())
        if expired:
            log.info(
                "expired %d prompt(s) whose deadline passed while the gateway was down", expired
            )
        self.state.gateway = gateway
        devices, people = DeviceRegistry(store.db), People(store.db)
        self.state.auth.attach(devices, people, gateway.clock.now_ms)
        announcer = _announcer(config, self.own_url)
        if announcer is not None:
            gateway.on_created = _default_persons(announcer.announce)
            self._stop.append(announcer.close)
        loop = asyncio.get_running_loop()
        retention = loop.create_task(_retain(gateway, config))

        def registry_changed() -> None:
            people.reload()
            for device_id in devices.reload():
                gateway.feed.device_revoked(device_id)

        following = loop.create_task(store.follow(gateway.heard_of, registry_changed))
        self._stop += [retention.cancel, following.cancel, gateway.stop, store.close]

    def release_parked(self) -> None:
        """The server is stopping: long-polls end with an empty page, result waits pending."""
        gateway = self.state.gateway
        if gateway is not None:
            gateway.feed.release_all()
            gateway.waiters.release_all()

    def _shut(self) -> None:
        for stop in self._stop:
            stop()
        self._stop.clear()


def create_app(config: GatewayConfig, clock: Clock | None = None) -> GatewayApp:
    return GatewayApp(config, clock)


def _announcer(config: GatewayConfig, own_url: str) -> Announcer | None:
    if not config.notify_urls:
        return None
    try:
        announcer = Announcer(config.notify_urls, config.public_url or own_url)
    except ImportError:
        log.error("ASK_USER_NOTIFY is set but Apprise is missing: pip install 'ask-user[notify]'")
        return None
    log.info("announcing new prompts to %d notifier(s)", announcer.targets)
    return announcer


def _default_persons(announce: Callable[[PromptRecord, str], None]) -> Callable[..., None]:
    """The notifiers named in the environment are the default person's, like its tokens: a
    colleague's prompt is not announced on them."""

    def announced(record: PromptRecord, person: str, link: str) -> None:
        if person == DEFAULT_PERSON_ID:
            announce(record, link)

    return announced


async def _retain(gateway: Gateway, config: GatewayConfig) -> None:
    """Hourly: drop terminal prompts after 30 days, events and keys after 24 h (configurable),
    a batch at a time with the loop free in between, then give the space back."""
    store = gateway.store
    while True:
        now = gateway.clock.now_ms()
        cutoffs = {
            "prompts_before_ms": now - int(config.prompt_retention_days * 86_400_000),
            "events_before_ms": now - int(config.event_retention_hours * 3_600_000),
        }
        removed = 0
        try:
            while (gone := store.prune_batch(**cutoffs)) >= PRUNE_BATCH:
                removed += gone
                await asyncio.sleep(0)
            removed += gone
            while removed and store.reclaim_some():
                await asyncio.sleep(0)
        except ProtocolError as exc:  # the store is busy or full: try again next time
            log.warning("retention: %s", exc.message)
        if removed:
            log.info("retention: removed %d old row(s)", removed)
        await asyncio.sleep(3600)
