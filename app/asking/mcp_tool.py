"""The `ask_user` tool as an MCP server, on the official `mcp` package, free of any transport:
the agent side serves it over stdio (`ask-user mcp`, agent/mcp_server.py) asking the gateway
over HTTP; the gateway serves it over Streamable HTTP (`/mcp`) asking its own prompts.

The agents people run give up on a silent call after 60 s to 5 min, so a waiting call is never
silent: it reports progress every `PROGRESS_SECONDS` (clients that reset their timeout on
progress keep waiting). A call re-issued with the same arguments while its prompt is pending
attaches to that prompt; the last call to stop waiting on a prompt (cancelled by the client, or
its connection closed) cancels it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from app import __version__
from app.protocol.asker import client_slug

from . import flow as asking
from .request import AskUserError, prompt_body
from .tool import INSTRUCTIONS, SERVER_NAME, SERVER_TITLE, TOOL_NAMES, mcp_tool

PROGRESS_SECONDS = 10  # the contract asks for at least every 15 s
RECONNECT_GRACE_SECONDS = 5  # a client re-issues a call within this after a broken stream


@dataclass(frozen=True)
class Asking:
    """Where one tool call asks: the gateway, the conversation, and who asks (calls attach
    only to prompts of the same `owner`)."""

    asker: asking.Asker
    session_key: str
    agent_id: str | None = None
    run_id: str | None = None
    owner: str = ""
    # Set when the stream that would carry this call's result is gone (HTTP: the client left
    # without a cancel). After RECONNECT_GRACE_SECONDS with no re-issued call, the prompt goes.
    stream_lost: anyio.Event | None = None


AskingFor = Callable[[Any, dict[str, Any]], Asking]  # from the request's context and arguments


@dataclass
class _Waiting:
    """One prompt and the calls waiting on it."""

    prompt_id: str
    asker: asking.Asker
    deadline: float  # monotonic: when the gateway expires it
    total: float  # its timeout in seconds
    callers: int = 0
    answering: bool = False  # the person is answering: the deadline moved (v1.4)
    progress: float = 0.0  # the last progress reported: it only grows (MCP)

    def heard(self, pending: dict[str, Any]) -> None:
        """A wait ended pending: once the person's answering moved the deadline, the time left
        is the gateway's (before that, this process's own clock counts it down)."""
        left = pending.get("secondsLeft")
        if pending.get("answering") and isinstance(left, int | float):
            self.answering = True
            self.deadline = time.monotonic() + left
            self.total = max(self.total, self.progress + left)


def _text_result(payload: dict[str, Any], is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=None if is_error else payload,
        is_error=is_error,
    )


def _error_result(exc: AskUserError) -> types.CallToolResult:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.fields:
        error["fields"] = [{"path": f.path, "message": f.message} for f in exc.fields]
    return _text_result({"error": error}, is_error=True)


def program_of(ctx: Any) -> str:
    """The asking program, as its MCP client named itself at initialize (`claude-code`)."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    return client_slug(params.client_info.name if params is not None else None)


def waiting_message(seconds_left: float, answering: bool = False) -> str:
    minutes, seconds = divmod(max(0, int(seconds_left)), 60)
    doing = "you are answering" if answering else "waiting for you on your phone"
    return f"{doing} — {minutes}:{seconds:02d} left"


class AskUserTool:
    """The tool's calls on one server: asked, attached, waited on with progress, cancelled."""

    def __init__(self, asking_for: AskingFor) -> None:
        self.asking_for = asking_for
        self._waiting: dict[tuple[str, str], _Waiting] = {}
        self._creating = anyio.Lock()  # two identical calls at once make one prompt

    @property
    def waiting_calls(self) -> int:
        """Calls waiting now, attached ones counted each."""
        return sum(waiting.callers for waiting in self._waiting.values())

    async def call(self, ctx: Any, arguments: dict[str, Any]) -> types.CallToolResult:
        where = self.asking_for(ctx, arguments)
        try:
            body, request = prompt_body(
                arguments,
                session_key=where.session_key,
                agent_id=where.agent_id,
                run_id=where.run_id,
            )
            key = (f"{where.owner}\n{where.session_key}\n{where.agent_id}", _canonical(arguments))
            async with self._creating:
                waiting = self._waiting.get(key)
                if waiting is None:
                    record = await asking.create(where.asker, body, None)
                    assert record is not None  # no abort event: create returns or raises
                    timeout = request.timeout_seconds
                    waiting = _Waiting(
                        record["id"], where.asker, time.monotonic() + timeout, timeout
                    )
                    self._waiting[key] = waiting
                waiting.callers += 1
            try:
                result = await self._wait(ctx, where, waiting)
            finally:
                waiting.callers -= 1
                if waiting.callers == 0 and self._waiting.get(key) is waiting:
                    del self._waiting[key]
            result = await asking.with_late_answers(
                where.asker, where.session_key, result, where.agent_id
            )
        except AskUserError as exc:
            return _error_result(exc)
        return _text_result(result)

    async def _wait(self, ctx: Any, where: Asking, waiting: _Waiting) -> dict[str, Any]:
        give_up_at = waiting.deadline + asking.DEADLINE_MARGIN_SECONDS
        result: dict[str, Any] | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_report_progress, ctx, waiting)
                if where.stream_lost is not None:
                    group.start_soon(_give_up_when_lost, where.stream_lost, group.cancel_scope)
                result = await asking.wait_result(
                    where.asker, waiting.prompt_id, give_up_at, on_pending=waiting.heard
                )
                group.cancel_scope.cancel()
        except BaseException:
            # Cancelled by the client, its connection closed, or the server is stopping: the
            # last call waiting on the prompt takes it off the person's phone.
            await self._let_go(waiting)
            raise
        if result is None:  # its stream was lost and no call came back for the prompt
            await self._let_go(waiting)
            return {"status": "no_answer", "reason": "cancelled"}
        return result

    @staticmethod
    async def _let_go(waiting: _Waiting) -> None:
        """The last call waiting on a prompt takes it off the person's phone."""
        if waiting.callers == 1:
            await asking.despite_cancel(waiting.asker.cancel(waiting.prompt_id))

    async def cancel_all(self) -> None:
        """Cancel every prompt a call waits on (the server is being stopped)."""
        waiting, self._waiting = list(self._waiting.values()), {}
        for each in waiting:
            await asking.despite_cancel(each.asker.cancel(each.prompt_id))


async def _give_up_when_lost(lost: anyio.Event, scope: anyio.CancelScope) -> None:
    await lost.wait()
    await anyio.sleep(RECONNECT_GRACE_SECONDS)
    scope.cancel()


async def _report_progress(ctx: Any, waiting: _Waiting) -> None:
    """`notifications/progress` now and every PROGRESS_SECONDS (a no-op for a request without
    a progressToken: MCP addresses progress only to a token the client chose)."""
    while True:
        left = waiting.deadline - time.monotonic()
        waiting.progress = max(waiting.progress, round(waiting.total - max(left, 0)))
        await ctx.session.report_progress(
            waiting.progress, waiting.total, waiting_message(left, waiting.answering)
        )
        await anyio.sleep(PROGRESS_SECONDS)


def call_digest(arguments: dict[str, Any]) -> str:
    """A short name for a call's arguments: a client without sessions (MCP 2026-07-28) asks in
    a slot of its own per question, and re-issues the same call to reach the same slot."""
    return hashlib.sha256(_canonical(arguments).encode()).hexdigest()[:8]


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def build_server(tool: AskUserTool) -> Server:

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(mcp_tool(program_of(ctx)))])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in TOOL_NAMES:
            return _text_result({"error": f"unknown tool {params.name!r}"}, is_error=True)
        return await tool.call(ctx, dict(params.arguments or {}))

    return Server(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
