"""How every side waits before trying the gateway again (docs/PROTOCOL.md: on a network error, back
off exponentially, jittered, capped): the step doubles from `start` up to `cap`, and each wait
is drawn between half and all of it, so clients that lost the gateway together do not return
together. The agent's calls and the device's sync loop use this one rule, each with its own
start and cap."""

from __future__ import annotations

import random


def backoff_delay(attempt: int, start: float, cap: float) -> float:
    """The wait before try `attempt + 1` (attempt 0 is the first retry)."""
    step = min(cap, start * 2**attempt)
    return random.uniform(step / 2, step)


class Backoff:
    """The same rule, counting its own attempts; reset on success."""

    def __init__(self, start: float, cap: float) -> None:
        self.start, self.cap, self.attempt = start, cap, 0

    def next_delay(self) -> float:
        delay = backoff_delay(self.attempt, self.start, self.cap)
        self.attempt += 1
        return delay

    def reset(self) -> None:
        self.attempt = 0
