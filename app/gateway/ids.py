"""Prompt ids: `pr_` + a ULID, so they sort by creation time and reveal nothing else."""

from __future__ import annotations

import secrets

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_prompt_id(now_ms: int) -> str:
    value = (now_ms & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "pr_" + "".join(reversed(chars))
