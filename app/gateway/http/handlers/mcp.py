"""`/mcp`: handed to the MCP SDK once the agent token is checked."""

from __future__ import annotations

import logging
from typing import Any

from ..remote_mcp import CALLER_KEY
from ..routing import Call

log = logging.getLogger("ask_user.gateway")


# ---- remote agents --------------------------------------------------------------------------


async def mcp(call: Call, receive: Any, send: Any) -> None:
    """MCP over Streamable HTTP: the `ask_user` tool, its guidance and result, as over stdio.
    POST sends a JSON-RPC message (answered as JSON or an SSE stream), GET opens the server's
    stream, DELETE ends the session. `Ask-User-Session` names the prompt's sessionKey."""
    call.scope[CALLER_KEY] = call.caller
    remote = call.state.remote_mcp
    assert remote is not None  # made with the app
    await remote.serve(call.scope, receive, send)
