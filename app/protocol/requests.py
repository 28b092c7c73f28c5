"""The wire models of what devices and agents send besides a prompt (docs/PROTOCOL.md): a
device's answer, draft, dismissal, reply; an agent's cancel and late-answer claim; the query
strings. Request models reject unknown properties."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

from . import limits
from .base import RequestModel, _invalid
from .models import (
    _id_text,
    _optional_identifier,
)

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
