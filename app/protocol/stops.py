"""Every stop (v1.5): besides its own questions, an agent stops to ask "may I?" (a permission:
Claude Code's permission dialog, Codex's approvals) and "may I go on?" (a plan: Claude Code's
ExitPlanMode). Each is a prompt of its `kind`, with the `stop` a person must see to decide —
the command, the file and its diff, the URL, the plan — and the program's own choices as the
options of one single-select question.

Safe by construction: a permission or a plan is decided only by the person, in front of what
it is about. Its deadline answers nothing (the program's own dialog asks then); the choice
that allows for good (`stop.always`) is never one tap — not on a card, in a notification, an
answer link or a chat button (quick.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer
from pydantic.config import JsonDict

from . import limits
from .base import RequestModel, _invalid
from .text import NO_CONTROL_PATTERN, has_control


class _Labelled(Protocol):
    @property
    def label(self) -> str: ...


class _Choices(Protocol):
    """What the rules here read of a question (models.Question, which imports this module)."""

    @property
    def multi_select(self) -> bool: ...

    @property
    def options(self) -> Sequence[_Labelled]: ...


PromptKind = Literal["question", "permission", "plan"]
QUESTION: PromptKind = "question"
PERMISSION: PromptKind = "permission"
PLAN: PromptKind = "plan"

MAX_COMMAND_CHARS = 4000
MAX_DIFF_CHARS = 12_000  # a phone reads about this much; the hook cuts longer ones, marked
MAX_PLAN_CHARS = 12_000
MAX_URL_CHARS = 2000
MAX_PATH_CHARS = 1000
MAX_RULE_CHARS = 500
# What the schema says of each part, as the validators below check it (the fuzz test holds
# the two to each other): a name or a path is one line; a command, a diff or a plan has
# lines, but no NUL.
_ONE_LINE: JsonDict = {"pattern": NO_CONTROL_PATTERN}
_TEXT: JsonDict = {"pattern": "^[^\\u0000]*$"}


class Stop(RequestModel):
    """What a permission or plan prompt is about, as the person must see it to decide."""

    program: str = Field(min_length=1, max_length=64, json_schema_extra=_ONE_LINE)
    tool: str | None = Field(default=None, max_length=128, json_schema_extra=_ONE_LINE)
    command: str | None = Field(default=None, max_length=MAX_COMMAND_CHARS, json_schema_extra=_TEXT)
    path: str | None = Field(default=None, max_length=MAX_PATH_CHARS, json_schema_extra=_ONE_LINE)
    # unified, for `path`
    diff: str | None = Field(default=None, max_length=MAX_DIFF_CHARS, json_schema_extra=_TEXT)
    url: str | None = Field(default=None, max_length=MAX_URL_CHARS, json_schema_extra=_ONE_LINE)
    plan: str | None = Field(default=None, max_length=MAX_PLAN_CHARS, json_schema_extra=_TEXT)
    # The label of the option that allows for good, and the exact rule it adds.
    always: str | None = Field(
        default=None, max_length=limits.MAX_LABEL_CHARS, json_schema_extra=_ONE_LINE
    )
    rule: str | None = Field(default=None, max_length=MAX_RULE_CHARS, json_schema_extra=_ONE_LINE)

    @model_serializer(mode="wrap")
    def _only_what_it_holds(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """On the wire, the parts it has: a command's stop says nothing of diffs or plans."""
        return {k: v for k, v in handler(self).items() if v is not None}

    @field_validator("program", "tool", "path", "url", "always", "rule")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and has_control(value):
            raise _invalid("must not hold control characters (such as NUL or a new line)")
        return value

    @field_validator("command", "diff", "plan")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise _invalid("must not hold NUL")
        return value


def kind_problems(
    kind: PromptKind, stop: Stop | None, questions: Sequence[_Choices]
) -> list[tuple[tuple[str | int, ...], str]]:
    """What is wrong with a prompt of `kind` (each with its field): a question prompt carries
    no `stop`; a permission or a plan carries one, and its choices are one single-select
    question, whose options include `stop.always` when it names one."""
    if kind == QUESTION:
        return [] if stop is None else [(("stop",), "only a permission or a plan carries it")]
    if stop is None:
        return [(("stop",), f"a {kind} prompt needs it: what the person must see to decide")]
    if len(questions) != 1 or questions[0].multi_select:
        return [(("questions",), f"a {kind} prompt is one single-select question: its choices")]
    labels = [option.label for option in questions[0].options]
    if stop.always is not None and stop.always not in labels:
        return [(("stop", "always"), f"must be one of the options' labels: {labels}")]
    return []
