"""The `ask_user` tool as models see it: its JSON schema, its guidance, and framework shapes."""

from __future__ import annotations

import copy
from typing import Any

from app.protocol import limits

TOOL_NAME = "ask_user"

DESCRIPTION = f"""\
Ask the user one to three structured questions and wait for the answers.

Use it only when you are blocked on a decision that truly belongs to the user: a preference, a \
trade-off or a risk only they can own. Do not use it for routine confirmations, for information \
you can find in the request, the code or a sensible default, to ask permission to continue, or \
to confirm your own plan.

- Prefer one question; never ask more than {limits.MAX_QUESTIONS}.
- Give each question {limits.MIN_OPTIONS}-{limits.MAX_OPTIONS} options. Put the recommended \
option first and end its label with "(Recommended)".
- Do not add an "Other" option: the user can always answer in their own words.
- `header` is a short label (at most {limits.MAX_HEADER_CHARS} characters); `question` is one \
sentence; `id` is a snake_case answer key.
- Set `multiSelect: true` only when several options can be chosen together.

The result is {{"status": "answered", "answers": {{"answers": {{"<id>": ["<value>", ...]}}}}}} \
(every value is an array, also for single choice; a value that is not an option label is the \
user's own words), or {{"status": "no_answer"}} when the question expired, was dismissed or was \
cancelled. After no_answer, continue with your best judgment; do not ask again.\
"""

INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["questions"],
    "properties": {
        "questions": {
            "type": "array",
            "minItems": limits.MIN_QUESTIONS,
            "maxItems": limits.MAX_QUESTIONS,
            "description": "1-3 questions; prefer one.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "header", "question", "options"],
                "properties": {
                    "id": {
                        "type": "string",
                        "pattern": limits.QUESTION_ID_PATTERN,
                        "maxLength": limits.MAX_QUESTION_ID_CHARS,
                        "description": "Unique snake_case answer key.",
                    },
                    "header": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Short label; truncated to "
                        f"{limits.MAX_HEADER_CHARS} characters.",
                    },
                    "question": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": limits.MAX_QUESTION_CHARS,
                        "description": "One sentence.",
                    },
                    "options": {
                        "type": "array",
                        "minItems": limits.MIN_OPTIONS,
                        "maxItems": limits.MAX_OPTIONS,
                        "description": "2-4 options, the recommended one first with "
                        '"(Recommended)" at the end of its label. No "Other" option.',
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["label"],
                            "properties": {
                                "label": {
                                    "type": "string",
                                    "minLength": 1,
                                    "maxLength": limits.MAX_LABEL_CHARS,
                                },
                                "description": {
                                    "type": "string",
                                    "maxLength": limits.MAX_DESCRIPTION_CHARS,
                                },
                            },
                        },
                    },
                    "multiSelect": {
                        "type": "boolean",
                        "default": False,
                        "description": "True when the user may choose more than one option.",
                    },
                },
            },
        },
        "timeoutSeconds": {
            "type": "integer",
            "default": limits.DEFAULT_TIMEOUT_SECONDS,
            "description": f"Default {limits.DEFAULT_TIMEOUT_SECONDS}; clamped to "
            f"{limits.MIN_TIMEOUT_SECONDS}-{limits.MAX_TIMEOUT_SECONDS}.",
        },
    },
}


def input_schema() -> dict[str, Any]:
    return copy.deepcopy(INPUT_SCHEMA)


def openai_tool() -> dict[str, Any]:
    """The OpenAI function-tool shape (Chat Completions `tools=[...]`)."""
    return {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": input_schema()},
    }


def anthropic_tool() -> dict[str, Any]:
    """The Anthropic Messages API tool shape."""
    return {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": input_schema()}


# Gemini CLI's headless mode (`gemini -p`) removes its own `ask_user` tool and, matching by
# the unqualified name, any MCP tool called `ask_user` too: to Gemini the tool has a name of
# its own (#51).
GEMINI_TOOL_NAME = "ask_the_user"
TOOL_NAMES = (TOOL_NAME, GEMINI_TOOL_NAME)  # what a call may name


def tool_name_for(program: str | None) -> str:
    """The tool's name as offered to a program (its key, from `client_slug`)."""
    return GEMINI_TOOL_NAME if program == "gemini" else TOOL_NAME


def mcp_tool(program: str | None = None) -> dict[str, Any]:
    """The MCP `tools/list` entry. Read-only: asking changes nothing in the agent's world, so
    clients that ask "Do you want to use this tool?" first (Copilot CLI, `codex exec`) let
    the question reach the phone without a stop in the terminal."""
    return {
        "name": tool_name_for(program),
        "title": "Ask the user",
        "description": DESCRIPTION,
        "inputSchema": input_schema(),
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def should_offer_tool(session_kind: str | None) -> bool:
    """Offer `ask_user` to main sessions only; subagents and other runs never get it."""
    return (session_kind or limits.MAIN_SESSION_KIND) == limits.MAIN_SESSION_KIND


# What an MCP server tells its client at `initialize` (the stdio server, /mcp, and the early
# answer of handshake.py).
INSTRUCTIONS = (
    "ask_user reaches the person you work for on their phone or desktop. Use it only for "
    "decisions that belong to them.\n\n" + DESCRIPTION
)
SERVER_NAME, SERVER_TITLE = "ask-user", "Ask User"
