"""The request log: one info line per request, never a header, the path as it came on the wire.
Part of the HTTP floor."""

from __future__ import annotations

import logging
import time
from typing import Any

from ..core.notify import LINK_PATH

log = logging.getLogger("ask_user.gateway")

# An answer link's token is the capability to answer its prompt: whoever reads the log must not
# get it (#39). Its path is logged with the token cut.
_LINK_PREFIX = LINK_PATH.split("{", 1)[0].encode()
_TOKEN_CUT = b"<token>"

# A device's long-poll is answered once per device per event: 300 phones make 300 lines an
# event, and each line cost the gateway about as much CPU as the poll itself (#23: an outside
# check read 116–123 µs per device per event with the default log level, the benchmark 55–62
# µs with warnings only). Answered, they are logged at debug; refused, at info like the rest.
QUIET_WHEN_ANSWERED = frozenset({"/v1/events"})


class RequestLog:
    """One info line per request: method, path, status, milliseconds. Never a header."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            log_request(scope, status, started)


def logged_path(raw_path: bytes) -> str:
    """The path as it came on the wire (percent-escapes kept: a decoded one could carry a new
    line and forge the next log line), an answer link's token cut."""
    if raw_path.startswith(_LINK_PREFIX):
        raw_path = _LINK_PREFIX + _TOKEN_CUT
    return raw_path.decode("latin-1").encode("unicode_escape").decode("ascii") or "?"


def log_request(scope: dict[str, Any], status: int, started: float) -> None:
    """One line: method, path (`logged_path`), status, milliseconds."""
    quiet = status < 400 and scope.get("path") in QUIET_WHEN_ANSWERED
    level = logging.DEBUG if quiet else logging.INFO
    if not log.isEnabledFor(level):
        return
    log.log(
        level,
        "%s %s %d %.1fms",
        scope["method"],
        logged_path(scope.get("raw_path", b"")),
        status,
        (time.perf_counter() - started) * 1000,
    )
