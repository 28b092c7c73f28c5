"""Plain-text replies (docs/PROTOCOL.md "Plain-text replies"): a person's words into answers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .answers import canonicalize_answers
from .errors import ErrorCode, FieldError, ProtocolError
from .models import Question
from .text import fold

_PARTS = re.compile(r"[,;\n]")
_KEYED_LINE = re.compile(r"^\s*(?P<key>[^:=\n]+?)\s*(?P<sep>[:=])(?P<value>.*)$")


def _reply_error(message: str, fields: list[FieldError] | None = None) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_REPLY, message, fields or [])


def _pick_option(question: Question, text: str) -> str | None:
    """A number in range (1-based) or a label in any case picks that option."""
    text = text.strip()
    labels = question.option_labels()
    if text.isdecimal() and len(text) <= 9:  # int() refuses 4,300 digits and more
        number = int(text)
        if 1 <= number <= len(labels):
            return labels[number - 1]
    key = fold(text)
    for label in labels:
        if fold(label) == key:
            return label
    return None


def read_value(question: Question, text: str) -> list[str]:
    """The values one question's reply stands for, by the single-question rules."""
    text = text.strip()
    if not text:
        return []
    whole = _pick_option(question, text)
    if whole is not None:
        return [whole]
    if not question.multi_select:
        return [text]
    values: list[str] = []
    seen: set[str] = set()
    for part in _PARTS.split(text):
        if not part.strip():
            continue
        value = _pick_option(question, part) or part.strip()
        if fold(value) not in seen:
            seen.add(fold(value))
            values.append(value)
    return values


def _question_for_key(questions: Sequence[Question], key: str) -> Question | None:
    key = fold(key)
    for number, question in enumerate(questions, start=1):
        if key in (fold(question.id), fold(question.header), str(number)):
            return question
    return None


def split_key(questions: Sequence[Question], line: str) -> tuple[Question, str] | None:
    """`key: value` or `key = value` where key names a question; times, URLs, paths are values."""
    match = _KEYED_LINE.match(line)
    if not match:
        return None
    key, sep, value = match["key"], match["sep"], match["value"]
    if sep == ":" and (value.startswith(("//", "\\", "/"))):
        return None  # https://…, C:\…, C:/…
    if sep == ":" and key.strip().isdecimal() and value[:1].isdecimal():
        return None  # a time such as 1:30
    question = _question_for_key(questions, key)
    return (question, value) if question is not None else None


def _describe(questions: Sequence[Question], question: Question) -> str:
    if len(questions) == 1:
        return f"the question ({question.header})"
    return f"question {questions.index(question) + 1} ({question.header})"


def parse_reply(questions: Sequence[Question], text: str) -> dict[str, list[str]]:
    """Parse a reply into canonical answers, or raise ProtocolError(`invalid_reply`) saying
    exactly what is missing."""
    if not text.strip():
        raise _reply_error(
            "Your reply is empty. Reply with an option's number or label, or your own answer."
        )
    raw: dict[str, list[str]] = {}
    if len(questions) == 1:
        question = questions[0]
        keyed = split_key(questions, text) if "\n" not in text.strip() else None
        raw[question.id] = read_value(question, keyed[1] if keyed else text)
    else:
        unkeyed: list[str] = []
        for line in text.splitlines():
            if not line.strip():
                continue
            keyed = split_key(questions, line)
            if keyed is None:
                unkeyed.append(line)
            else:
                question, value = keyed
                for v in read_value(question, value):
                    if v not in raw.setdefault(question.id, []):
                        raw[question.id].append(v)
        remaining = [q for q in questions if q.id not in raw]
        if len(unkeyed) > len(remaining):
            extra = unkeyed[len(remaining)]
            raise _reply_error(
                f"There are more answers than questions: I could not place {extra.strip()!r}. "
                'Start each line with the question\'s number, like "1: …".'
            )
        for question, line in zip(remaining, unkeyed, strict=False):
            raw[question.id] = read_value(question, line)
    missing = [q for q in questions if not raw.get(q.id)]
    if missing:
        names = ", ".join(_describe(questions, q) for q in missing)
        hint = (
            f' Reply with one line per question, like "{questions.index(missing[0]) + 1}: …".'
            if len(questions) > 1
            else " Reply with an option's number or label, or your own answer."
        )
        raise _reply_error(
            f"No answer for {names}.{hint}",
            [FieldError(f"answers.{q.id}", "no answer in the reply") for q in missing],
        )
    for question in questions:
        if not question.multi_select and len(raw[question.id]) > 1:
            raise _reply_error(
                f"{_describe(questions, question).capitalize()} takes one answer, "
                f"but the reply gives {len(raw[question.id])}.",
                [FieldError(f"answers.{question.id}", "single-select: exactly one answer")],
            )
    try:
        return canonicalize_answers(questions, raw)
    except ProtocolError as exc:
        raise _reply_error(exc.message, exc.fields) from None
