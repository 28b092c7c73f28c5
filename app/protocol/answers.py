"""The answer rules of docs/PROTOCOL.md "Answering": validate and canonicalise an answer for
a prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import limits
from .errors import ErrorCode, FieldError, ProtocolError
from .models import Question
from .text import fold


def canonical_value(question: Question, value: str) -> str:
    """A value matching an option label (trimmed, any case) becomes that label; else free text."""
    value = value.strip()
    key = fold(value)
    for label in question.option_labels():
        if fold(label) == key:
            return label
    return value


def canonicalize_answers(
    questions: Sequence[Question], answers: Mapping[str, Any], *, partial: bool = False
) -> dict[str, list[str]]:
    """Check `answers` against the prompt's questions and return them canonicalised.
    `partial`: a draft (v1.4), where a question may have no answer yet (left out, or []).

    Raises ProtocolError(`invalid_answer`) naming every field that is wrong; nothing is changed.
    """
    errors: list[FieldError] = []
    by_id = {q.id: q for q in questions}
    for key in answers:
        if key not in by_id:
            errors.append(
                FieldError(
                    f"answers.{key}",
                    "unknown question id; this prompt asks " + ", ".join(map(repr, by_id)),
                )
            )
    result: dict[str, list[str]] = {}
    for question in questions:
        path = f"answers.{question.id}"
        if question.id not in answers:
            if partial:
                continue
            errors.append(FieldError(path, f"required: {question.header!r} has no answer"))
            continue
        raw = answers[question.id]
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            errors.append(FieldError(path, "must be an array of strings"))
            continue
        most = len(question.options) + 1  # every option, and the Other field
        if partial and len(raw) > most:  # a draft is what a card can hold (#52)
            errors.append(FieldError(path, f"a draft holds at most {most} values, got {len(raw)}"))
            continue
        values: list[str] = []
        for index, value in enumerate(raw):
            if not value.strip():
                errors.append(FieldError(f"{path}[{index}]", "must not be blank"))
                continue
            if len(value.strip()) > limits.MAX_ANSWER_VALUE_CHARS:
                errors.append(
                    FieldError(
                        f"{path}[{index}]",
                        f"at most {limits.MAX_ANSWER_VALUE_CHARS} characters, "
                        f"got {len(value.strip())}",
                    )
                )
                continue
            canonical = canonical_value(question, value)
            if canonical not in values:
                values.append(canonical)
        if not raw and not partial:
            errors.append(FieldError(path, "choose at least one option or write your own answer"))
        elif values and not question.multi_select and len(values) > 1:
            errors.append(
                FieldError(path, f"single-select: exactly one answer allowed, got {len(values)}")
            )
        result[question.id] = values
    if errors:
        summary = "; ".join(str(e) for e in errors)
        raise ProtocolError(
            ErrorCode.INVALID_ANSWER, f"The answer is incomplete or invalid: {summary}", errors
        )
    return result
