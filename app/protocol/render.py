"""A prompt as readable text, for channels without buttons."""

from __future__ import annotations

from collections.abc import Sequence

from .models import Question

OTHER_LINE = "Other: reply with your own answer"


def option_lines(question: Question, indent: str = "") -> list[str]:
    """`1. Label — description`, one per option: the numbers a text reply may use."""
    lines = []
    for number, option in enumerate(question.options, start=1):
        line = f"{indent}{number}. {option.label}"
        if option.description:
            line += f" — {option.description}"
        lines.append(line)
    return lines


def _option_lines(question: Question, indent: str) -> list[str]:
    return [*option_lines(question, indent), f"{indent}{OTHER_LINE}"]


def guidance(questions: Sequence[Question]) -> str:
    """The one line that tells a person how to reply to this particular prompt."""
    if len(questions) > 1:
        return (
            'Reply with one line per question, starting with its number, like "1: 2" — an '
            "option's number or label, or your own answer"
            + (
                "; separate several choices with commas."
                if any(q.multi_select for q in questions)
                else "."
            )
        )
    if questions[0].multi_select:
        return (
            "Reply with one or more option numbers or labels separated by commas "
            '(like "1, 3"), or your own answer.'
        )
    return "Reply with an option's number or label, or your own answer."


def render_prompt_text(questions: Sequence[Question]) -> str:
    """Numbered questions when there are several, numbered options, an Other line, guidance."""
    blocks: list[str] = []
    several = len(questions) > 1
    for number, question in enumerate(questions, start=1):
        title = f"{question.header} — {question.question}"
        if question.multi_select:
            title += " (choose one or more)"
        if several:
            blocks.append("\n".join([f"{number}. {title}", *_option_lines(question, "   ")]))
        else:
            blocks.append("\n".join([title, *_option_lines(question, "")]))
    blocks.append(guidance(questions))
    return "\n\n".join(blocks) + "\n"
