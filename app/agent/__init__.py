"""What agents call: `ask_user()` (sync and async), the tool definition, a CLI, an MCP server.

Imports only app.protocol from the project (and httpx); never the gateway, device or UI.
"""

from app.asking.tool import (
    DESCRIPTION,
    INPUT_SCHEMA,
    TOOL_NAME,
    anthropic_tool,
    mcp_tool,
    openai_tool,
    should_offer_tool,
)

from .client import AskUserError, ask_user, ask_user_async, late_answers, late_answers_async

__all__ = [
    "DESCRIPTION",
    "INPUT_SCHEMA",
    "TOOL_NAME",
    "AskUserError",
    "anthropic_tool",
    "ask_user",
    "ask_user_async",
    "late_answers",
    "late_answers_async",
    "mcp_tool",
    "openai_tool",
    "should_offer_tool",
]
