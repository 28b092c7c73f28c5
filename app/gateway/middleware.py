"""The ASGI layers around the routes: request bodies under a limit, the request log, and
changes that let the polls they woke answer first. No route logic here."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from fastapi.responses import JSONResponse

from app.protocol import (
    BODY_REQUIRED,
    NOT_A_JSON_BODY,
    ErrorCode,
    FieldError,
    ProtocolError,
    json_error_message,
    limits,
)

log = logging.getLogger("ask_user.gateway")


def error_response(exc: ProtocolError) -> JSONResponse:
    return JSONResponse(exc.to_body(), status_code=exc.http_status)


def _too_large(max_bytes: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.PAYLOAD_TOO_LARGE, f"request bodies are limited to {max_bytes} bytes"
    )


async def read_body(
    scope: dict, receive: Any, max_bytes: int = limits.MAX_BODY_BYTES
) -> bytes | None:
    """The whole request body, or None if the client went away; 413 (ProtocolError) past
    `max_bytes`, whether or not the request declared its length."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length" and value.isdigit() and int(value) > max_bytes:
            raise _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > max_bytes:
            raise _too_large(max_bytes)
        if not message.get("more_body", False):
            return b"".join(chunks)


def decode_json_body(scope: dict, raw: bytes, code: str, required: bool = True) -> Any:
    """The body's JSON value (None for an empty optional body), or a ProtocolError with `code`.

    A body without a content type is read as JSON (so `curl -d` works); one declared as
    something else is refused, as the framework's routes do.
    """
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            kind = value.decode("latin-1").split(";")[0].strip().lower()
            if kind != "application/json" and not kind.endswith("+json"):
                raise ProtocolError(code, NOT_A_JSON_BODY, [FieldError("", NOT_A_JSON_BODY)])
    if not raw.strip():
        if not required:
            return None
        raise ProtocolError(code, BODY_REQUIRED, [FieldError("", BODY_REQUIRED)])
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        message = json_error_message(exc.msg, exc.pos)
    except UnicodeDecodeError as exc:
        message = json_error_message(f"not UTF-8 ({exc.reason})", exc.start)
    raise ProtocolError(code, message, [FieldError("", message)])


class BodyLimit:
    """413 with the contract's error body for request bodies over the limit.

    The body (at most 64 KiB) is read before the route runs, then handed on unchanged; later
    receives (disconnects) pass straight through.
    """

    def __init__(self, app: Any, max_bytes: int = limits.MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(scope, receive, self.max_bytes)
        except ProtocolError as exc:
            await error_response(exc)(scope, receive, send)
            return
        if body is None:
            return  # the client went away
        buffered: list[dict] = [{"type": "http.request", "body": body}]

        async def replay() -> dict:
            return buffered.pop() if buffered else await receive()

        await self.app(scope, replay, send)


async def let_woken_polls_answer() -> None:
    """Yield once, so the long-polls a change just woke write their responses first.

    A change resolves waiters' futures; their tasks are then ready to run. Letting them go
    before the change's own response means a device hears of a new prompt (and an agent of its
    answer) before the caller hears "done" (#8: delivery latency).
    """
    await asyncio.sleep(0)


class WokenFirst:
    """For the framework's change routes: their response waits for `let_woken_polls_answer`."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return

        async def send_after_woken(message: dict) -> None:
            if message["type"] == "http.response.start":
                await let_woken_polls_answer()
            await send(message)

        await self.app(scope, receive, send_after_woken)


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
