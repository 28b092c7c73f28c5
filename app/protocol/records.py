"""The wire models of what the gateway keeps and answers (docs/PROTOCOL.md): the prompt's
record, its late answer and drafts, the tool result, events and pages, errors. Response models
ignore unknown properties, so an older device keeps working against a newer gateway."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    model_serializer,
)
from pydantic.alias_generators import to_camel

from . import limits
from .asker import is_project_key
from .base import ResponseModel
from .models import (
    EventType,
    NoAnswerReason,
    PromptStatus,
    Question,
    UtcTime,
)
from .stops import QUESTION, PromptKind, Stop

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
