"""Prompt ids: `pr_` + a monotonic ULID, so they sort in creation order and reveal nothing else."""

from __future__ import annotations

import secrets
import threading

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last = 0


def new_prompt_id(now_ms: int) -> str:
    """Within one millisecond (or if the clock steps back) the next id is the last one plus 1."""
    global _last
    with _lock:
        value = (now_ms & ((1 << 48) - 1)) << _RANDOM_BITS | secrets.randbits(_RANDOM_BITS)
        if value <= _last:
            value = _last + 1
        _last = value
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "pr_" + "".join(reversed(chars))
