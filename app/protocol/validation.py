"""Turn raw JSON into contract models, or into one ProtocolError that names every bad field."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import limits
from .errors import ErrorCode, FieldError, ProtocolError, format_path
from .models import CreatePromptRequest

M = TypeVar("M", bound=BaseModel)

_MESSAGES = {
    "missing": "required",
    "extra_forbidden": "unknown property: the contract does not define it",
    "string_type": "must be a string",
    "list_type": "must be an array",
    "bool_type": "must be true or false",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "int_type": "must be an integer",
    "string_too_long": "at most {max_length} characters",
    "less_than_equal": "must be at most {le}",
    "greater_than_equal": "must be at least {ge}",
    "int_parsing": "must be an integer",
    "float_parsing": "must be a number",
    "literal_error": "must be one of {expected}",
}


# What a body that is not JSON at all is told, on every path that reads one.
BODY_REQUIRED = "a JSON body is required"
NOT_A_JSON_BODY = "must be a JSON object, sent with Content-Type: application/json"


def field_errors(exc: ValidationError) -> list[FieldError]:
    """Pydantic's validation errors as `path: message` pairs a person can act on."""
    out: list[FieldError] = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        template = _MESSAGES.get(err["type"])
        if template is not None:
            message = template.format(**_plain(err.get("ctx") or {}))
        else:
            message = err["msg"]
        out.append(FieldError(format_path(loc), message))
    return out


def json_error_message(detail: str, offset: int | None) -> str:
    where = f" (at character {offset})" if offset is not None else ""
    return f"not valid JSON: {detail}{where}"


def _plain(ctx: dict[str, Any]) -> dict[str, Any]:
    """`60` rather than `60.0` in messages."""
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}


def _summary(errors: list[FieldError]) -> str:
    if len(errors) == 1:
        return str(errors[0])
    return f"{len(errors)} problems: " + "; ".join(str(e) for e in errors)


def parse_model(model: type[M], data: Any, code: str = ErrorCode.INVALID_REQUEST) -> M:
    """Validate `data` (already-decoded JSON) as `model`, raising ProtocolError on failure."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise protocol_error_from(exc, code) from None


def protocol_error_from(exc: ValidationError, code: str) -> ProtocolError:
    """One ProtocolError naming every field."""
    errors = field_errors(exc)
    return ProtocolError(code, _summary(errors), errors)


def validate_prompt(data: Any) -> CreatePromptRequest:
    """All of "Validating a prompt" for `POST /v1/prompts`, the main-session rule included."""
    request = parse_model(CreatePromptRequest, data, ErrorCode.INVALID_PROMPT)
    ensure_main_session(request)
    return request


def ensure_main_session(request: CreatePromptRequest) -> None:
    if request.session_kind != limits.MAIN_SESSION_KIND:
        raise ProtocolError(
            ErrorCode.NOT_MAIN_SESSION,
            f"ask_user is only for the main session; this request comes from a "
            f"{request.session_kind!r} session",
            [FieldError("sessionKind", f"must be {limits.MAIN_SESSION_KIND!r}")],
        )
