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
_RESERVED_DESCRIPTORS = 64  # for the store, logs and the listener, beyond connections


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header size limit and a header deadline."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._in_headers = True
        self._header_bytes = 0
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self._in_headers:
            self._header_bytes += len(data)
            if self._header_timer is None:
                self._arm_header_timer()  # the first byte of the next request on this connection
        super().data_received(data)
        # Still in the headers after all of this: every byte counted was a header byte.
        if self._in_headers and self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(431, b"Request Header Fields Too Large")

    def on_headers_complete(self) -> None:
        self._in_headers = False
        self._cancel_header_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_headers, self._header_bytes = True, 0  # what follows is the next request

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._headers_late)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._in_headers and not self.transport.is_closing():
            if self._header_bytes:  # a request was started and not finished: say why
                self._refuse(408, b"Request Timeout")
            else:
                self.transport.close()

    def _refuse(self, status: int, reason: bytes) -> None:
        """A JSON error like every other, then close: the rest of this request is not read."""
        if self.transport.is_closing():
            return
        code = b"headers_too_large" if status == 431 else b"request_timeout"
        body = b'{"error":{"code":"%s","message":"%s"}}' % (code, reason)
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        self.transport.close()
        self._in_headers = False


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
