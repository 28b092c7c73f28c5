"""The tool result of the specification, derived from a prompt record."""

from __future__ import annotations

from .models import NoAnswerReason
from .records import AnswersEnvelope, PromptRecord, ToolResult


def answered(answers: dict[str, list[str]]) -> ToolResult:
    return ToolResult(status="answered", answers=AnswersEnvelope(answers=answers))


def no_answer(reason: NoAnswerReason) -> ToolResult:
    return ToolResult(status="no_answer", reason=reason)


def tool_result(record: PromptRecord) -> ToolResult | None:
    """The result for a terminal record; None while it is still pending."""
    if record.status == "pending":
        return None
    if record.status == "answered":
        return answered(record.answers or {})
    return no_answer(record.status)  # the other terminal statuses
