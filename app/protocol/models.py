"""The wire models of docs/PROTOCOL.md: pydantic v2 at the boundary, camelCase JSON, every rule
here.

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
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictBool,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from . import limits
from .asker import is_project_key
from .base import RequestModel, ResponseModel, _invalid
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


# ---- device and agent requests ---------------------------------------------------------------


class DeviceRequest(RequestModel):
    """What every device change carries: who made it, and a key that makes a retry safe."""

    device_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    idempotency_key: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)

    @field_validator("device_id", "idempotency_key")
    @classmethod
    def _identifiers(cls, value: str | None) -> str | None:
        return _optional_identifier(value)


class AnswerRequest(DeviceRequest):
    """`POST /v1/prompts/{id}/answer`. The values are checked against the prompt by answers.py."""

    answers: dict[str, Any]


class DraftRequest(RequestModel):
    """`PUT /v1/prompts/{id}/draft` (v1.4): what the person has chosen and typed so far on this
    device, for their other devices; checked like an answer, except that it may be partial."""

    answers: dict[str, Any]
    device_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    # What the person's other devices call this one, when its token is not a paired device's
    # (a paired device's own name wins): "Chosen on laptop · not sent yet" (#53).
    device_name: str | None = _id_text(None, maxLength=limits.MAX_DEVICE_NAME_CHARS)

    @field_validator("device_id", "device_name")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        return _optional_identifier(value)


class LateAnswerRequest(AnswerRequest):
    """`POST /v1/prompts/{id}/late-answer` (v1.4): an answer after the deadline, or after the
    agent's run stopped; the same rules as an answer."""


class DismissRequest(DeviceRequest):
    """`POST /v1/prompts/{id}/dismiss`."""


class EngagedRequest(RequestModel):
    """`POST /v1/prompts/{id}/engaged`: the person is choosing or typing on this device."""

    device_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)

    @field_validator("device_id")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        return _optional_identifier(value)


class ReplyRequest(DeviceRequest):
    """`POST /v1/prompts/{id}/reply`: a person's plain-text reply from a channel."""

    text: str = Field(max_length=limits.MAX_REPLY_CHARS)


class CancelRequest(RequestModel):
    """`POST /v1/prompts/{id}/cancel`."""

    reason: str | None = Field(default=None, max_length=limits.MAX_IDENTIFIER_CHARS)


# ---- query strings -----------------------------------------------------------------------------


class QueryModel(BaseModel):
    """Query parameters: strings on the wire, parsed; unknown parameters are ignored."""

    model_config = ConfigDict(extra="ignore")


class EventsQuery(QueryModel):
    """`GET /v1/events?after=&wait=&limit=`."""

    after: str | None = Field(
        default=None, max_length=32, json_schema_extra={"pattern": "^[0-9]*$"}
    )  # the validator below says it in its own words
    wait: float = Field(
        default=limits.DEFAULT_EVENTS_WAIT_SECONDS, ge=0, le=limits.MAX_WAIT_SECONDS
    )
    limit: int = Field(default=limits.DEFAULT_EVENTS_LIMIT, ge=1, le=limits.MAX_LIMIT)

    @field_validator("after")
    @classmethod
    def _ascii_digits(cls, value: str | None) -> str | None:
        """A cursor is ASCII digits: `str.isdigit()` would also take "²", "١" or "１"."""
        if value and not (value.isascii() and value.isdigit()):
            raise _invalid("must be a cursor returned by this gateway (ASCII digits)")
        return value or None


class ListQuery(QueryModel):
    """`GET /v1/prompts?status=&sessionKey=&limit=&before=`."""

    status: Literal["pending", "all"] = "pending"
    session_key: str | None = Field(
        default=None, alias="sessionKey", min_length=1, max_length=limits.MAX_SESSION_KEY_CHARS
    )
    limit: int = Field(default=limits.DEFAULT_LIST_LIMIT, ge=1, le=limits.MAX_LIMIT)
    before: str | None = Field(default=None, min_length=1, max_length=64)


class LateAnswersQuery(QueryModel):
    """`GET /v1/late-answers?sessionKey=&agentId=&wait=` (v1.4): a look at what is waiting,
    claiming nothing; waits like `/result`."""

    session_key: str | None = Field(
        default=None, alias="sessionKey", min_length=1, max_length=limits.MAX_SESSION_KEY_CHARS
    )
    agent_id: str | None = Field(
        default=None, alias="agentId", min_length=1, max_length=limits.MAX_IDENTIFIER_CHARS
    )
    wait: float = Field(default=0, ge=0, le=limits.MAX_WAIT_SECONDS)


class LateAnswerClaimRequest(RequestModel):
    """`POST /v1/late-answers/claim` (v1.5): take the late answers meant for this agent (or
    its project) for `leaseSeconds`; they are delivered once confirmed (`.../ack` with the
    same `claimId`) and come back if never confirmed. A retry with the same `claimId`
    returns what that claim holds."""

    session_key: str = _id_text(maxLength=limits.MAX_SESSION_KEY_CHARS)
    agent_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)
    claim_id: str = _id_text(maxLength=limits.MAX_IDENTIFIER_CHARS)
    lease_seconds: int = Field(
        default=limits.LATE_CLAIM_LEASE_SECONDS, ge=1, le=limits.MAX_LATE_CLAIM_LEASE_SECONDS
    )
    wait: float = Field(default=0, ge=0, le=limits.MAX_WAIT_SECONDS)

    @field_validator("session_key", "agent_id", "claim_id")
    @classmethod
    def _identifiers(cls, value: str | None) -> str | None:
        return _optional_identifier(value)


class LateAnswerAckRequest(RequestModel):
    """`POST /v1/late-answers/{id}/ack`: the agent has it. With `claimId`, only the agent
    holding that claim may confirm it, and confirming again is the same 200."""

    claim_id: str | None = _id_text(None, maxLength=limits.MAX_IDENTIFIER_CHARS)

    @field_validator("claim_id")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        return _optional_identifier(value)


class ResultQuery(QueryModel):
    """`GET /v1/prompts/{id}/result?wait=`."""

    wait: float = Field(
        default=limits.DEFAULT_RESULT_WAIT_SECONDS, ge=0, le=limits.MAX_WAIT_SECONDS
    )


# ---- records and responses -------------------------------------------------------------------


class ResolvedBy(ResponseModel):
    kind: Literal["device", "agent", "system", "link"]  # link: through its answer link
    device_id: str | None = None
    reason: str | None = None

    @model_serializer(mode="wrap")
    def _drop_missing(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


class LateClaim(ResponseModel):
    """Who holds a late answer now (v1.5): the claim's id, until when."""

    claim_id: str
    until: UtcTime


class LateAnswer(ResponseModel):
    """An answer given after the prompt expired or its run stopped (v1.4); the prompt keeps its
    terminal status. `deliveredAt`: when its agent confirmed it; `claim`: the agent holding
    it, or that got it (v1.5)."""

    answers: dict[str, list[str]]
    answered_at: UtcTime
    resolved_by: ResolvedBy
    delivered_at: UtcTime | None = None
    claim: LateClaim | None = None

    def confirmed_for(self, claim_id: str | None) -> bool:
        """Delivered, to this claim (None: to whichever)."""
        if self.delivered_at is None:
            return False
        return claim_id is None or (self.claim is not None and self.claim.claim_id == claim_id)

    def claimable_by(self, claim_id: str, now_ms: int) -> bool:
        """Undelivered, and held by nobody else: never claimed, this claim's, or a lapsed
        lease (its agent never confirmed it)."""
        if self.delivered_at is not None:
            return False
        held = self.claim
        return held is None or held.claim_id == claim_id or held.until.timestamp() * 1000 <= now_ms


class Draft(ResponseModel):
    """A pending prompt's answer in progress on one of the person's devices (v1.4): shown on
    the others as not sent; never stored with the prompt, never seen by its agent."""

    answers: dict[str, list[str]]  # partial: a question may have no value yet
    device_id: str | None = None
    device_name: str | None = None
    drafted_at: UtcTime


class PromptRecord(ResponseModel):
    """A prompt as the gateway holds it; `version` grows with every change."""

    id: str
    session_key: str
    agent_id: str | None = None
    run_id: str | None = None
    questions: list[Question]
    status: PromptStatus
    created_at: UtcTime
    expires_at: UtcTime
    resolved_at: UtcTime | None = None
    answers: dict[str, list[str]] | None = None
    resolved_by: ResolvedBy | None = None
    version: int = 1
    # The deadline it was created with, once the person's answering moved it (v1.4).
    original_expires_at: UtcTime | None = None
    late_answer: LateAnswer | None = None  # answered after all (v1.4)
    kind: PromptKind = QUESTION  # v1.5: a question, a permission or a plan
    stop: Stop | None = None  # a permission's or a plan's: what it is about
    # Only in a `prompt.draft` event's record (wire.record_with_draft): never written with it.
    draft: Draft | None = Field(default=None, exclude=True)

    @property
    def takes_late_answer(self) -> bool:
        """Expired, or cancelled because its run stopped, and not answered late yet: the
        person may still answer it (for LATE_ANSWER_SECONDS after it ended)."""
        stopped = (
            self.status == "cancelled"
            and self.resolved_by is not None
            and self.resolved_by.reason == "run-abort"
        )
        return (self.status == "expired" or stopped) and self.late_answer is None

    def late_answer_open(self, now_ms: int) -> bool:
        """It takes a late answer, and ended less than LATE_ANSWER_SECONDS before `now_ms`.
        An expired prompt ended at its deadline, even when the gateway was down then and
        recorded its expiry later (v1.5)."""
        ended = self.expires_at if self.status == "expired" else self.resolved_at
        ended = ended or self.expires_at
        window_ms = limits.LATE_ANSWER_SECONDS * 1000
        return self.takes_late_answer and now_ms - ended.timestamp() * 1000 < window_ms

    def late_answer_goes_to(self, session_key: str | None, agent_id: str | None) -> bool:
        """A late answer goes to the project whose question it answers (a `program:folder`
        key), or else only to the very agent that asked: never to another agent that
        happens to share a key like `/mcp`'s default `main` (v1.5)."""
        if session_key is None:
            return True  # the person's own look at everything (GET without a key)
        if self.session_key != session_key:
            return False
        return is_project_key(session_key) or self.agent_id == agent_id

    @property
    def is_pending(self) -> bool:
        return self.status == "pending"

    @property
    def expires_ms(self) -> int:
        """The deadline in Unix milliseconds: what every clock compares with."""
        return int(self.expires_at.timestamp() * 1000)

    def seconds_left(self, now_ms: int) -> float:
        """Time to the deadline (0 once it has come), whoever's clock `now_ms` is."""
        return max(0.0, (self.expires_ms - now_ms) / 1000)

    def overdue(self, now_ms: int) -> bool:
        """Pending with its deadline come: expired, whatever the store says yet."""
        return self.is_pending and self.expires_ms <= now_ms


class LateAnswerItem(ResponseModel):
    """One undelivered late answer, as an agent collects it (`claimId`: the claim it is held
    under, when it was claimed)."""

    prompt_id: str
    session_key: str
    agent_id: str | None = None
    questions: list[Question]
    answers: dict[str, list[str]]
    answered_at: UtcTime
    claim_id: str | None = None

    @classmethod
    def of(cls, record: PromptRecord) -> LateAnswerItem:
        assert record.late_answer is not None
        claim = record.late_answer.claim
        return cls(
            prompt_id=record.id,
            session_key=record.session_key,
            agent_id=record.agent_id,
            questions=record.questions,
            answers=record.late_answer.answers,
            answered_at=record.late_answer.answered_at,
            claim_id=claim.claim_id if claim is not None else None,
        )


class LateAnswerList(ResponseModel):
    late_answers: list[LateAnswerItem]


class AnswersEnvelope(ResponseModel):
    answers: dict[str, list[str]]


class ToolResult(ResponseModel):
    """What the agent's `ask_user` call returns: answered, or no_answer with its reason."""

    status: Literal["answered", "no_answer"]
    answers: AnswersEnvelope | None = None
    reason: NoAnswerReason | None = None

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class PendingResult(ResponseModel):
    """`/result?wait=` ended before the prompt did: how long it has left, and whether its
    deadline moved because the person is answering (v1.4)."""

    status: Literal["pending"] = "pending"
    seconds_left: int
    answering: bool = False

    @classmethod
    def of(cls, record: PromptRecord, now_ms: int) -> PendingResult:
        return cls(
            seconds_left=math.ceil(record.seconds_left(now_ms)),
            answering=record.original_expires_at is not None,
        )


class Event(ResponseModel):
    seq: int
    type: EventType
    prompt: PromptRecord


class EventsPage(ResponseModel):
    events: list[Event]
    cursor: str
    server_time: UtcTime


class PromptList(ResponseModel):
    prompts: list[PromptRecord]
    cursor: str
    server_time: UtcTime


class RunCancelled(ResponseModel):
    cancelled: list[str]


class Health(ResponseModel):
    status: Literal["ok"] = "ok"


class FieldErrorBody(ResponseModel):
    path: str
    message: str


class ErrorDetail(ResponseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    code: str
    message: str
    fields: list[FieldErrorBody] | None = None
    prompt: PromptRecord | None = None


class ErrorBody(ResponseModel):
    """Every error: `{"error": {"code", "message", "fields"?, "prompt"?}}`."""

    error: ErrorDetail
