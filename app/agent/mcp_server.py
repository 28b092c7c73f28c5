"""`ask-user mcp`: the `ask_user` tool (app/asking/mcp_tool.py) served over stdio, asking the
gateway over HTTP.

Each server process asks in a pending slot of its own (docs/PROTOCOL.md v1.4): its sessionKey
names the program and its project (`claude-code:~/code/shop`), its agentId the program and this
process (`claude-code/3f2a9c1e`), so two agents on one machine never stand in each other's way.
`--session-key` keeps the older meaning: one slot for that key.
"""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

from app.asking.mcp_tool import Asking, AskUserTool, build_server, program_of
from app.protocol.asker import project_session_key

from . import handshake
from .client import HttpAsker, settings
from .environment import AgentEnvironment

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


async def serve_stdio(
    *,
    session_key: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
    first_lines: list[bytes] | None = None,
    answered_ids: set[Any] | None = None,
) -> None:
    """Serve until stdin closes or a signal (SIGTERM, SIGHUP, Ctrl-C) stops the process; either
    way, prompts still waiting are cancelled at the gateway before it exits. `first_lines`: what
    was read from stdin before (handshake.py), and `answered_ids` the requests answered then."""
    environment = AgentEnvironment.read()
    explicit_key = session_key or environment.session_key
    this_process = secrets.token_hex(4)
    async with HttpAsker(settings(gateway_url, token, environment)) as asker:

        def asking_for(ctx: Any, arguments: dict[str, Any]) -> Asking:
            if explicit_key:
                return Asking(asker, explicit_key, agent_id, run_id)
            program = program_of(ctx)
            return Asking(
                asker,
                project_session_key(program, os.getcwd(), Path.home()),
                agent_id or f"{program}/{this_process}",
                run_id,
            )

        tool = AskUserTool(asking_for)
        server = build_server(tool)
        async with anyio.create_task_group() as tg:

            async def stop_on_signals() -> None:
                # A signal ends the process at once, once its prompts are cancelled: the task
                # that reads stdin sits in a thread that only the end of stdin would free.
                with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                    async for signum in signals:
                        await tool.cancel_all()
                        os._exit(128 + signum)

            tg.start_soon(stop_on_signals)
            streams: dict[str, Any] = {}
            if first_lines is not None:
                streams["stdin"] = handshake.ReplayedStdin(first_lines)
            if answered_ids:
                streams["stdout"] = handshake.StdoutWithoutSecondAnswer(answered_ids)
            async with stdio_server(**streams) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()
