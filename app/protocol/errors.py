"""The one error type of the contract: a stable machine `code`, a sentence, per-field messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ErrorCode:
    """Stable machine codes of docs/PROTOCOL.md, with the HTTP status each one maps to."""

    INVALID_PROMPT = "invalid_prompt"
    INVALID_ANSWER = "invalid_answer"
    INVALID_REPLY = "invalid_reply"
    INVALID_REQUEST = "invalid_request"
    NOT_MAIN_SESSION = "not_main_session"
    PENDING_EXISTS = "pending_exists"
    ALREADY_RESOLVED = "already_resolved"
    CLAIMED_ELSEWHERE = "claimed_elsewhere"
    NOT_FOUND = "not_found"
    CURSOR_EXPIRED = "cursor_expired"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    PAIRING_INVALID = "pairing_invalid"
    TOO_MANY_ATTEMPTS = "too_many_attempts"
    TOO_MANY_PENDING = "too_many_pending"
    TOO_MANY_DRAFTS = "too_many_drafts"
    IDEMPOTENCY_CONFLICT = "idempotency_conflict"  # a key reused with a different request
    METHOD_NOT_ALLOWED = "method_not_allowed"
    REQUEST_TIMEOUT = "request_timeout"  # headers or a body not all in within their deadline
    HEADERS_TOO_LARGE = "headers_too_large"  # past 32 KiB of request line and headers
    NAME_TAKEN = "name_taken"  # a person's name already used on this gateway
    DEFAULT_PERSON = "default_person"  # the default person cannot be removed
    UNAVAILABLE = "unavailable"  # the store could not take a write (disk full, locked): retry
    INTERNAL = "internal_error"


HTTP_STATUS: dict[str, int] = {
    ErrorCode.INVALID_PROMPT: 422,
    ErrorCode.INVALID_ANSWER: 422,
    ErrorCode.INVALID_REPLY: 422,
    ErrorCode.INVALID_REQUEST: 422,
    ErrorCode.NOT_MAIN_SESSION: 403,
    ErrorCode.PENDING_EXISTS: 409,
    ErrorCode.ALREADY_RESOLVED: 409,
    ErrorCode.CLAIMED_ELSEWHERE: 409,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CURSOR_EXPIRED: 410,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.PAIRING_INVALID: 403,
    ErrorCode.TOO_MANY_ATTEMPTS: 429,
    ErrorCode.TOO_MANY_PENDING: 429,
    ErrorCode.TOO_MANY_DRAFTS: 429,
    ErrorCode.IDEMPOTENCY_CONFLICT: 409,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.HEADERS_TOO_LARGE: 431,
    ErrorCode.NAME_TAKEN: 409,
    ErrorCode.DEFAULT_PERSON: 409,
    ErrorCode.UNAVAILABLE: 503,
    ErrorCode.INTERNAL: 500,
}


@dataclass(frozen=True)
class FieldError:
    """One thing wrong with one field, e.g. `questions[1].options: 2 to 4 options allowed`."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass
class ProtocolError(Exception):
    """Raised by every rule of the contract; each side turns it into its own surface once."""

    code: str
    message: str
    fields: list[FieldError] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return describe(self.message, self.fields)

    @property
    def http_status(self) -> int:
        return HTTP_STATUS.get(self.code, 400)

    def to_body(self) -> dict[str, Any]:
        """The wire shape: `{"error": {"code", "message", "fields"?, ...}}`."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.fields:
            error["fields"] = [{"path": f.path, "message": f.message} for f in self.fields]
        error.update(self.extra)
        return {"error": error}


def describe(message: str, fields: list[FieldError]) -> str:
    """An error as a person reads it: the message, then each field's problem on its own line,
    unless the message already is the one field's problem (it was said twice)."""
    if not fields or (len(fields) == 1 and str(fields[0]) == message):
        return message
    return message + "\n" + "\n".join(f"- {f}" for f in fields)


def error_from_body(body: Any, status: int, reason: str = "") -> ProtocolError:
    """The contract's error a response carries (`{"error": {...}}`, what `to_body` writes);
    a body of another shape (a proxy's page, say) becomes `http_<status>`."""
    try:
        error = body["error"]
        fields = [FieldError(str(f["path"]), str(f["message"])) for f in error.get("fields", [])]
        extra = {k: v for k, v in error.items() if k not in ("code", "message", "fields")}
        return ProtocolError(str(error["code"]), str(error["message"]), fields, extra)
    except (KeyError, TypeError, AttributeError):
        return ProtocolError(f"http_{status}", reason or f"the gateway answered {status}")


def format_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Turn a pydantic location like ('questions', 1, 'options') into `questions[1].options`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
