"""`/mcp`: the `ask_user` tool over MCP Streamable HTTP, for agents on other machines.

The transport is the official `mcp` package's session manager, an ASGI app of its own: the
router authenticates the request (an agent token) and hands it over whole, since the SDK reads
the body and writes its own SSE stream. Tool calls reach the prompts in this process, not over
HTTP again: `GatewayAsker` is the agent side's `Asker` on top of `Gateway`.

A session belongs to the agent token that opened it (the SDK compares the request's principal
with its opener's and answers 404 to anyone else), and each token and each person may hold only
their share of sessions (#39): one caller that opens sessions and never closes them is refused
429 once its own share is used, and everyone else goes on.
"""

from __future__ import annotations

import contextlib
import secrets
from collections import Counter
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import JSONResponse

from app.asking.flow import RUN_ABORT, Unreachable
from app.asking.mcp_tool import Asking, AskUserTool, build_server, call_digest, program_of
from app.asking.request import AskUserError
from app.protocol import ErrorCode, ProtocolError, limits, validate_prompt

from ..core.service import Gateway, fingerprint
from .state import AppState

SESSION_HEADER = "ask-user-session"  # the prompt's sessionKey (docs/PROTOCOL.md v1.2)
CALLER_KEY = "ask_user.caller"  # where the router leaves the authenticated caller in the scope
STREAM_LOST_KEY = "ask_user.stream_lost"  # set once the request's response is over
DEFAULT_SESSION_KEY = "main"
_SESSION_ID = MCP_SESSION_ID_HEADER.encode()  # as ASGI spells header names


def _asking_error(exc: ProtocolError) -> AskUserError:
    return AskUserError(exc.code, exc.message, exc.fields)


class GatewayAsker:
    """Prompts of one agent token, asked and waited on in the gateway's own process."""

    def __init__(self, gateway: Gateway, owner: str, person: str) -> None:
        self.gateway, self.owner, self.person = gateway, owner, person

    async def create(self, body: dict[str, Any], abort: Any) -> dict[str, Any]:
        try:
            record, _ = await self.gateway.create(self.owner, self.person, validate_prompt(body))
        except ProtocolError as exc:
            raise _asking_error(exc) from None
        return record.to_wire()

    async def result(self, prompt_id: str, wait: float) -> dict[str, Any] | None:
        try:
            result = await self.gateway.wait_result(self.owner, prompt_id, wait)
        except ProtocolError as exc:
            if exc.code == ErrorCode.UNAVAILABLE:
                raise Unreachable(exc.message) from None
            raise _asking_error(exc) from None
        return result.to_wire()

    async def cancel(self, prompt_id: str) -> None:
        with contextlib.suppress(ProtocolError):  # already resolved: nothing to take back
            await self.gateway.cancel(self.owner, prompt_id, RUN_ABORT)

    async def late_answers(
        self, session_key: str, agent_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Claimed and confirmed in this process, as over HTTP (v1.5)."""
        claim_id = f"cl_{secrets.token_hex(16)}"
        claimed = await self.gateway.late.claim(
            self.person, session_key, agent_id, claim_id, limits.LATE_CLAIM_LEASE_SECONDS
        )
        confirmed = []
        for item in claimed:
            with contextlib.suppress(ProtocolError):  # its lease lapsed: another agent's
                await self.gateway.late.acknowledge(item.prompt_id, self.person, claim_id)
                confirmed.append(item.to_wire())
        return confirmed


class RemoteMcp:
    """The session manager and the tool behind `/mcp`, started and stopped with the gateway."""

    def __init__(self, state: AppState) -> None:
        self.state = state  # the app's: .gateway, set at start-up
        self.tool = AskUserTool(self._asking_for)
        self.manager = StreamableHTTPSessionManager(
            build_server(self.tool),
            max_request_body_size=limits.MAX_BODY_BYTES,
            session_idle_timeout=limits.MCP_SESSION_IDLE_SECONDS,
            max_sessions=limits.MAX_MCP_SESSIONS,
        )
        self._running: contextlib.AsyncExitStack | None = None
        self._sessions: dict[str, tuple[str, str]] = {}  # session id → (owner, person)
        self._opening: Counter[str] = Counter()  # owners and people: sessions being opened

    def _asking_for(self, ctx: Any, arguments: dict[str, Any]) -> Asking:
        request = ctx.request  # the Starlette request the transport made of our scope
        caller = request.scope[CALLER_KEY]
        owner = fingerprint(caller.token)
        # With no header, each MCP session asks in a slot of its own (docs/PROTOCOL.md v1.4);
        # a client without sessions (MCP 2026-07-28) in one per question, which the same call
        # re-issued finds again (v1.5).
        session_key, agent_id = request.headers.get(SESSION_HEADER), None
        if not session_key:
            session = (request.headers.get(MCP_SESSION_ID_HEADER) or "")[:8]
            slot = session or f"call-{call_digest(arguments)}"
            session_key, agent_id = DEFAULT_SESSION_KEY, f"{program_of(ctx)}/{slot}"
        return Asking(
            GatewayAsker(self.state.started(), owner, caller.person),
            session_key,
            agent_id,
            owner=owner,
            stream_lost=request.scope.get(STREAM_LOST_KEY),
        )

    async def start(self) -> None:
        self._running = contextlib.AsyncExitStack()
        await self._running.enter_async_context(self.manager.run())

    async def stop(self) -> None:
        """Ends every session: calls still waiting cancel their prompts (nobody waits)."""
        if self._running is not None:
            running, self._running = self._running, None
            await running.aclose()

    async def serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one request. When it is over, a tool call it carried that still waits has
        lost its way back to the client (who left without cancelling): it is told so."""
        caller = scope[CALLER_KEY]
        owner = fingerprint(caller.token)
        # The SDK binds a session to this principal and refuses it to any other.
        scope["user"] = AuthenticatedUser(
            AccessToken(token=owner, client_id=owner, subject=caller.person, scopes=[])
        )
        lost = scope[STREAM_LOST_KEY] = anyio.Event()
        opening = not any(name == _SESSION_ID for name, _ in scope["headers"])
        send = _typed(send)
        try:
            if not opening:
                await self.manager.handle_request(scope, receive, send)
                return
            if refusal := self._over_share(owner, caller.person):
                await _refused(refusal)(scope, receive, send)
                return
            self._opening.update((owner, caller.person))
            try:
                noting = self._noting(send, owner, caller.person)
                await self.manager.handle_request(scope, receive, noting)
            finally:
                self._opening.subtract((owner, caller.person))
        finally:
            lost.set()

    def _noting(self, send: Any, owner: str, person: str) -> Any:
        """`send`, noting whose session the response opens."""

        async def noting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_ID:
                        self._sessions[value.decode("latin-1")] = (owner, person)
            await send(message)

        return noting

    def _over_share(self, owner: str, person: str) -> str | None:
        """Why this token or person may not open another session now, if it may not."""
        live = self.manager._server_instances  # the SDK's open sessions (ended ones are gone)
        self._sessions = {s: whose for s, whose in self._sessions.items() if s in live}
        of_owner = sum(o == owner for o, _ in self._sessions.values()) + self._opening[owner]
        of_person = sum(p == person for _, p in self._sessions.values()) + self._opening[person]
        idle = f"an idle one ends after {limits.MCP_SESSION_IDLE_SECONDS // 60} minutes"
        if of_owner >= limits.MAX_MCP_SESSIONS_PER_TOKEN:
            return (
                f"this agent token has {limits.MAX_MCP_SESSIONS_PER_TOKEN} MCP sessions open, "
                f"its limit: end one (DELETE /mcp) or wait ({idle})"
            )
        if of_person >= limits.MAX_MCP_SESSIONS_PER_PERSON:
            return (
                f"this person's agents have {limits.MAX_MCP_SESSIONS_PER_PERSON} MCP sessions "
                f"open, their limit: end one (DELETE /mcp) or wait ({idle})"
            )
        return None


def _typed(send: Any) -> Any:
    """`send`, naming the type of a body the SDK sends without one (its 400 for a wrong
    Content-Type is a line of text), as the OpenAPI document says it: `text/plain`."""

    async def typed(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"content-type" for name, _ in headers):
                headers.append((b"content-type", b"text/plain; charset=utf-8"))
                message = {**message, "headers": headers}
        await send(message)

    return typed


def _refused(message: str) -> JSONResponse:
    """429 with a JSON-RPC error, as the SDK's own refusals are shaped."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    return JSONResponse(error, status_code=429, headers={"Retry-After": "60"})
