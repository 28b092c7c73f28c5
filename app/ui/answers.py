"""What the person has chosen on one card, before Submit: pure state, no widgets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.protocol import Question


@dataclass
class QuestionAnswer:
    question: Question
    chosen: list[str] = field(default_factory=list)
    other: str = ""

    def choose(self, label: str) -> None:
        """Single-select: this option, and no free text. Multi-select: add it."""
        if self.question.multi_select:
            if label not in self.chosen:
                self.chosen.append(label)
        else:
            self.chosen = [label]
            self.other = ""

    def unchoose(self, label: str) -> None:
        if label in self.chosen:
            self.chosen.remove(label)

    def set_other(self, text: str) -> None:
        """Single-select: typing replaces the chosen option. Multi-select: they combine."""
        self.other = text
        if text.strip() and not self.question.multi_select:
            self.chosen = []

    def values(self) -> list[str]:
        labels = self.question.option_labels()
        values = [label for label in labels if label in self.chosen]  # in option order
        if self.other.strip():
            values.append(self.other.strip())
        return values

    @property
    def complete(self) -> bool:
        return bool(self.values())


class CardAnswers:
    """Every question of one prompt, answered together."""

    def __init__(self, questions: Sequence[Question]) -> None:
        self.by_id = {q.id: QuestionAnswer(q) for q in questions}

    def __getitem__(self, question_id: str) -> QuestionAnswer:
        return self.by_id[question_id]

    @property
    def complete(self) -> bool:
        return all(a.complete for a in self.by_id.values())

    def answers(self) -> dict[str, list[str]]:
        return {qid: a.values() for qid, a in self.by_id.items()}
