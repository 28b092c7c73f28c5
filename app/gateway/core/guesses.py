"""Wrong guesses of a secret in a URL or a body (pairing codes, answer links), counted per
address: past `MAX_FAILED_PAIRINGS_PER_MINUTE` in a minute, that address is refused (429) for
the rest of the minute. The table of addresses is capped, and what it forgets first is never a
blocked address: a flood of one-off failures must not free one."""

from __future__ import annotations

from collections import deque

from app.protocol import ErrorCode, ProtocolError, limits

WINDOW_MS = 60_000
MAX_ADDRESSES = 10_000  # addresses remembered at once


class Guesses:
    def __init__(self, what: str) -> None:
        self.what = what  # "pairing codes", "answer links": for the message
        self._failures: dict[str, deque[int]] = {}  # address → its recent failures

    def refuse_when_limited(self, address: str, now_ms: int) -> None:
        """429 `too_many_attempts` when `address` failed too often in the last minute."""
        recent = self._failures.get(address)
        while recent and recent[0] <= now_ms - WINDOW_MS:
            recent.popleft()
        if recent is not None and not recent:
            del self._failures[address]
        if recent and len(recent) >= limits.MAX_FAILED_PAIRINGS_PER_MINUTE:
            retry = (recent[0] + WINDOW_MS - now_ms + 999) // 1000
            raise ProtocolError(
                ErrorCode.TOO_MANY_ATTEMPTS,
                f"too many wrong {self.what} from this address; try again in {retry} s",
                extra={"retryAfterSeconds": retry},
            )

    def failed(self, address: str, now_ms: int) -> None:
        if address not in self._failures and len(self._failures) >= MAX_ADDRESSES:
            limit = limits.MAX_FAILED_PAIRINGS_PER_MINUTE
            victim = next(
                (a for a, r in self._failures.items() if len(r) < limit),
                next(iter(self._failures)),
            )
            del self._failures[victim]
        self._failures.setdefault(address, deque()).append(now_ms)
