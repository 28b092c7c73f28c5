"""One table of endpoints, one way through it: size limit → auth → body → validate → handler.

Each `Endpoint` names its method, path, role, body and query models, the statuses it may answer
and its handler, once. `Router` serves requests from the table; `openapi.py` describes it. No
framework in between: a parked long-poll holds only this module's frames and its waiter (#8).

One way in: every request is matched and admitted (size limit, auth, query) by `_admit`.
Requests to endpoints served at once are then answered by `answer_at_once`, which the
connection calls as soon as the headers are in (connections.py), with no ASGI cycle: that is
every device's long-poll, answered and re-parked once per event per device (#16), and an
agent's create, wait and a device's answer (#27); one with a body is admitted first and given
its body by the connection (`WithBody.finish`) once it is all in. Their handlers run eagerly
(core/eager.py): with SQLite they finish where they started, with no task; with PostgreSQL the
rest runs as a task once it waits for the database, and its response comes as a `Later` (#42).
The rest go on, as ASGI, to read and validate their body.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args
from urllib.parse import parse_qsl

from pydantic import BaseModel
from starlette.responses import Response

from app.protocol import ErrorCode, FieldError, ProtocolError, parse_model
from app.protocol.text import has_control

from ..core.auth import Authenticator, Caller, Role
from ..core.eager import step
from ..core.feed import Later, Page
from ..core.service import Gateway, fingerprint
from .bodies import decode_json_body, read_body, refuse_declared_too_large
from .request_log import logged_path
from .responses import (
    PIPELINE_WATCH,
    error_response,
    let_woken_polls_answer,
    result_response,
    when_ready,
)
from .state import AppState

log = logging.getLogger("ask_user.gateway")

_QUERY_CACHE_SIZE = 512


@dataclass(slots=True)
class Call:
    """What a handler gets: the validated inputs and who asked. Only the handler holds it, so
    one that parks (a long-poll) can let it go and hold just what it waits with (#8)."""

    state: AppState  # the app's (http/state.py)
    scope: dict[str, Any]
    caller: Caller | None
    params: dict[str, str]
    body: Any = None  # the body model, or None when an optional body was left out
    query: Any = None  # the query model
    raw: bytes = b""  # the body as sent (for an endpoint that takes no JSON: a form)

    @property
    def gateway(self) -> Gateway:
        return self.state.started()

    @property
    def auth(self) -> Authenticator:
        return self.state.auth

    @property
    def owner(self) -> str:
        """Prompts belong to the agent token that made them (its fingerprint)."""
        assert self.caller is not None
        return fingerprint(self.caller.token)

    @property
    def person(self) -> str:
        """Whose prompts this caller may reach (docs/PROTOCOL.md v1.3): every store query on a
        device's or agent's behalf takes it."""
        assert self.caller is not None
        return self.caller.person

    @property
    def client_address(self) -> str:
        client = self.scope.get("client")
        return client[0] if client else "unknown"

    @property
    def own_url(self) -> str:
        """The address this request reached the gateway by."""
        host = header(self.scope, b"host")
        if host is None:
            server = self.scope.get("server") or ("127.0.0.1", 80)
            host = f"{server[0]}:{server[1]}"
        return f"{self.scope.get('scheme', 'http')}://{host}"


Result = Response | dict[str, Any] | Page | Later
# Always a coroutine function; a mounted endpoint's takes (call, receive, send) and answers by
# itself.
Handler = Callable[..., Awaitable[Result] | Awaitable[None]]
Served = Literal["at_once", "asgi", "mounted"]
SERVED: tuple[Served, ...] = get_args(Served)


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One endpoint of docs/PROTOCOL.md, declared once, every field by name. `served` says how its
    requests are served, and the table is held to it when it is built:

    - `"at_once"`: by the connection, where the request is parsed (its body, if any, once it is
      in), the handler run eagerly: no ASGI cycle, and no task unless the store makes it wait
      (PostgreSQL). It awaits nothing but the store; what has to wait longer returns a
      `Later`/`Page` the connection writes when it is ready.
    - `"asgi"`: in uvicorn's ASGI cycle (a task), for a handler that awaits anything else.
    - `"mounted"`: handed whole to another package's ASGI app once authenticated
      (`async def handler(call, receive, send)`: the MCP SDK's transport at /mcp).

    Every handler is an `async def`.
    """

    method: str
    path: str  # with {name} parameters
    handler: Handler
    role: Role | None  # None: no token (health, pairing with a code)
    summary: str
    tag: str
    served: Served
    status: int = 200
    response: Any = None  # a model, a tuple of models (one of), "text" or None (no body)
    errors: tuple[int, ...] = ()  # besides 401/403/413/422, which every endpoint may answer
    body: type[BaseModel] | None = None
    body_required: bool = True
    invalid_code: str = ErrorCode.INVALID_REQUEST  # what a bad body or query is called
    query: type[BaseModel] | None = None
    in_schema: bool = True
    # 200 with what an earlier try made, when the same request comes again (a create's
    # requestId): documented beside `status`.
    replays: bool = False
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    at_once: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.served not in SERVED:
            raise ValueError(f"{self.method} {self.path}: served must be one of {SERVED}")
        if not inspect.iscoroutinefunction(self.handler):
            raise ValueError(
                f"{self.method} {self.path}: its handler is a plain def; every handler is an "
                "async def (served at once, it is run eagerly)"
            )
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path)
        object.__setattr__(self, "pattern", re.compile(f"^{regex}$"))
        object.__setattr__(self, "at_once", self.served == "at_once")

    @property
    def changes(self) -> bool:
        return self.method not in ("GET", "HEAD")


class Router:
    """The ASGI app over the table: finds the endpoint, runs the one wrapper, answers errors in
    the contract's JSON shape (404/405 included, and 500 should a handler fail)."""

    def __init__(
        self,
        endpoints: tuple[Endpoint, ...],
        state: Any,
        lifespan: Callable[[dict[str, Any], Any, Any], Awaitable[None]] | None = None,
    ) -> None:
        self.state = state  # .gateway and .auth, set at start-up
        self.lifespan = lifespan
        # Parsed query strings, reused: every device parked at the head sends the same one.
        self._queries: dict[tuple[type, bytes], Any] = {}
        self._static: dict[str, dict[str, Endpoint]] = {}
        # Paths with parameters, by (segment count, last segment): one or two regexes to try.
        self._dynamic: dict[tuple[int, str], list[tuple[re.Pattern[str], dict[str, Any]]]] = {}
        by_path: dict[str, dict[str, Endpoint]] = {}
        for endpoint in endpoints:
            by_path.setdefault(endpoint.path, {})[endpoint.method] = endpoint
        for path, methods in by_path.items():
            if "{" in path:
                pattern = methods[next(iter(methods))].pattern
                self._dynamic.setdefault(_shape(path), []).append((pattern, methods))
            else:
                self._static[path] = methods

    def match(self, method: str, path: str) -> tuple[Endpoint, dict[str, str]]:
        methods, params = self._static.get(path), {}
        if methods is None:
            shape = _shape(path)
            candidates = self._dynamic.get(shape, []) + self._dynamic.get((shape[0], "{}"), [])
            for pattern, found_methods in candidates:
                if found := pattern.match(path):
                    methods, params = found_methods, found.groupdict()
                    break
        if methods is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, "no such route; see /openapi.json")
        for name, value in params.items():
            _refuse_control(name, value, ErrorCode.INVALID_REQUEST)
        endpoint = methods.get("GET" if method == "HEAD" else method)
        if endpoint is None:
            allowed = sorted({*methods, *(("HEAD",) if "GET" in methods else ())})
            raise ProtocolError(
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{path} takes {', '.join(sorted(methods))}, not {method}; see /openapi.json",
                extra={"allow": allowed},
            )
        return endpoint, params

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan" and self.lifespan is not None:
                await self.lifespan(scope, receive, send)
            return
        try:
            endpoint, params = self.match(scope["method"], scope["path"])
            if endpoint.served == "mounted":
                call = self._admit(endpoint, params, scope)
                await endpoint.handler(call, receive, send)
                return
            response = await self._respond(endpoint, params, scope, receive)
        except _ClientGone:
            return
        except Exception as exc:
            response = self._failure(exc, scope)
        await response(scope, receive, send)

    def answer_at_once(self, scope: dict[str, Any]) -> Response | Later | WithBody | None:
        """The response (or the Later that will make it) without a task, for a request whose
        endpoint never awaits; for one that changes something, the admitted request waiting
        for its body; None: serve it as ASGI instead."""
        try:
            endpoint, params = self.match(scope["method"], scope["path"])
            if not endpoint.at_once or self.state.gateway is None:  # None: not started yet
                return None
            call = self._admit(endpoint, params, scope)
            if endpoint.changes:
                return WithBody(self, endpoint, call)
        except Exception as exc:
            return self._failure(exc, scope)
        return self._run_eagerly(endpoint, call)

    def finish_at_once(self, endpoint: Endpoint, call: Call, raw: bytes) -> Response | Later:
        """The response to an admitted request whose whole body is `raw`."""
        try:
            call.raw = raw
            self._validate(endpoint, call, raw)
        except Exception as exc:
            return self._failure(exc, call.scope)
        return self._run_eagerly(endpoint, call)

    def _run_eagerly(self, endpoint: Endpoint, call: Call) -> Response | Later:
        """The handler's response now, or, when it waits for the store, a `Later` for it."""
        scope = call.scope
        try:
            result, task = step(cast(Coroutine[Any, Any, Result], endpoint.handler(call)))
        except Exception as exc:
            return self._failure(exc, scope)
        if task is None:
            return result_response(result, endpoint.status)
        return _Deferred(task, endpoint.status, scope)

    @staticmethod
    def _failure(exc: Exception, scope: dict[str, Any]) -> Response:
        if not isinstance(exc, ProtocolError):
            path = logged_path(scope.get("raw_path") or scope["path"].encode())
            log.error("%s %s failed", scope["method"], path, exc_info=exc)
            exc = ProtocolError(ErrorCode.INTERNAL, "the gateway failed; it is logged")
        return error_response(exc)

    async def _respond(
        self, endpoint: Endpoint, params: dict[str, str], scope: dict[str, Any], receive: Any
    ) -> Response:
        # The call goes straight into the handler, never into a local here (see Call).
        result: Any = endpoint.handler(await self._prepare(endpoint, params, scope, receive))
        if inspect.isawaitable(result):
            result = await result
        if endpoint.changes:
            await let_woken_polls_answer()
        response = result_response(result, endpoint.status)
        if isinstance(response, Later):
            return await when_ready(response, scope.get(PIPELINE_WATCH))
        return response

    async def _prepare(
        self, endpoint: Endpoint, params: dict[str, str], scope: dict[str, Any], receive: Any
    ) -> Call:
        """Admitted, then body → decode → validate, each failing with the contract's error.
        Nothing of a body is read for a caller the token refuses (and no `100 Continue` is
        sent to one)."""
        call = self._admit(endpoint, params, scope)
        raw = b""
        if endpoint.changes:
            try:
                read = await read_body(scope, receive)  # 413 too past the limit while reading
            except asyncio.CancelledError:
                # SIGTERM's grace ended with this body still coming (uvicorn cancels what is
                # left): nothing was done with it, so say so (503), not 500 and a traceback.
                raise ProtocolError(
                    ErrorCode.UNAVAILABLE, "the gateway is restarting: nothing changed, retry"
                ) from None
            if read is None:
                raise _ClientGone
            raw = call.raw = read
        self._validate(endpoint, call, raw)
        return call

    @staticmethod
    def _validate(endpoint: Endpoint, call: Call, raw: bytes) -> None:
        """The body decoded and validated into `call.body` (422 naming the field, else)."""
        if endpoint.body is not None:
            data = decode_json_body(
                call.scope.get("headers", ()), raw, endpoint.invalid_code, endpoint.body_required
            )
            if data is not None:
                call.body = parse_model(endpoint.body, data, endpoint.invalid_code)

    def _admit(self, endpoint: Endpoint, params: dict[str, str], scope: dict[str, Any]) -> Call:
        """Size limit → auth → the query, validated: what the request line and headers decide,
        for every request whichever way it is served."""
        if endpoint.changes:
            refuse_declared_too_large(scope)  # 413 before 401, on every route
        caller = None
        if endpoint.role is not None:
            authorization = header(scope, b"authorization")
            caller = self.state.auth.require(authorization, endpoint.role)
        call = Call(self.state, scope, caller, params)
        if endpoint.query is not None:
            key = (endpoint.query, scope.get("query_string", b""))
            if (query := self._queries.get(key)) is None:
                given = query_params(scope)
                for name, value in given.items():
                    _refuse_control(name, value, endpoint.invalid_code)
                query = parse_model(endpoint.query, given, endpoint.invalid_code)
                if len(self._queries) >= _QUERY_CACHE_SIZE:
                    self._queries.clear()
                self._queries[key] = query
            call.query = query
        return call


class WithBody:
    """A request admitted at once (size limit, auth, query) whose body the connection collects
    and then hands to `finish`: a caller the token refuses was answered before any of it."""

    __slots__ = ("_router", "call", "endpoint")

    def __init__(self, router: Router, endpoint: Endpoint, call: Call) -> None:
        self._router, self.endpoint, self.call = router, endpoint, call

    def finish(self, raw: bytes) -> Response | Later:
        return self._router.finish_at_once(self.endpoint, self.call, raw)


class _Deferred(Later):
    """The response of a handler served at once that had to wait for the store: written when
    its task ends. It cannot be answered sooner (`answer_now` passes the wish on to what it
    became, say a parked poll, once it is one); the connection holds requests pipelined
    behind it until it is written. The task is never cancelled when the client leaves: a
    change the database is making is made, whoever hears of it."""

    __slots__ = ("_deliver", "_inner", "_scope", "_status", "_task")

    def __init__(self, task: asyncio.Task[Any], status: int, scope: dict[str, Any]) -> None:
        self._task, self._status, self._scope = task, status, scope
        self._deliver: Callable[[Any], None] | None = None  # an Outcome or a Response
        self._inner: Later | None = None

    def attach(self, deliver: Callable[[Any], None]) -> None:
        self._deliver = deliver
        self._task.add_done_callback(self._done)

    def detach(self) -> None:
        self._deliver = None
        if self._inner is not None:
            self._inner.detach()

    def answer_now(self) -> None:
        if self._inner is not None:
            self._inner.answer_now()

    def _done(self, task: asyncio.Task[Any]) -> None:
        if self._deliver is None:
            return
        if task.cancelled():
            response: Response | Later = error_response(
                ProtocolError(ErrorCode.UNAVAILABLE, "the gateway is stopping: retry")
            )
        elif (exc := task.exception()) is not None:
            response = Router._failure(cast(Exception, exc), self._scope)
        else:
            response = result_response(task.result(), self._status)
        if isinstance(response, Later):  # a poll or a result wait, parked now
            self._inner = response
            response.attach(self._deliver)
        else:
            self._deliver(response)


class _ClientGone(Exception):
    """The client went away before its body arrived: nothing to answer."""


def _shape(path: str) -> tuple[int, str]:
    """How many segments a path has, and its last one ("{}" for a parameter)."""
    last = path.rsplit("/", 1)[-1]
    return path.count("/"), "{}" if last.startswith("{") else last


def header(scope: dict[str, Any], name: bytes) -> str | None:
    """A request header's value (the first of that name), or None."""
    for key, value in scope.get("headers") or ():
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _refuse_control(name: str, value: str, code: str) -> None:
    """An id or key in the path or the query holds no control character (NUL broke
    PostgreSQL's queries with a 500): 422 naming it, on every store."""
    if has_control(value):
        message = "must not hold control characters (such as NUL)"
        raise ProtocolError(code, f"{name}: {message}", [FieldError(name, message)])


def query_params(scope: dict[str, Any]) -> dict[str, str]:
    """The query string's parameters (the last of a repeated name). One given empty is kept,
    so that `?status=` is refused as what it is rather than read as not given (#39)."""
    query = scope.get("query_string", b"").decode("latin-1")
    return dict(parse_qsl(query, keep_blank_values=True))
