"""What the person has chosen for a prompt, before Submit: pure, immutable state, no widgets.

Every change returns a new value, so the app's screen state holds it as it holds anything else
and the cards only render it. These rules are the one place a selection changes: the app's
cards, the chat channels' buttons and the answer page all choose, tick and type by them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .models import Question


@dataclass(frozen=True)
class QuestionAnswer:
    question: Question
    chosen: tuple[str, ...] = ()
    other: str = ""

    def choose(self, label: str) -> QuestionAnswer:
        """Single-select: this option, and no free text. Multi-select: add it."""
        if self.question.multi_select:
            return self if label in self.chosen else replace(self, chosen=(*self.chosen, label))
        return replace(self, chosen=(label,), other="")

    def unchoose(self, label: str) -> QuestionAnswer:
        return replace(self, chosen=tuple(c for c in self.chosen if c != label))

    def toggle(self, label: str) -> QuestionAnswer:
        """A tap on an option: multi-select flips it; single-select chooses it."""
        if self.question.multi_select and label in self.chosen:
            return self.unchoose(label)
        return self.choose(label)

    def set_other(self, text: str) -> QuestionAnswer:
        """Single-select: typing replaces the chosen option. Multi-select: they combine."""
        if text.strip() and not self.question.multi_select:
            return replace(self, other=text, chosen=())
        return replace(self, other=text)

    def with_values(self, values: Sequence[str]) -> QuestionAnswer:
        """The choices and text that `values()` gave (a draft from another device): option
        labels are chosen, the rest is the Other text."""
        labels = self.question.option_labels()
        chosen = tuple(v for v in values if v in labels)
        other = next((v for v in values if v not in labels), "")
        return replace(self, chosen=chosen, other=other)

    def press_number(self, number: int) -> QuestionAnswer:
        """Keys 1–4: the option with that number, as a tap would; out of range changes nothing."""
        labels = self.question.option_labels()
        if not 1 <= number <= len(labels):
            return self
        return self.toggle(labels[number - 1])

    def is_chosen(self, label: str) -> bool:
        return label in self.chosen

    def values(self) -> list[str]:
        labels = self.question.option_labels()
        values = [label for label in labels if label in self.chosen]  # in option order
        if self.other.strip():
            values.append(self.other.strip())
        return values

    @property
    def complete(self) -> bool:
        return bool(self.values())


@dataclass(frozen=True)
class CardAnswers:
    """Every question of one prompt, answered together, and the question last touched."""

    by_id: dict[str, QuestionAnswer]
    active: str = ""  # the question that keys 1–4 choose in

    @classmethod
    def start(cls, questions: Sequence[Question]) -> CardAnswers:
        return cls({q.id: QuestionAnswer(q) for q in questions}, questions[0].id)

    def __getitem__(self, question_id: str) -> QuestionAnswer:
        return self.by_id[question_id]

    def with_answer(self, answer: QuestionAnswer) -> CardAnswers:
        """This question's new answer; it becomes the active question."""
        return CardAnswers({**self.by_id, answer.question.id: answer}, answer.question.id)

    def focus(self, question_id: str) -> CardAnswers:
        return replace(self, active=question_id)

    @property
    def complete(self) -> bool:
        return all(a.complete for a in self.by_id.values())

    def answers(self) -> dict[str, list[str]]:
        return {qid: a.values() for qid, a in self.by_id.items()}

    def with_values(self, answers: dict[str, list[str]]) -> CardAnswers:
        """Every question as `answers` has it (a draft: a question left out has no answer);
        the active question stays."""
        return replace(
            self,
            by_id={qid: a.with_values(answers.get(qid, ())) for qid, a in self.by_id.items()},
        )
