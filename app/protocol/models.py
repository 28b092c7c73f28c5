"""The wire models of docs/PROTOCOL.md, the prompt itself: its options and questions, the
tool's arguments and the create request, with the rules they keep; pydantic v2 at the boundary,
camelCase JSON. What devices and agents send besides is `requests.py`, what the gateway keeps
and answers `records.py`.

Request models reject unknown properties; response models ignore them, so an older device keeps
working against a newer gateway.
"""

from __future__ import annotations

import math
import re
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainSerializer,
    StrictBool,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from . import limits
from .base import RequestModel, _invalid
from .stops import QUESTION, PromptKind, Stop, kind_problems
from .text import (
    cut,
    fold,
    has_control,
    identifier_pattern,
    is_authored_other,
    is_blank,
    not_blank_pattern,
)

_ID_RE = re.compile(limits.QUESTION_ID_PATTERN)

PromptStatus = Literal["pending", "answered", "dismissed", "expired", "cancelled"]
TERMINAL_STATUSES: frozenset[str] = frozenset({"answered", "dismissed", "expired", "cancelled"})
NoAnswerReason = Literal["expired", "dismissed", "cancelled"]
EventType = Literal["prompt.created", "prompt.resolved", "prompt.updated", "prompt.draft"]


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with milliseconds: `2026-12-02T09:48:04.123Z`."""
    # isoformat, not strftime: a record's times are written on every change (#27: strftime was
    # a tenth of the core's time per answered prompt).
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


UtcTime = Annotated[datetime, PlainSerializer(format_time, return_type=str, when_used="json")]


def _count_between(value: Any, low: int, high: int, noun: str) -> Any:
    """Checked before the items, so the count is reported even when items are also wrong."""
    if isinstance(value, list) and not low <= len(value) <= high:
        raise _invalid(
            "{min} to {max} {noun} allowed, got {got}", min=low, max=high, noun=noun, got=len(value)
        )
    return value


def _required_text(value: str, max_chars: int | None, what: str = "") -> str:
    value = value.strip()
    if is_blank(value):
        raise _invalid("must not be blank")
    if max_chars is not None and len(value) > max_chars:
        raise _invalid("at most {max} characters, got {got}", max=max_chars, got=len(value))
    return value


def _described(default: Any = ..., **schema: Any) -> Any:
    """A field whose JSON schema (the OpenAPI document) states the rule its validator
    enforces with its own message: the schema is never looser than the gateway. A callable
    value is made only when a schema is asked for (the gateway's start-up)."""

    def extra(field_schema: dict[str, Any]) -> None:
        field_schema.update({k: v() if callable(v) else v for k, v in schema.items()})

    return Field(default, json_schema_extra=extra)


def _id_text(default: Any = ..., **schema: Any) -> Any:
    """An id or a key: not blank and without control characters (`_optional_identifier`)."""
    return _described(default, pattern=identifier_pattern, **schema)


def _text(default: Any = ..., **schema: Any) -> Any:
    """A text field that must not be blank (`_required_text`), as the schema says it."""
    return _described(default, pattern=not_blank_pattern, **schema)


# ---- the prompt -------------------------------------------------------------------------------


class Option(RequestModel):
    """One choice. Its label is what the agent gets back when the person picks it. The limits
    here are the widest a prompt may have (a program's own question tool, v1.5); `ask_user`'s
    own tighter ones are checked by the request (`AskUserRequest._tool_limits`)."""

    # The schema says ask_user's limits; a program's question tool may go past them (v1.5).
    label: str = _text(minLength=1, maxLength=limits.MAX_LABEL_CHARS)
    description: str | None = _described(None, maxLength=limits.MAX_DESCRIPTION_CHARS)
    # What the option looks like (a mockup, code), shown beside or under it (v1.5).
    preview: str | None = _described(None, maxLength=limits.MAX_PREVIEW_CHARS)

    @field_validator("label")
    @classmethod
    def _label(cls, value: str) -> str:
        value = _required_text(value, limits.MAX_PROGRAM_LABEL_CHARS)
        if is_authored_other(value):
            raise _invalid(
                'do not add an "Other" option: a free-text answer is always offered automatically'
            )
        return value

    @field_validator("description")
    @classmethod
    def _description(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        if len(value) > limits.MAX_PROGRAM_DESCRIPTION_CHARS:
            raise _invalid(
                "at most {max} characters, got {got}",
                max=limits.MAX_PROGRAM_DESCRIPTION_CHARS,
                got=len(value),
            )
        return value

    @field_validator("preview")
    @classmethod
    def _preview(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if len(value) > limits.MAX_PREVIEW_CHARS:
            raise _invalid(
                "at most {max} characters, got {got}", max=limits.MAX_PREVIEW_CHARS, got=len(value)
            )
        return value.rstrip()

    @model_serializer(mode="wrap")
    def _drop_missing_description(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for optional in ("description", "preview"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data


class Question(RequestModel):
    """One decision, with 2–4 options; a free-text answer is always allowed besides them."""

    id: str = _described(pattern=limits.QUESTION_ID_PATTERN, maxLength=limits.MAX_QUESTION_ID_CHARS)
    header: str = _text(minLength=1)  # longer ones are cut, not refused
    question: str = _text(minLength=1, maxLength=limits.MAX_QUESTION_CHARS)
    # JSON Schema cannot say "labels unique ignoring case": it says what it can (no two
    # options alike) and the description says the rest.
    options: list[Option] = _described(
        minItems=limits.MIN_OPTIONS,
        maxItems=limits.MAX_OPTIONS,
        uniqueItems=True,
        description="Option labels must be unique ignoring case.",
    )
    multi_select: StrictBool = False

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if len(value) > limits.MAX_QUESTION_ID_CHARS:
            raise _invalid(
                "at most {max} characters, got {got}",
                max=limits.MAX_QUESTION_ID_CHARS,
                got=len(value),
            )
        if not _ID_RE.match(value):
            raise _invalid(
                "must be snake_case: a lowercase letter, then lowercase letters, digits or "
                "underscores (got {got!r})",
                got=value,
            )
        return value

    @field_validator("header")
    @classmethod
    def _header(cls, value: str) -> str:
        return cut(_required_text(value, None), limits.MAX_HEADER_CHARS)

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        return _required_text(value, limits.MAX_QUESTION_CHARS)

    @field_validator("options", mode="before")
    @classmethod
    def _option_count(cls, value: Any) -> Any:
        return _count_between(value, limits.MIN_OPTIONS, limits.MAX_OPTIONS, "options")

    @field_validator("options")
    @classmethod
    def _unique_labels(cls, value: list[Option]) -> list[Option]:
        seen: dict[str, str] = {}
        for option in value:
            key = fold(option.label)
            if key in seen:
                raise _invalid(
                    "option labels must be unique ignoring case: {a!r} and {b!r} clash",
                    a=seen[key],
                    b=option.label,
                )
            seen[key] = option.label
        return value

    def option_labels(self) -> list[str]:
        return [option.label for option in self.options]


# Set while a request is validated: made from a program's own question tool (v1.5)?
_FROM_PROGRAM_TOOL: ContextVar[bool] = ContextVar("from_program_tool", default=False)


def _too_long(most: int, text: str) -> str:
    return f"at most {most} characters, got {len(text)}"


def _clamp_timeout(value: Any) -> int:
    if value is None:
        return limits.DEFAULT_TIMEOUT_SECONDS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid("must be a number of seconds (a JSON number), got {got}", got=repr(value))
    if not math.isfinite(value) or value != int(value):
        raise _invalid("must be a whole number of seconds, got {got}", got=value)
    return limits.clamp_timeout(int(value))


class AskUserRequest(RequestModel):
    """The arguments of the `ask_user` tool, as the model writes them."""

    questions: list[Question] = _described(
        minItems=limits.MIN_QUESTIONS,
        maxItems=limits.MAX_QUESTIONS,
        uniqueItems=True,
        description=f"Question ids must be unique. With questionTool (the program's own "
        f"question tool the prompt was made from) up to {limits.MAX_PROGRAM_QUESTIONS} "
        f"questions, labels of {limits.MAX_PROGRAM_LABEL_CHARS} and descriptions of "
        f"{limits.MAX_PROGRAM_DESCRIPTION_CHARS} characters.",
    )
    timeout_seconds: int = Field(default=limits.DEFAULT_TIMEOUT_SECONDS)

    @model_validator(mode="wrap")
    @classmethod
    def _limits_of_its_tool(cls, data: Any, handler: Any) -> Any:
        """Which limits hold (`_question_count`) is known from the request as sent."""
        from_program = isinstance(data, dict) and data.get("questionTool") is not None
        token = _FROM_PROGRAM_TOOL.set(from_program)
        try:
            return handler(data)
        finally:
            _FROM_PROGRAM_TOOL.reset(token)

    @field_validator("questions", mode="before")
    @classmethod
    def _question_count(cls, value: Any) -> Any:
        most = limits.MAX_PROGRAM_QUESTIONS if _FROM_PROGRAM_TOOL.get() else limits.MAX_QUESTIONS
        return _count_between(value, limits.MIN_QUESTIONS, most, "questions")

    @property
    def from_program_tool(self) -> bool:
        """Made from a program's own question tool (v1.5), which allows more than ask_user."""
        return False

    @model_validator(mode="after")
    def _tool_limits(self) -> AskUserRequest:
        """`ask_user`'s own limits (the specification's), unless made from a program's own
        question tool; each breach named by its field."""
        if self.from_program_tool:
            return self
        errors: list[tuple[tuple[str | int, ...], str]] = []
        for q, question in enumerate(self.questions):
            for o, option in enumerate(question.options):
                where = ("questions", q, "options", o)
                if len(option.label) > limits.MAX_LABEL_CHARS:
                    errors.append(
                        ((*where, "label"), _too_long(limits.MAX_LABEL_CHARS, option.label))
                    )
                if option.description and len(option.description) > limits.MAX_DESCRIPTION_CHARS:
                    errors.append(
                        ((*where, "description"),
                         _too_long(limits.MAX_DESCRIPTION_CHARS, option.description))
                    )  # fmt: skip
        if errors:
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    {"type": PydanticCustomError("invalid", message), "loc": loc, "input": None}
                    for loc, message in errors
                ],
            )
        return self

    @field_validator("questions")
    @classmethod
    def _unique_ids(cls, value: list[Question]) -> list[Question]:
        seen: set[str] = set()
        for question in value:
            if question.id in seen:
                raise _invalid("question ids must be unique: {id!r} appears twice", id=question.id)
            seen.add(question.id)
        return value

    @field_validator("timeout_seconds", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> int:
        return _clamp_timeout(value)


def _optional_identifier(
    value: str | None, max_chars: int = limits.MAX_IDENTIFIER_CHARS
) -> str | None:
    if value is None:
        return None
    _no_control(value)
    return _required_text(value, max_chars)


def _no_control(value: str) -> None:
    if has_control(value):
        raise _invalid("must not hold control characters (such as NUL or a new line)")


class CreatePromptRequest(AskUserRequest):
    """`POST /v1/prompts`: the tool arguments plus where they come from."""

    session_key: str = _id_text(
        minLength=limits.MIN_SESSION_KEY_CHARS, maxLength=limits.MAX_SESSION_KEY_CHARS
    )
    session_kind: str = limits.MAIN_SESSION_KIND
    agent_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    run_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    request_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    # The program's own question tool this prompt was made from (v1.5: "AskUserQuestion"):
    # it allows four questions, longer texts and previews, and the prompt carries them whole.
    question_tool: str | None = _id_text(None, maxLength=64)
    # What the agent stopped for (v1.5): its own questions, a permission, or a plan; a
    # permission or plan carries what the person must see to decide (app/protocol/stops.py).
    kind: PromptKind = Field(
        default=QUESTION,
        description="v1.5: a permission or a plan carries `stop`, and is one single-select "
        "question (its choices); a question carries no `stop`.",
    )
    stop: Stop | None = Field(
        default=None,
        description="What a permission or a plan is about; its `always` names one of the "
        "options' labels.",
    )

    @property
    def from_program_tool(self) -> bool:
        return self.question_tool is not None

    @field_validator("session_key")
    @classmethod
    def _session_key(cls, value: str) -> str:
        _no_control(value)
        if is_blank(value):
            raise _invalid("must not be blank")
        if len(value) > limits.MAX_SESSION_KEY_CHARS:
            raise _invalid(
                "{min} to {max} characters, got {got}",
                min=limits.MIN_SESSION_KEY_CHARS,
                max=limits.MAX_SESSION_KEY_CHARS,
                got=len(value),
            )
        return value

    @field_validator("agent_id", "run_id", "request_id", "question_tool")
    @classmethod
    def _identifiers(cls, value: str | None) -> str | None:
        return _optional_identifier(value)

    @model_validator(mode="after")
    def _kind(self) -> CreatePromptRequest:
        if problems := kind_problems(self.kind, self.stop, self.questions):
            raise ValidationError.from_exception_data(
                type(self).__name__,
                [
                    {"type": PydanticCustomError("invalid", message), "loc": loc, "input": None}
                    for loc, message in problems
                ],
            )
        return self
