"""`/mcp`: the `ask_user` tool over MCP Streamable HTTP, for agents on other machines.

The transport is the official `mcp` package's session manager, an ASGI app of its own: the
router authenticates the request (an agent token) and hands it over whole, since the SDK reads
the body and writes its own SSE stream. Tool calls reach the prompts in this process, not over
HTTP again: `GatewayAsker` is the agent side's `Asker` on top of `Gateway`.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from app.agent.asking import RUN_ABORT, Unreachable
from app.agent.client import AskUserError
from app.agent.mcp_server import Asking, AskUserTool, build_server
from app.protocol import ErrorCode, ProtocolError, limits, validate_prompt

from .service import Gateway, fingerprint

SESSION_HEADER = "ask-user-session"  # the prompt's sessionKey (PROTOCOL.md v1.2)
CALLER_KEY = "ask_user.caller"  # where the router leaves the authenticated caller in the scope
STREAM_LOST_KEY = "ask_user.stream_lost"  # set once the request's response is over
DEFAULT_SESSION_KEY = "main"


def _asking_error(exc: ProtocolError) -> AskUserError:
    return AskUserError(exc.code, exc.message, exc.fields)


class GatewayAsker:
    """Prompts of one agent token, asked and waited on in the gateway's own process."""

    def __init__(self, gateway: Gateway, owner: str, person: str) -> None:
        self.gateway, self.owner, self.person = gateway, owner, person

    async def create(self, body: dict[str, Any], abort: Any) -> dict[str, Any]:
        try:
            record, _ = self.gateway.create(self.owner, self.person, validate_prompt(body))
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
        return result.to_wire() if result is not None else None

    async def cancel(self, prompt_id: str) -> None:
        with contextlib.suppress(ProtocolError):  # already resolved: nothing to take back
            self.gateway.cancel(self.owner, prompt_id, RUN_ABORT)


class RemoteMcp:
    """The session manager and the tool behind `/mcp`, started and stopped with the gateway."""

    def __init__(self, state: Any) -> None:
        self.state = state  # the app's: .gateway, set at start-up
        self.manager = StreamableHTTPSessionManager(
            build_server(AskUserTool(self._asking_for)), max_request_body_size=limits.MAX_BODY_BYTES
        )
        self._running: contextlib.AsyncExitStack | None = None

    def _asking_for(self, ctx: Any) -> Asking:
        request = ctx.request  # the Starlette request the transport made of our scope
        caller = request.scope[CALLER_KEY]
        session_key = request.headers.get(SESSION_HEADER) or DEFAULT_SESSION_KEY
        owner = fingerprint(caller.token)
        return Asking(
            GatewayAsker(self.state.gateway, owner, caller.person),
            session_key,
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

    async def serve(self, scope: dict, receive: Any, send: Any) -> None:
        """Serve one request. When it is over, a tool call it carried that still waits has
        lost its way back to the client (who left without cancelling): it is told so."""
        lost = scope[STREAM_LOST_KEY] = anyio.Event()
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            lost.set()
