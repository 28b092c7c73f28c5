"""A prompt as an agent asks it: the create request made from the tool's arguments (checked by
the gateway's own rules before anything is sent) and the error that says why it cannot be
asked. One shape for every way of asking: `ask_user()`, the CLI, the hooks, both MCP servers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from app.protocol import (
    CreatePromptRequest,
    ErrorCode,
    FieldError,
    ProtocolError,
    validate_prompt,
)
from app.protocol.errors import describe


class AskUserError(Exception):
    """The question could not be asked: no gateway, no token, or the gateway refused it."""

    def __init__(self, code: str, message: str, fields: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = list(fields)

    def __str__(self) -> str:
        return describe(self.message, self.fields)


TOOL_ARGUMENTS = frozenset({"questions", "timeoutSeconds"})


def prompt_body(
    arguments: Mapping[str, Any],
    *,
    session_key: str,
    run_id: str | None = None,
    agent_id: str | None = None,
    question_tool: str | None = None,
    stop: Mapping[str, Any] | None = None,
    kind: str | None = None,
) -> tuple[dict[str, Any], CreatePromptRequest]:
    """The create request for the tool's arguments, checked by the gateway's own rules and
    messages before any request is made, with a fresh requestId (a retried create is safe).
    `question_tool`: the program's own question tool they come from (v1.5), which allows
    more than ask_user. `kind` and `stop`: a permission or a plan a hook asks (v1.5)."""
    if unknown := set(arguments) - TOOL_ARGUMENTS:
        raise AskUserError(
            ErrorCode.INVALID_PROMPT, f"unknown properties: {', '.join(sorted(unknown))}"
        )
    body: dict[str, Any] = {**arguments, "sessionKey": session_key}
    if run_id is not None:
        body["runId"] = run_id
    if agent_id is not None:
        body["agentId"] = agent_id
    if question_tool is not None:
        body["questionTool"] = question_tool
    if kind is not None:  # a permission or a plan (v1.5), with what it is about
        body["kind"], body["stop"] = kind, dict(stop or {})
    try:
        request = validate_prompt(body)
    except ProtocolError as exc:
        raise AskUserError(exc.code, exc.message, exc.fields) from None
    body["requestId"] = "req_" + uuid.uuid4().hex
    return body, request
