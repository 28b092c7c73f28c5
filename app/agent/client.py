"""`ask_user()` for Python agents: validate locally, create idempotently, wait out restarts.

Stopping the wait — asyncio cancellation, Ctrl-C, or the caller's abort event — cancels the
prompt at the gateway (reason `run-abort`) before returning or raising.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from app.protocol import ErrorCode, FieldError, ProtocolError, validate_prompt

GATEWAY_URL_ENV = "ASK_USER_GATEWAY_URL"
AGENT_TOKEN_ENV = "ASK_USER_AGENT_TOKEN"
DEFAULT_GATEWAY_URL = "http://127.0.0.1:8765"
RUN_ABORT = "run-abort"
RESULT_WAIT_SECONDS = 30
DEADLINE_MARGIN_SECONDS = 30  # how long past the deadline we keep trying to reach the gateway
CREATE_RETRY_SECONDS = 15
CANCEL_GRACE_SECONDS = 10  # how long a stopped call still waits to cancel what it asked
BACKOFF_START, BACKOFF_CAP = 0.25, 5.0

AbortEvent = asyncio.Event | threading.Event


class AskUserError(Exception):
    """The question could not be asked: no gateway, no token, or the gateway refused it."""

    def __init__(self, code: str, message: str, fields: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = list(fields)

    def __str__(self) -> str:
        lines = [self.message, *(f"- {f}" for f in self.fields)]
        return "\n".join(lines)


@dataclass(frozen=True)
class AgentSettings:
    gateway_url: str
    token: str


def settings(gateway_url: str | None = None, token: str | None = None) -> AgentSettings:
    """From arguments, else env (`ASK_USER_GATEWAY_URL`, `ASK_USER_AGENT_TOKEN`), else the token
    file a local gateway made in the default data directory."""
    url = gateway_url or os.environ.get(GATEWAY_URL_ENV) or DEFAULT_GATEWAY_URL
    token = token or os.environ.get(AGENT_TOKEN_ENV) or _local_agent_token()
    if not token:
        raise AskUserError(
            "no_token",
            f"no agent token: pass token=..., or set {AGENT_TOKEN_ENV} (the gateway prints "
            "where its tokens.json is)",
        )
    return AgentSettings(url.rstrip("/"), token)


def _local_agent_token() -> str | None:
    try:
        import platformdirs

        path = platformdirs.user_data_path("ask-user", appauthor=False) / "tokens.json"
        return json.loads(path.read_text())["agent"][0]
    except (OSError, ValueError, KeyError, IndexError, ImportError):
        return None


def _error_from(response: httpx.Response) -> AskUserError:
    try:
        error = response.json()["error"]
        fields = [FieldError(f["path"], f["message"]) for f in error.get("fields", [])]
        return AskUserError(error["code"], error["message"], fields)
    except (ValueError, KeyError, TypeError):
        return AskUserError("gateway_error", f"gateway answered {response.status_code}")


def _aborted(abort: AbortEvent | None) -> bool:
    return abort is not None and abort.is_set()


async def _sleep_or_abort(seconds: float, abort: AbortEvent | None) -> None:
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0 and not _aborted(abort):
        await asyncio.sleep(min(left, 0.1))


def _backoff(attempt: int) -> float:
    return min(BACKOFF_CAP, BACKOFF_START * 2**attempt) * random.uniform(0.5, 1.0)


async def ask_user_async(
    questions: Sequence[Mapping[str, Any]],
    *,
    session_key: str,
    timeout_seconds: int | float | None = None,
    run_id: str | None = None,
    agent_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    abort: AbortEvent | None = None,
) -> dict[str, Any]:
    """Ask and wait; returns the specification's tool result dict exactly.

    Raises AskUserError when the question cannot be asked (invalid, no gateway, refused).
    """
    body: dict[str, Any] = {"questions": [dict(q) for q in questions], "sessionKey": session_key}
    if timeout_seconds is not None:
        body["timeoutSeconds"] = timeout_seconds
    if run_id is not None:
        body["runId"] = run_id
    if agent_id is not None:
        body["agentId"] = agent_id
    try:
        request = validate_prompt(body)  # the gateway's own rules and messages, no request made
    except ProtocolError as exc:
        raise AskUserError(exc.code, exc.message, exc.fields) from None
    body["requestId"] = "req_" + uuid.uuid4().hex
    config = settings(gateway_url, token)
    limits = httpx.Timeout(10.0, read=RESULT_WAIT_SECONDS + 15)
    async with httpx.AsyncClient(
        base_url=config.gateway_url,
        headers={"Authorization": f"Bearer {config.token}"},
        timeout=limits,
    ) as http:
        creating = asyncio.ensure_future(_create(http, body, abort))
        try:
            record = await asyncio.shield(creating)
        except (asyncio.CancelledError, KeyboardInterrupt):
            # Stopped while the prompt was being created: let the create finish (it may already
            # be on the gateway), then cancel what it made.
            with contextlib.suppress(Exception):
                made = await asyncio.wait_for(creating, CANCEL_GRACE_SECONDS)
                if made is not None:
                    await _cancel(http, made["id"])
            raise
        if record is None:
            return {"status": "no_answer", "reason": "cancelled"}
        give_up_at = time.monotonic() + request.timeout_seconds + DEADLINE_MARGIN_SECONDS
        try:
            result = await _wait(http, record["id"], give_up_at, abort)
        except (asyncio.CancelledError, KeyboardInterrupt):
            await asyncio.shield(_cancel(http, record["id"]))
            raise
        if result is None:  # aborted by the caller
            await _cancel(http, record["id"])
            return {"status": "no_answer", "reason": "cancelled"}
        return result


async def _create(
    http: httpx.AsyncClient, body: dict[str, Any], abort: AbortEvent | None
) -> dict[str, Any] | None:
    """POST the prompt, retrying dropped connections (the requestId makes a retry harmless)."""
    give_up_at = time.monotonic() + CREATE_RETRY_SECONDS
    attempt = 0
    while True:
        if _aborted(abort):
            return None
        try:
            response = await http.post("/v1/prompts", json=body)
        except httpx.TransportError as exc:
            if time.monotonic() > give_up_at:
                raise AskUserError(
                    "gateway_unreachable", f"cannot reach the gateway at {http.base_url}: {exc}"
                ) from None
        else:
            if response.status_code in (200, 201):
                return response.json()
            if response.status_code < 500:
                raise _error_from(response)
        await _sleep_or_abort(_backoff(attempt), abort)
        attempt += 1


async def _wait(
    http: httpx.AsyncClient, prompt_id: str, give_up_at: float, abort: AbortEvent | None
) -> dict[str, Any] | None:
    """Repeated `/result?wait=` until terminal; rides out restarts and dropped connections."""
    attempt = 0
    while not _aborted(abort):
        poll = asyncio.ensure_future(
            http.get(f"/v1/prompts/{prompt_id}/result", params={"wait": RESULT_WAIT_SECONDS})
        )
        try:
            while not poll.done():
                await asyncio.wait({poll}, timeout=0.1 if abort is not None else None)
                if _aborted(abort):
                    return None
            response = poll.result()
        except httpx.TransportError:
            if time.monotonic() > give_up_at:  # the deadline has long passed: it expired
                return {"status": "no_answer", "reason": "expired"}
            await _sleep_or_abort(_backoff(attempt), abort)
            attempt += 1
            continue
        finally:
            poll.cancel()  # no-op when done; stops the request when we leave early
        attempt = 0
        if response.status_code == 200:
            result = response.json()
            if result.get("status") != "pending":
                return result
        elif response.status_code < 500:
            raise _error_from(response)
        else:
            await _sleep_or_abort(_backoff(attempt), abort)
    return None


async def _cancel(http: httpx.AsyncClient, prompt_id: str) -> None:
    """Best effort: the run stopped, so its question goes too."""
    with contextlib.suppress(httpx.HTTPError):
        await http.post(f"/v1/prompts/{prompt_id}/cancel", json={"reason": RUN_ABORT}, timeout=5)


def ask_user(
    questions: Sequence[Mapping[str, Any]],
    *,
    session_key: str,
    timeout_seconds: int | float | None = None,
    run_id: str | None = None,
    agent_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    abort: threading.Event | None = None,
) -> dict[str, Any]:
    """The blocking form of ask_user_async. Ctrl-C cancels the prompt, then raises."""
    call = ask_user_async(
        questions,
        session_key=session_key,
        timeout_seconds=timeout_seconds,
        run_id=run_id,
        agent_id=agent_id,
        gateway_url=gateway_url,
        token=token,
        abort=abort,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call)  # Ctrl-C cancels the task: the prompt is cancelled first
    # Called from inside an event loop (a notebook, an async framework): use a thread of its own.
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = asyncio.run(call)
        except BaseException as exc:  # handed back to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="ask_user")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


__all__ = ["AskUserError", "ErrorCode", "ask_user", "ask_user_async", "settings"]
