"""Which choices a single tap may make (v1.5): any option of a question, but never the one a
permission names as allowing for good (`Stop.always`) — not by a card's one tap, a
notification's action, an answer link's button or a chat button."""

from __future__ import annotations

from .models import Option
from .records import PromptRecord


def tappable(record: PromptRecord, option: Option) -> bool:
    """Whether a single tap may choose `option` — a card's one tap, a notification's action,
    an answer link's button, a chat button: any, but never the one that allows for good."""
    return record.stop is None or option.label != record.stop.always


def quick_options(record: PromptRecord) -> list[tuple[int, Option]]:
    """The first question's options (numbered from 1) a single tap may choose."""
    return [(n, o) for n, o in enumerate(record.questions[0].options, 1) if tappable(record, o)]
