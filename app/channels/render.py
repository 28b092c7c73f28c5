"""What every chat channel shows: a prompt as a message with buttons, one question at a time,
and the summary it becomes. Platform-free: each adapter turns `Button` rows into its own kind.

A message's progress (which question it shows, what is ticked so far) is a `View`, kept by the
adapter beside the message so a restart shows the same thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.device import DisplayStatus, TimelineItem
from app.protocol import PromptRecord
from app.protocol.asker import asker_label
from app.protocol.quick import tappable
from app.protocol.render import OTHER_LINE, option_lines

MAX_CALLBACK_BYTES = 64  # Telegram's limit for a button's data; the tightest of the platforms
TICK = "✓ "

STATUS_LINE = {
    DisplayStatus.SENDING: "Sending your answer…",
    DisplayStatus.ANSWERED_HERE: "Answered here.",
    DisplayStatus.ANSWERED_ELSEWHERE: "Answered elsewhere.",
    DisplayStatus.ANSWERED_BY_LINK: "Answered from a link.",
    DisplayStatus.DISMISSED: "Dismissed.",
    DisplayStatus.EXPIRED: "Expired: the agent went on without an answer.",
    DisplayStatus.CANCELLED: "Cancelled: the agent's run stopped.",
    DisplayStatus.UNAVAILABLE: "No longer available.",
}


@dataclass
class View:
    """Which question a message shows, and the choices made so far (labels, by question id)."""

    question: int = 0
    chosen: dict[str, list[str]] = field(default_factory=dict)
    shown: str = ""  # the status its summary last showed ("" while it asks)

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "chosen": self.chosen, "shown": self.shown}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> View:
        return cls(
            int(data.get("question", 0)), dict(data.get("chosen", {})), str(data.get("shown", ""))
        )


@dataclass(frozen=True)
class Button:
    label: str
    data: str  # what comes back when it is pressed: `callback_data(...)`


def callback_data(key: int, action: str, arg: int = 0) -> str:
    """`key` names the message (a small number, not the prompt id), so data stays short."""
    data = f"{key}:{action}:{arg}"
    assert len(data.encode()) <= MAX_CALLBACK_BYTES
    return data


def parse_callback(data: str) -> tuple[int, str, int] | None:
    """`key:action:arg` as `callback_data` writes it; None for anything else (data comes from
    the platform's client and can be forged: "²" is a digit to str.isdigit, not to int)."""
    found = _CALLBACK.fullmatch(data)
    if found is None:
        return None
    return int(found[1]), found[2], int(found[3])


_CALLBACK = re.compile(r"([0-9]{1,9}):([a-z]):([0-9]{1,3})")


def prompt_text(record: PromptRecord, view: View) -> str:
    """The question the view is on, its options numbered, and how to answer in words."""
    questions = record.questions
    question = questions[view.question]
    lines = [asker_label(record.session_key, record.agent_id)]
    if len(questions) > 1:
        lines.append(f"Question {view.question + 1} of {len(questions)}")
    lines.append(f"{question.header} — {question.question}")
    if question.multi_select:
        lines.append("(choose one or more, then Done)")
    lines.extend(option_lines(question))
    lines.append("")
    if len(questions) > 1:
        lines.append(f"{OTHER_LINE}: reply to this message with one line per question, like 1: 2")
    else:
        lines.append(f"{OTHER_LINE}: reply to this message.")
    return "\n".join(lines)


def keyboard(record: PromptRecord, view: View, key: int) -> list[list[Button]]:
    """One option per row (labels are up to 64 characters), then Done/Submit and Dismiss."""
    questions = record.questions
    question = questions[view.question]
    chosen = view.chosen.get(question.id, [])
    last = view.question == len(questions) - 1
    rows = []
    for index, option in enumerate(question.options):
        if not tappable(record, option):  # never "allow always" (v1.5): the app, in front
            continue  # of the rule it adds
        if question.multi_select:
            mark = TICK if option.label in chosen else ""
            rows.append([Button(mark + option.label, callback_data(key, "t", index))])
        else:
            rows.append([Button(option.label, callback_data(key, "p", index))])
    if question.multi_select:
        done = "Submit" if last and len(questions) > 1 else "Done"
        rows.append([Button(done, callback_data(key, "n", view.question))])
    rows.append([Button("Dismiss", callback_data(key, "x"))])
    return rows


def summary_text(item: TimelineItem) -> str:
    """The compact question → answer record a message becomes when the prompt is resolved."""
    lines = [asker_label(item.record.session_key, item.record.agent_id)]
    answers = item.answers or {}
    for question in item.record.questions:
        given = answers.get(question.id)
        answer = ", ".join(given) if given else "—"
        lines.append(f"{question.header} — {question.question}\n→ {answer}")
    lines.append(STATUS_LINE.get(item.status, item.status.value))
    return "\n\n".join(lines)
