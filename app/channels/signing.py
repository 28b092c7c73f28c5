"""What a platform's signed callback must pass besides its signature: a timestamp that is
plain digits and fresh, and a signature not seen before (a captured press replayed within the
window would act again). Slack and Discord sign `timestamp + body` the same way."""

from __future__ import annotations

import re
import time
from collections import OrderedDict

MAX_AGE_SECONDS = 300  # Slack's and Discord's own window
_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII only: "²".isdigit() is True, int("²") fails


def fresh(timestamp: str, now: float | None = None) -> bool:
    """A Unix time in ASCII digits, within MAX_AGE_SECONDS of now."""
    if not _DIGITS.fullmatch(timestamp):
        return False
    return abs((time.time() if now is None else now) - int(timestamp)) <= MAX_AGE_SECONDS


class RecentSignatures:
    """Signatures accepted in the last MAX_AGE_SECONDS: a second delivery of one is a replay."""

    def __init__(self, max_size: int = 100_000) -> None:
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._max_size = max_size

    def first_time(self, signature: str, now: float | None = None) -> bool:
        """True once per signature (within the window); remembers it."""
        now = time.time() if now is None else now
        while self._seen and (
            next(iter(self._seen.values())) < now - MAX_AGE_SECONDS
            or len(self._seen) >= self._max_size
        ):
            self._seen.popitem(last=False)
        if signature in self._seen:
            return False
        self._seen[signature] = now
        return True
