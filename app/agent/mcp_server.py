"""`python -m app mcp`: the `ask_user` tool over MCP stdio, on the official `mcp` package.

Any MCP-capable agent can list and call it; a cancelled tool call cancels the prompt.
"""

from __future__ import annotations

import json
import os
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from app import __version__

from .client import AskUserError, ask_user_async
from .tool import DESCRIPTION, TOOL_NAME, mcp_tool

SESSION_KEY_ENV = "ASK_USER_SESSION_KEY"

INSTRUCTIONS = (
    "ask_user reaches the person you work for on their phone or desktop. Use it only for "
    "decisions that belong to them.\n\n" + DESCRIPTION
)


def _text_result(payload: dict[str, Any], is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=None if is_error else payload,
        is_error=is_error,
    )


def build_server(
    *,
    session_key: str,
    agent_id: str | None = None,
    run_id: str | None = None,
    gateway_url: str | None = None,
    token: str | None = None,
) -> Server:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(mcp_tool())])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            return _text_result({"error": f"unknown tool {params.name!r}"}, is_error=True)
        arguments = dict(params.arguments or {})
        unknown = set(arguments) - {"questions", "timeoutSeconds"}
        if unknown:
            return _text_result(
                {
                    "error": {
                        "code": "invalid_prompt",
                        "message": f"unknown properties: {', '.join(sorted(unknown))}",
                    }
                },
                is_error=True,
            )
        try:
            result = await ask_user_async(
                arguments.get("questions", []),
                timeout_seconds=arguments.get("timeoutSeconds"),
                session_key=session_key,
                agent_id=agent_id,
                run_id=run_id,
                gateway_url=gateway_url,
                token=token,
            )
        except AskUserError as exc:
            error = {"code": exc.code, "message": exc.message}
            if exc.fields:
                error["fields"] = [{"path": f.path, "message": f.message} for f in exc.fields]
            return _text_result({"error": error}, is_error=True)
        return _text_result(result)

    return Server(
        "ask-user",
        version=__version__,
        title="Ask User",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(**options: Any) -> None:
    options.setdefault("session_key", os.environ.get(SESSION_KEY_ENV) or "main")
    server = build_server(**options)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
