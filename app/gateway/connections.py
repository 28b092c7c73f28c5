"""Connections that cannot stall everyone: a cap on request headers, and a deadline for them.

uvicorn's HTTP protocol (httptools) takes headers of any size and waits for them forever: one
50 MB header kept the loop busy for seconds, and thousands of connections trickling headers
stayed open until descriptors ran out (#14). This protocol answers 431 past
`MAX_HEADER_BYTES` and closes a connection whose request line and headers have not all
arrived within `HEADER_TIMEOUT_SECONDS` of their first byte (or of the connection opening).
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("ask_user.gateway")

MAX_HEADER_BYTES = 32 * 1024  # the request line and all headers; nginx's default is 32 KiB
HEADER_TIMEOUT_SECONDS = 10.0
SWEEP_SECONDS = 1.0
RELEASE_PARKED = "ask_user.release_parked"  # the lifespan state's key for it
_RESERVED_DESCRIPTORS = 64  # for the store, logs and the listener, beyond connections


class _OneWritePerResponse:
    """The connection's transport, holding a response's head until its body comes, so both go
    out in one send: half the system calls and TCP segments of a long-poll's answer (#16)."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None

    def write(self, data: bytes) -> None:
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

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size limit, a header deadline, and one write
    per response. It adds one attribute to uvicorn's (each connection's dict stays the size it
    was: thousands of parked polls, #8): `_header_bytes`, the bytes of the request's headers
    so far, or -1 once they are complete."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _OneWritePerResponse(transport, self.loop)  # type: ignore[assignment]
        self._header_bytes = 0
        self._deadlines().watch(self)

    def _deadlines(self) -> _HeaderDeadlines:
        return _HeaderDeadlines.of(self.server_state, self.loop)

    def data_received(self, data: bytes) -> None:
        if self._header_bytes >= 0:
            if self._header_bytes == 0:
                self._deadlines().watch(self)  # the first byte of the next request
            self._header_bytes += len(data)
        super().data_received(data)
        # Still in the headers after all of this: every byte counted was a header byte.
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, b"Request Header Fields Too Large")

    def shutdown(self) -> None:
        """The server is stopping: first let the app answer what it holds parked (long-polls
        end with an empty page, result waits with pending), so they close cleanly within the
        grace period instead of being cancelled."""
        release = self.app_state.get(RELEASE_PARKED)
        if release is not None:
            release()
        super().shutdown()

    def on_headers_complete(self) -> None:
        self._header_bytes = -1
        self._deadlines().forget(self)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._header_bytes = 0  # what follows is the next request

    def connection_lost(self, exc: Exception | None) -> None:
        self._deadlines().forget(self)
        super().connection_lost(exc)

    def headers_late(self) -> None:
        if self._header_bytes >= 0 and not self.transport.is_closing():
            if self._header_bytes:  # a request was started and not finished: say why
                self._refuse(408, b"Request Timeout")
            else:
                self.transport.close()

    def _refuse(self, status: int, reason: bytes) -> None:
        """A JSON error like every other, then close: the rest of this request is not read."""
        self._header_bytes = -1
        if self.transport.is_closing():
            return
        code = b"headers_too_large" if status == 431 else b"request_timeout"
        body = b'{"error":{"code":"%s","message":"%s"}}' % (code, reason)
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        self.transport.close()


class _HeaderDeadlines:
    """The connections waiting for a request's headers, swept once a second by one timer
    (a timer per request cost as much as a tenth of a long-poll's CPU, #16)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._since: dict[GuardedHttpProtocol, float] = {}
        self._sweeping = False

    @classmethod
    def of(cls, server_state: object, loop: asyncio.AbstractEventLoop) -> _HeaderDeadlines:
        found = getattr(server_state, "ask_user_header_deadlines", None)
        if found is None:
            found = cls(loop)
            server_state.ask_user_header_deadlines = found  # type: ignore[attr-defined]
        return found

    def watch(self, connection: GuardedHttpProtocol) -> None:
        self._since[connection] = self._loop.time()
        if not self._sweeping:
            self._sweeping = True
            self._loop.call_later(SWEEP_SECONDS, self._sweep)

    def forget(self, connection: GuardedHttpProtocol) -> None:
        self._since.pop(connection, None)

    def _sweep(self) -> None:
        late = self._loop.time() - HEADER_TIMEOUT_SECONDS
        for connection, since in list(self._since.items()):
            if since <= late:
                del self._since[connection]
                connection.headers_late()
        self._sweeping = bool(self._since)
        if self._sweeping:
            self._loop.call_later(SWEEP_SECONDS, self._sweep)


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
