"""The ask_user contract, pure: models, validation, answers, text replies, rendering, tool result.

Importing it performs no I/O and loads no flet, httpx, fastapi or uvicorn: every side of the
system (gateway, agent tools, app, text channels) imports it and none writes a rule again.
"""

from . import limits
from .answers import canonical_value, canonicalize_answers
from .errors import ErrorCode, FieldError, ProtocolError
from .models import (
    TERMINAL_STATUSES,
    AnswerRequest,
    AskUserRequest,
    CancelRequest,
    CreatePromptRequest,
    DismissRequest,
    ErrorBody,
    Event,
    EventsPage,
    EventsQuery,
    Health,
    Option,
    PendingResult,
    PromptList,
    PromptRecord,
    Question,
    ReplyRequest,
    ResolvedBy,
    ResultQuery,
    RunCancelled,
    ToolResult,
    format_time,
)
from .render import render_prompt_text
from .replies import parse_reply
from .result import answered, no_answer, tool_result
from .text import cut, grapheme_clusters, is_authored_other, is_rtl
from .validation import (
    BODY_REQUIRED,
    NOT_A_JSON_BODY,
    ensure_main_session,
    field_errors,
    json_error_message,
    parse_model,
    protocol_error_from,
    validate_prompt,
)

__all__ = [
    "BODY_REQUIRED",
    "NOT_A_JSON_BODY",
    "TERMINAL_STATUSES",
    "AnswerRequest",
    "AskUserRequest",
    "CancelRequest",
    "CreatePromptRequest",
    "DismissRequest",
    "ErrorBody",
    "ErrorCode",
    "Event",
    "EventsPage",
    "EventsQuery",
    "FieldError",
    "Health",
    "Option",
    "PendingResult",
    "PromptList",
    "PromptRecord",
    "ProtocolError",
    "Question",
    "ReplyRequest",
    "ResolvedBy",
    "ResultQuery",
    "RunCancelled",
    "ToolResult",
    "answered",
    "canonical_value",
    "canonicalize_answers",
    "cut",
    "ensure_main_session",
    "field_errors",
    "format_time",
    "grapheme_clusters",
    "is_authored_other",
    "is_rtl",
    "json_error_message",
    "limits",
    "no_answer",
    "parse_model",
    "parse_reply",
    "protocol_error_from",
    "render_prompt_text",
    "tool_result",
    "validate_prompt",
]
