"""Refusals more than one part of the gateway's rules gives."""

from __future__ import annotations

from app.protocol import ErrorCode, PromptRecord, ProtocolError


def already_resolved(record: PromptRecord) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ALREADY_RESOLVED,
        f"the prompt is no longer pending: it is {record.status}",
        extra={"prompt": record.to_wire()},
    )
