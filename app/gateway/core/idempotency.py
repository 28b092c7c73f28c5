"""Idempotency keys: where a key's response is kept and what request it came with, so a retry
gets the original response and the same key with another request is refused."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from app.protocol import ErrorCode, ProtocolError


@dataclass(frozen=True)
class IdempotencyKey:
    """Where a key's response is kept, and a hash of the request it came with, so the same key
    sent with a different request is told apart from a retry."""

    scope: str
    asked: str

    @classmethod
    def of(cls, scope: str, action: str, request: dict[str, Any]) -> IdempotencyKey:
        text = json.dumps([action, request], sort_keys=True, ensure_ascii=False)
        return cls(scope, hashlib.sha256(text.encode()).hexdigest())


def device_key(
    prompt_id: str, key: str | None, action: str, request: dict[str, Any]
) -> IdempotencyKey | None:
    return IdempotencyKey.of(f"device:{prompt_id}:{key}", action, request) if key else None


def conflict(what: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.IDEMPOTENCY_CONFLICT,
        f"this {what} was already used for a different request; use a new one for a new "
        "request (an identical retry gets the original response)",
    )
