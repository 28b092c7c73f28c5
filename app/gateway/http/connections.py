"""Connections that cannot stall everyone, and that answer the cheap requests themselves.

The header limit and the deadlines for headers and bodies are `DeadlineHttpProtocol`'s
(app/http_deadlines.py), shared with the chat adapters' endpoints. This protocol also answers
a request whose endpoint never awaits (the router's `answer_at_once`) right where it is
parsed: no ASGI cycle, no task, and a long-poll that parks is one small object until the bytes
of its shared page are written. uvicorn's per-request work was most of what each subscribed
device cost per event (#16), and a third of what a create or an answer cost (#27). A request
with a body is admitted when its headers are in and answered when its body is (declared with
Content-Length; a chunked one, or one that expects `100 Continue`, goes uvicorn's way).
"""

from __future__ import annotations

import asyncio
import logging
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any, cast

import httptools
from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from app.http_deadlines import MAX_HEADER_BYTES, DeadlineHttpProtocol
from app.protocol import ProtocolError

from ..core.feed import Later, Outcome, Page
from .request_log import log_request
from .responses import JSON, PIPELINE_WATCH, PipelineWatch, error_response
from .routing import WithBody

log = logging.getLogger("ask_user.gateway")

__all__ = ["MAX_HEADER_BYTES", "GuardedHttpProtocol", "connection_limit", "page_wire"]

_STARTED = "ask_user.started"  # in a scope, when requests are logged
JSON_BYTES = JSON.encode()
_RESERVED_DESCRIPTORS = 64  # for the store, logs and the listener, beyond connections


class _OneWritePerResponse:
    """The connection's transport, holding a response's head until its body comes, so both go
    out in one send: half the system calls and TCP segments of a long-poll's answer (#16)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():  # the client left mid-pipeline: nothing to tell it
            self._head = None
            return
        if self._head is not None:
            data, self._head = self._head + data, None
        elif data.startswith(b"HTTP/1.1 ") and data.endswith(b"\r\n\r\n"):
            self._head = data  # the body follows in this same step, or the flush sends it
            self._loop.call_soon(self._flush)
            return
        self._transport.write(data)

    def _flush(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            if not self._transport.is_closing():
                self._transport.write(head)

    def write_whole(self, data: bytes) -> None:
        """A whole response (head and body) in one piece: nothing to hold."""
        if self._transport.is_closing():
            self._head = None
            return
        if self._head is not None:
            data, self._head = self._head + data, None
        self._transport.write(data)

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


class GuardedHttpProtocol(DeadlineHttpProtocol):
    """The deadline protocol with one write per response and requests answered at once. Beside
    its, each connection has `_later` (the long-poll parked for this connection) and
    `_with_body` (a request admitted at once, waiting for its body).

    What it serves with is given to the class, not looked up in the lifespan's state:
    `serving(answer_at_once, release_parked)` makes the protocol class for one app."""

    # The router's answer_at_once (routing.py): a response, a Later, the admitted request
    # waiting for its body, or None (serve as ASGI).
    answer_at_once: Callable[[dict[str, Any]], Response | Later | WithBody | None] | None = None
    release_parked: Callable[[], None] | None = None  # the app's: what is parked answers now

    @classmethod
    def serving(
        cls,
        answer_at_once: Callable[[dict[str, Any]], Response | Later | WithBody | None],
        release_parked: Callable[[], None],
    ) -> type[GuardedHttpProtocol]:
        """This protocol, answering at once with this router and releasing this app's polls."""
        return type(
            cls.__name__,
            (cls,),
            {
                "answer_at_once": staticmethod(answer_at_once),
                "release_parked": staticmethod(release_parked),
            },
        )

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn types it BaseTransport
        super().connection_made(transport)
        self.transport = _OneWritePerResponse(transport, self.loop)  # type: ignore[assignment]  # a Transport in all but name
        self._later: Later | None = None
        self._held: list[bytes] = []  # pipelined behind a Later that cannot answer yet
        self._close_after_later = False  # a request came behind it in the same packet
        self._later_scope: Any = None  # the scope of the request `_later` answers
        self._with_body: WithBody | None = None  # answered at once when its body is in
        self._body: list[bytes] = []
        self._watch = PipelineWatch(lambda: bool(self.pipeline))  # for polls served as ASGI
        super().on_message_begin()  # uvicorn's scope, once: every request's starts as a copy
        self._scope_template = {
            k: v for k, v in self.scope.items() if k not in ("headers", "state")
        }

    def data_received(self, data: bytes) -> None:
        if self._later is not None:  # a pipelined request: the parked poll answers first
            self._later.answer_now()
        if self._later is not None or self._held:  # still waiting for the store (#42)
            self._held.append(data)
            self.flow.pause_reading()
            return
        super().data_received(data)

    def shutdown(self) -> None:
        """The server is stopping: first let the app answer what it holds parked (long-polls
        end with an empty page, result waits with pending), so they close cleanly within the
        grace period instead of being cancelled."""
        if self.release_parked is not None:
            self.release_parked()
        if self._with_body is not None:  # its body still coming: nothing was done with it
            self._with_body = None
            self._refuse(503, b"Service Unavailable")
        elif self._later is not None:  # a change's response, waiting its turn: it was done
            self._later.answer_now()
        super().shutdown()

    def on_message_begin(self) -> None:
        if self._later is not None:  # pipelined in the same packet as the parked poll
            self._later.answer_now()
        if self._watch.parked is not None:  # a poll served the ASGI way waits: same rule
            self._watch.parked.answer_now()
        # uvicorn's, less the per-request copy of the lifespan state: only a request left to
        # uvicorn's cycle gets one (on_headers_complete).
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self.scope = {**self._scope_template, "headers": self.headers}  # type: ignore[typeddict-item]  # uvicorn's own line

    def serve_request(self, chunked: bool) -> None:
        if self._later is not None:
            # Pipelined in the same packet behind an answer still waiting for the store (#42,
            # PostgreSQL): HTTP/1.1 answers in order, and this one could be answered first.
            # It is not served; the connection closes once that answer is written, and the
            # client sends it again (RFC 9112 §9.3.2: nothing of it was done).
            self._at_once = True  # swallowed: nothing of it reaches uvicorn's cycle
            self._close_after_later = True
            return
        if not self._answer_at_once(chunked):
            self.scope["state"] = self.app_state.copy()
            self.scope[PIPELINE_WATCH] = self._watch  # type: ignore[literal-required]  # our key
            super().serve_request(chunked)

    def on_body(self, body: bytes) -> None:
        if self._with_body is not None:  # at most the declared length, within the limit
            self._body.append(body)
        else:  # a body sent with a GET answered at once is not read
            super().on_body(body)

    def finish_at_once(self) -> None:
        if (with_body := self._with_body) is not None:
            self._with_body, raw, self._body = None, b"".join(self._body), []
            self._reply(with_body.finish(raw), after_woken=True)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._later is not None:
            self._later.detach()
            self._later = None
        super().connection_lost(exc)

    def _unsupported_upgrade_warning(self) -> None:
        """uvicorn logs two warnings for every `Upgrade:` request: anyone could fill the log."""
        log.debug("an Upgrade request, served as plain HTTP")

    # ---- backpressure -------------------------------------------------------------------

    def pause_writing(self) -> None:
        """The client reads slower than we answer: read no more of its requests until it has
        taken what is buffered (uvicorn's own cycle waits for this; answers given at once
        did not, and 20,000 pipelined GETs that nobody read grew the gateway by 1 GB)."""
        super().pause_writing()
        self.flow.pause_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        if not self.pipeline and (self.cycle is None or self.cycle.response_complete):
            self.flow.resume_reading()  # uvicorn resumes it itself once its queue is served

    # ---- answered at once ---------------------------------------------------------------

    def _answer_at_once(self, chunked: bool) -> bool:
        """Answer (or park, or admit and wait for the body of) the request now if the router
        can; False: uvicorn's way."""
        parser, limit = self.parser, self.limit_concurrency
        method = parser.get_method()
        answer = self.answer_at_once
        if (
            answer is None
            or (method not in (b"GET", b"HEAD") and (chunked or self.expect_100_continue))
            or not parser.should_keep_alive()  # "Connection: close" or HTTP/1.0: uvicorn's way
            or parser.should_upgrade()
            or (self.cycle is not None and not self.cycle.response_complete)  # pipelined
            or self.flow.write_paused  # what is buffered goes first, at the client's pace
            # uvicorn's own check (on_headers_complete): past it, uvicorn answers 503
            or (limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit))
        ):
            return False
        url = httptools.parse_url(self.url)
        path = url.path.decode("ascii")
        scope = self.scope
        scope["method"] = method.decode("ascii")
        # As uvicorn's on_headers_complete does: the mount point, then the request's path.
        path = urllib.parse.unquote(path) if "%" in path else path
        scope["path"] = self.root_path + path
        scope["raw_path"] = self.root_path.encode("ascii") + url.path
        scope["query_string"] = url.query or b""
        if log.isEnabledFor(logging.INFO):
            scope[_STARTED] = time.perf_counter()  # type: ignore[literal-required]  # ours
        # uvicorn types it HTTPScope; the router reads a dict
        result = answer(cast(dict[str, Any], scope))
        if result is None:
            return False
        self._at_once = True
        if isinstance(result, WithBody):
            if method in (b"GET", b"HEAD"):  # the router admits bodies only for changes
                raise AssertionError("a GET is never given its body")
            self._with_body = result
        else:
            self._reply(result)
        return True

    def _reply(self, result: Response | Later, after_woken: bool = False) -> None:
        """Write it now, or when it is ready; `after_woken`: a change, whose response waits
        one turn of the loop, so the polls and waits it woke are answered first (#8)."""
        if after_woken and isinstance(result, Response):
            result = _Ready(result, self.loop)
        if isinstance(result, Later):
            self._later, self._later_scope = result, self.scope
            result.attach(self._answer_later)
        else:
            self._write(result, self.scope)

    def _answer_later(self, outcome: Outcome | Response) -> None:
        """The answer of the request that is waiting (its own scope: another request may have
        begun behind it meanwhile)."""
        self._later = None
        if isinstance(outcome, ProtocolError):
            outcome = error_response(outcome)
        self._write(outcome, self._later_scope)
        if self._close_after_later:
            self._held = []
            self.transport.close()
            return
        if self._held:  # what was pipelined behind it, in order
            held, self._held = b"".join(self._held), []
            self.flow.resume_reading()
            self.data_received(held)

    def _write(self, answer: Response | Page, scope: Any) -> None:
        transport = cast(_OneWritePerResponse, self.transport)  # set in connection_made
        if transport.is_closing():
            return
        if isinstance(answer, Page):  # shared by every poll parked at its cursor: framed once
            if answer.memo is None:
                answer.memo = page_wire(answer.body, self.server_state.default_headers)
            wire, status = answer.memo, 200
        else:
            wire, status = _wire(answer, self.server_state.default_headers), answer.status_code
        if scope["method"] == "HEAD":
            wire = wire[: wire.index(b"\r\n\r\n") + 4]
        transport.write_whole(wire)
        self.server_state.total_requests += 1
        if (started := scope.get(_STARTED)) is not None:
            log_request(cast(dict[str, Any], scope), status, cast(float, started))
        if not self._in_body:  # a declared body still coming keeps its own deadline
            self._deadlines.watch(self, self.timeout_keep_alive)  # idle from now on

    # ---- refusals -----------------------------------------------------------------------

    def body_late(self) -> bool:
        if self._with_body is None:
            return False
        self._with_body = None  # admitted at once, its body never all came
        self._refuse(408, b"Request Timeout")
        return True


class _Ready(Later):
    """A response made already, written on the loop's next turn, or at once when a pipelined
    request comes behind it (HTTP/1.1 answers in order)."""

    __slots__ = ("_deliver", "_handle", "_loop", "_response")

    def __init__(self, response: Response, loop: asyncio.AbstractEventLoop) -> None:
        self._response, self._loop = response, loop
        self._deliver: Callable[[Any], None] | None = None
        self._handle: asyncio.Handle | None = None

    def attach(self, deliver: Callable[[Any], None]) -> None:
        self._deliver = deliver
        self._handle = self._loop.call_soon(self.answer_now)

    def detach(self) -> None:
        self._deliver = None
        if self._handle is not None:
            self._handle.cancel()

    def answer_now(self) -> None:
        deliver, self._deliver = self._deliver, None
        if deliver is not None:
            self.detach()
            deliver(self._response)


def _wire(response: Response, default_headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The response as HTTP/1.1 bytes: its status line, the server's headers, its own, body."""
    return _frame(response.status_code, response.raw_headers, response.body, default_headers)


def page_wire(body: bytes, default_headers: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A page's whole response: the bytes `_wire` makes of `outcome_response(Page(body))`,
    without making a Starlette response first (on every delivery's path, #27)."""
    own = ((b"content-length", b"%d" % len(body)), (b"content-type", JSON_BYTES))
    return _frame(200, own, body, default_headers)


def _frame(
    status: int,
    headers: Iterable[tuple[bytes, bytes]],
    body: bytes | memoryview,
    default_headers: Iterable[tuple[bytes, bytes]],
) -> bytes:
    head = [STATUS_LINE[status]]
    for name, value in (*default_headers, *headers):
        head += [name, b": ", value, b"\r\n"]
    head.append(b"\r\n")
    return b"".join(head) + body


def connection_limit() -> int:
    """As many connections as descriptors allow (the soft limit raised to the hard one), less a
    reserve: past it uvicorn answers 503 and logs it, instead of accept() failing unseen."""
    try:
        import resource
    except ImportError:  # Windows: no descriptor limit to raise or to read
        return 10_000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        soft = 1_000_000
    return max(soft - _RESERVED_DESCRIPTORS, 64)
