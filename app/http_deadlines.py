"""HTTP/1.1 connections a slow or silent client cannot hold, shared by the gateway and the chat
adapters' callback endpoints (one mechanism, #39).

uvicorn's HTTP protocol (httptools) takes headers of any size and waits for them, and for a
declared body, forever: one 50 MB header kept the gateway's loop busy for seconds, thousands of
connections trickling headers stayed open until descriptors ran out (#14), and 200 connections
per chat adapter that declared a body and sent one byte of it were all still open 45 s later
(#39). This protocol answers 431 past `MAX_HEADER_BYTES`, and 408 (or closes) when a request's
line and headers have not all arrived within `HEADER_TIMEOUT_SECONDS` of their first byte (or of
the connection opening), or its declared body within `BODY_TIMEOUT_SECONDS`. One timer a server
sweeps every connection's deadline once a second.

The gateway's protocol (app/gateway/http/connections.py) builds on this one to answer its cheap
requests at once; it hooks in through `serve_request`, `finish_at_once` and `body_late`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.protocol import ErrorCode, ProtocolError

MAX_HEADER_BYTES = 32 * 1024  # the request line and all headers; nginx's default is 32 KiB
HEADER_TIMEOUT_SECONDS = 10.0
BODY_TIMEOUT_SECONDS = 30.0  # a declared body (at most 64 KiB) must be in by then
SWEEP_SECONDS = 1.0


class DeadlineHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size limit and deadlines for headers and
    body. Beside uvicorn's, each connection has `_header_bytes` (the bytes of the request's
    headers so far, -1 once they are complete), `_in_body` (a declared body is still coming),
    `_at_once` (the request being parsed is not uvicorn's: refused here, or answered at once by
    a subclass) and `_headers_due` (see HeaderDeadlines)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # uvicorn types it BaseTransport
        super().connection_made(transport)
        self._header_bytes = 0
        self._in_body = False
        self._at_once = False
        self._headers_due: float | None = None
        self._deadlines = HeaderDeadlines.of(self.server_state, self.loop)
        self._deadlines.watch(self)

    def data_received(self, data: bytes) -> None:
        starts = self._header_bytes == 0  # the first bytes of a request
        if self._header_bytes >= 0:
            self._header_bytes += len(data)
        super().data_received(data)
        # Still in the headers after all of this: every byte counted was a header byte.
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, b"Request Header Fields Too Large")
        elif starts and self._header_bytes > 0:  # they did not all come at once: time them
            self._deadlines.watch(self)

    def on_headers_complete(self) -> None:
        self._header_bytes = -1
        self._headers_due = None
        size, has_body = len(self.url), False  # one pass over what uvicorn's callbacks kept
        chunked = False
        for name, value in self.headers:
            size += len(name) + len(value) + 4
            if name == b"content-length":
                has_body = value.strip() not in (b"", b"0")
            elif name == b"transfer-encoding":
                has_body = chunked = True
        if size > MAX_HEADER_BYTES:  # all of it came in the read that ended it
            self._at_once = True  # nothing of this request reaches uvicorn's cycle
            self._refuse(431, b"Request Header Fields Too Large")
            return
        if has_body:  # it must come in time, whoever reads it (or skips it)
            self._in_body = True
            self._deadlines.watch(self, BODY_TIMEOUT_SECONDS)
        self.serve_request(chunked)

    def serve_request(self, chunked: bool) -> None:
        """Its headers are in and within limits: uvicorn's cycle serves it."""
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._at_once:  # a refused request's body is not read
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._in_body:
            self._in_body = False
            self._headers_due = None
        if self._at_once:
            self._at_once = False
            self.finish_at_once()
        else:
            super().on_message_complete()
        self._header_bytes = 0  # what follows is the next request

    def finish_at_once(self) -> None:
        """A request not left to uvicorn is complete (nothing to do for a refused one)."""

    def connection_lost(self, exc: Exception | None) -> None:
        self._headers_due = None
        super().connection_lost(exc)

    # ---- refusals -----------------------------------------------------------------------

    def headers_late(self) -> None:
        """Its deadline passed: a request started and not finished is told why (408); an idle
        connection is closed."""
        if self._in_body and not self.transport.is_closing():
            # A body that stalls: answered already, just close; otherwise say why. The
            # handler waiting for it sees the client gone.
            if self.body_late():
                return
            if self._at_once or (self.cycle is not None and self.cycle.response_started):
                self.transport.close()
            else:
                self._refuse(408, b"Request Timeout")
            return
        if self._header_bytes >= 0 and not self.transport.is_closing():
            if self._header_bytes:  # a request was started and not finished: say why
                self._refuse(408, b"Request Timeout")
            else:
                self.transport.close()

    def body_late(self) -> bool:
        """A subclass's own request whose body never all came: True once it has answered."""
        return False

    def _refuse(self, status: int, reason: bytes) -> None:
        """A JSON error like every other, then close: the rest of this request is not read."""
        self._header_bytes = -1
        if self.transport.is_closing():
            return
        if status == 431:
            error = ProtocolError(
                ErrorCode.HEADERS_TOO_LARGE,
                f"the request line and headers are limited to {MAX_HEADER_BYTES} bytes",
            )
        elif status == 503:
            error = ProtocolError(
                ErrorCode.UNAVAILABLE, "the server is restarting: nothing changed, retry"
            )
        else:
            error = ProtocolError(ErrorCode.REQUEST_TIMEOUT, "the request was not sent in time")
        body = json.dumps(error.to_body(), separators=(",", ":")).encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        self.transport.close()


class HeaderDeadlines:
    """When each connection's request headers are due (or, idle after an answer given at once,
    its next request), swept once a second by one timer. Watching is an attribute on the
    connection: a timer, or even a dict entry, per request cost a tenth of a long-poll's CPU
    (#16)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, connections: set[Any]) -> None:
        self._loop = loop
        self._connections = connections  # uvicorn's: every open connection of this server
        self._sweeping = False

    @classmethod
    def of(cls, server_state: Any, loop: asyncio.AbstractEventLoop) -> HeaderDeadlines:
        found = getattr(server_state, "ask_user_header_deadlines", None)
        if found is None:
            found = cls(loop, server_state.connections)
            server_state.ask_user_header_deadlines = found
        return found

    def watch(self, connection: DeadlineHttpProtocol, seconds: float | None = None) -> None:
        """Close `connection` (or answer 408) unless a request's headers are all in within
        `seconds` (HEADER_TIMEOUT_SECONDS): from now, its first byte, or, on an idle keep-alive
        connection, its last answer. Its `_headers_due = None` (once they are in) stops it."""
        timeout = HEADER_TIMEOUT_SECONDS if seconds is None else seconds
        connection._headers_due = self._loop.time() + timeout
        if not self._sweeping:
            self._sweeping = True
            self._loop.call_later(SWEEP_SECONDS, self._sweep)

    def _sweep(self) -> None:
        now, watched = self._loop.time(), False
        for connection in list(self._connections):
            due = getattr(connection, "_headers_due", None)
            if due is not None and due <= now:
                connection._headers_due = None
                connection.headers_late()
            elif due is not None:
                watched = True
        self._sweeping = watched  # the next watch() starts it again
        if self._sweeping:
            self._loop.call_later(SWEEP_SECONDS, self._sweep)
