"""`ask_user()` for Python agents: validate locally, create idempotently, wait out restarts.

Stopping the wait — asyncio cancellation, Ctrl-C, or the caller's abort event — cancels the
prompt at the gateway (reason `run-abort`) before returning or raising.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from app.asking import flow as asking
from app.asking.request import AskUserError, prompt_body
from app.protocol import (
    ErrorCode,
    error_from_body,
)
from app.protocol.local_gateway import AGENT_TOKEN_ENV, TOKENS_FILE
from app.protocol.pairing import url_problem

from .environment import DEFAULT_GATEWAY_URL, AgentEnvironment

T = TypeVar("T")

log = logging.getLogger("ask_user.agent")

CANCEL_SECONDS = 5.0  # how long a stopped run keeps trying to cancel its prompt
CANCEL_RETRY_SECONDS = 0.2

CREATE_RETRY_SECONDS = 15
LATE_RETRY_SECONDS = 20  # collecting late answers rides out a gateway's restart
MIN_REQUEST_SECONDS = 0.5


@dataclass(frozen=True)
class AgentSettings:
    gateway_url: str
    token: str


def settings(
    gateway_url: str | None = None,
    token: str | None = None,
    environment: AgentEnvironment | None = None,
) -> AgentSettings:
    """From arguments, else the environment (`ASK_USER_GATEWAY_URL`, `ASK_USER_AGENT_TOKEN`),
    else what a gateway on this machine wrote in its data directory (`ASK_USER_GATEWAY_DATA`
    or the platform's): the address it listens on and its agent token (environment.py)."""
    env = environment or AgentEnvironment.read()
    local = env.local_gateway()
    url = gateway_url or env.gateway_url or local.get("url") or DEFAULT_GATEWAY_URL
    if (problem := url_problem(url)) is not None:  # at once, not after 15 s of retries (#53)
        why = "it needs http:// or https://" if problem == "url_scheme" else "it names no host"
        raise AskUserError(
            "invalid_gateway_url",
            f"{url!r} is not a gateway address: {why}, e.g. http://127.0.0.1:8765",
        )
    token = token or env.token or local.get("token")
    if not token:
        data_dir = env.data_dir()
        kept = f", which keeps one in {data_dir / TOKENS_FILE}" if data_dir else ""
        raise AskUserError(
            "no_token",
            f"no agent token: set {AGENT_TOKEN_ENV} (token=... in Python, --token on the "
            f"command line), or start a gateway on this machine (python -m app gateway, or "
            f"the app){kept}",
        )
    return AgentSettings(url.rstrip("/"), token)


def _error_from(response: httpx.Response) -> AskUserError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = error_from_body(body, response.status_code)
    return AskUserError(error.code, error.message, error.fields)


async def ask_user_async(
    questions: Sequence[Mapping[str, Any]],
    *,
    session_key: str,
    timeout_seconds: int | float | None = None,
    run_id: str | None = None,
    agent_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    abort: asking.AbortEvent | None = None,
    create_retry_seconds: float = CREATE_RETRY_SECONDS,
    question_tool: str | None = None,
    on_asked: Callable[[str], None] | None = None,
    kind: str | None = None,
    stop: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Ask and wait; returns the specification's tool result dict exactly. `on_asked` is told
    the prompt's id once the gateway holds it (to log it, or to ask the next in order).

    Raises AskUserError when the question cannot be asked (invalid, no gateway, refused).
    """
    arguments: dict[str, Any] = {"questions": [dict(q) for q in questions]}
    if timeout_seconds is not None:
        arguments["timeoutSeconds"] = timeout_seconds
    body, request = prompt_body(
        arguments,
        session_key=session_key,
        run_id=run_id,
        agent_id=agent_id,
        question_tool=question_tool,
        kind=kind,
        stop=stop,
    )
    async with HttpAsker(settings(gateway_url, token), create_retry_seconds) as asker:
        return await asking.ask(asker, body, request.timeout_seconds, abort, on_asked)


class HttpAsker:
    """The gateway over HTTP with an agent token (`asking.Asker`)."""

    def __init__(
        self,
        config: AgentSettings,
        create_retry_seconds: float = CREATE_RETRY_SECONDS,
        connect_seconds: float = 10.0,
        late_retry_seconds: float = LATE_RETRY_SECONDS,
    ) -> None:
        self.create_retry_seconds = create_retry_seconds  # how long to retry an unreachable one
        self.late_retry_seconds = late_retry_seconds
        self.http = httpx.AsyncClient(
            base_url=config.gateway_url,
            headers={"Authorization": f"Bearer {config.token}"},
            timeout=httpx.Timeout(connect_seconds, read=asking.RESULT_WAIT_SECONDS + 15),
        )

    async def __aenter__(self) -> HttpAsker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def create(
        self, body: dict[str, Any], abort: asking.AbortEvent | None
    ) -> dict[str, Any] | None:
        """POST the prompt, retrying a dropped connection or a 5xx for at most
        `create_retry_seconds` (the requestId makes a retry harmless), each try bounded by
        what is left of that time: a gateway that accepts and never answers, or cannot write
        (a full disk: 503), ends in a clear error, not a wait without end."""
        give_up_at = time.monotonic() + self.create_retry_seconds
        attempt = 0
        while True:
            if asking.aborted(abort):
                return None
            left = max(give_up_at - time.monotonic(), MIN_REQUEST_SECONDS)
            try:
                response = await self.http.post("/v1/prompts", json=body, timeout=left)
            except httpx.TransportError as exc:
                why = (
                    f"cannot reach the gateway at {self.http.base_url}: {exc or type(exc).__name__}"
                )
                if attempt == 0:  # said once, not silent for the whole retry
                    log.warning(
                        "%s; trying again for %d s. Is it running (`python -m app gateway`), "
                        "and is this its address?",
                        why,
                        self.create_retry_seconds,
                    )
            else:
                if response.status_code in (200, 201):
                    return _json_object(response, "id")
                if response.status_code < 500:
                    raise _error_from(response)
                why = f"the gateway at {self.http.base_url} answered {response.status_code}"
                if attempt == 0:
                    log.warning("%s; trying again for %d s", why, self.create_retry_seconds)
            if time.monotonic() >= give_up_at:
                raise AskUserError("gateway_unreachable", why)
            await asking.sleep_or_abort(
                min(asking.backoff(attempt), max(give_up_at - time.monotonic(), 0)), abort
            )
            attempt += 1

    async def result(self, prompt_id: str, wait: float) -> dict[str, Any] | None:
        try:
            response = await self.http.get(f"/v1/prompts/{prompt_id}/result", params={"wait": wait})
        except httpx.TransportError as exc:
            raise asking.Unreachable(str(exc)) from None
        if response.status_code >= 500:
            raise asking.Unreachable(f"gateway answered {response.status_code}")
        if response.status_code != 200:
            raise _error_from(response)
        try:
            return _json_object(response, "status")
        except AskUserError as exc:
            raise asking.Unreachable(exc.message) from None

    async def cancel(self, prompt_id: str) -> None:
        """Tell the gateway the run stopped, trying again when the connection failed (a
        keep-alive connection it had just closed, say) for at most CANCEL_SECONDS: a cancel
        that never arrives leaves the question on the phone with nobody waiting. A prompt
        already resolved answers 409, which is as good."""
        await self._cancel(f"/v1/prompts/{prompt_id}/cancel", f"prompt {prompt_id}")

    async def cancel_run(self, run_id: str) -> None:
        """The same for every pending prompt of a run (whose ids we may not know)."""
        await self._cancel(f"/v1/runs/{quote(run_id, safe='')}/cancel", f"run {run_id}")

    async def _cancel(self, path: str, what: str) -> None:
        give_up_at = time.monotonic() + CANCEL_SECONDS
        while True:
            left = give_up_at - time.monotonic()
            try:
                await self.http.post(
                    path, json={"reason": asking.RUN_ABORT}, timeout=max(left, 0.1)
                )
                return
            except httpx.HTTPError as exc:
                if time.monotonic() + CANCEL_RETRY_SECONDS >= give_up_at:
                    log.warning("could not cancel %s at the gateway: %r", what, exc)
                    return
            await asyncio.sleep(CANCEL_RETRY_SECONDS)

    async def late_answers(
        self, session_key: str, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Claim the late answers meant for this agent (or its project), confirm each, and
        return those confirmed (v1.5): two agents collecting at once never both get one, and
        one whose confirmation never arrives comes back after its lease, for the next
        collection. Every request is retried for a while under the same claim id, so a
        dropped connection or a restarting gateway loses nothing; best effort: [] when the
        gateway cannot be asked."""
        claim = {"sessionKey": session_key, "claimId": f"cl_{uuid.uuid4().hex}"}
        if agent_id:
            claim["agentId"] = agent_id
        claimed = await self._retried("POST", "/v1/late-answers/claim", claim)
        if claimed is None:
            return []
        items = claimed.get("lateAnswers")
        if not isinstance(items, list):
            log.warning("late answers kept for later: the gateway's answer has no list")
            return []
        confirmed = []
        for item in items:
            ack = {"claimId": claim["claimId"]}
            if await self._retried("POST", f"/v1/late-answers/{item['promptId']}/ack", ack):
                confirmed.append(item)
        return confirmed

    async def _retried(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The JSON object of a 200, retrying transport errors and 5xx (the request is
        idempotent) for LATE_RETRY_SECONDS; None, said in the log, when it never came."""
        give_up_at = time.monotonic() + self.late_retry_seconds
        attempt = 0
        while True:
            left = max(give_up_at - time.monotonic(), MIN_REQUEST_SECONDS)
            try:
                response = await self.http.request(method, path, json=body, timeout=left)
                if response.status_code == 200:
                    return _json_object(response)
                why = f"{response.status_code} {response.text[:200]}"
                if response.status_code < 500:
                    log.warning("late answers: %s %s: %s", method, path, why)
                    return None
            except (httpx.HTTPError, AskUserError) as exc:
                why = str(exc) or type(exc).__name__
            if time.monotonic() >= give_up_at:
                log.warning(
                    "late answers: %s %s failed (%s); they come back later", method, path, why
                )
                return None
            await asyncio.sleep(min(asking.backoff(attempt), max(give_up_at - time.monotonic(), 0)))
            attempt += 1


def _json_object(response: httpx.Response, key: str | None = None) -> dict[str, Any]:
    """The response's JSON object (holding `key`); a clear error for anything else (an HTML
    page from a proxy, say), never a traceback."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict) or (key is not None and key not in data):
        kind = response.headers.get("content-type", "no content type")
        raise AskUserError(
            "bad_gateway_response",
            f"{response.request.url} answered {response.status_code} with something that is "
            f"not the gateway's JSON ({kind}): is this the Ask User gateway's address?",
        )
    return data


async def late_answers_async(
    session_key: str,
    *,
    agent_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    connect_seconds: float = 10.0,
    retry_seconds: float = LATE_RETRY_SECONDS,
) -> list[dict[str, Any]]:
    """Answers the person gave after a question of this agent (or its project) expired or
    its run stopped (v1.4), oldest first, each claimed and confirmed (v1.5): no other call
    returns them again. A gateway that cannot be asked within `retry_seconds` gives []; what
    was claimed but not confirmed comes back to a later call."""
    config = settings(gateway_url, token)
    async with HttpAsker(
        config, connect_seconds=connect_seconds, late_retry_seconds=retry_seconds
    ) as asker:
        return await asker.late_answers(session_key, agent_id)


def late_answers(
    session_key: str,
    *,
    agent_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    connect_seconds: float = 10.0,
    retry_seconds: float = LATE_RETRY_SECONDS,
) -> list[dict[str, Any]]:
    """The blocking form of late_answers_async."""
    call = late_answers_async(
        session_key,
        agent_id=agent_id,
        gateway_url=gateway_url,
        token=token,
        connect_seconds=connect_seconds,
        retry_seconds=retry_seconds,
    )
    return _run_blocking(call)


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
    create_retry_seconds: float = CREATE_RETRY_SECONDS,
    question_tool: str | None = None,
    on_asked: Callable[[str], None] | None = None,
    kind: str | None = None,
    stop: Mapping[str, Any] | None = None,
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
        create_retry_seconds=create_retry_seconds,
        question_tool=question_tool,
        on_asked=on_asked,
        kind=kind,
        stop=stop,
    )
    return _run_blocking(call)


def _run_blocking(call: Coroutine[Any, Any, T]) -> T:
    """Run `call` to its end from code that is not a coroutine."""
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
    result: T = outcome["result"]
    return result


__all__ = ["AskUserError", "ErrorCode", "ask_user", "ask_user_async", "settings"]
