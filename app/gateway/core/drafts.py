"""Drafts (docs/PROTOCOL.md v1.4): what the person has chosen and typed so far on one device,
told to their other devices and never to the agent; a person's pace, not a flood (#52).

A part of the gateway's rules (`service.Gateway.drafts`): it reads prompts and moves their
deadline (a draft is the person answering) through the gateway it belongs to.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from app.protocol import Draft, ErrorCode, PromptRecord, ProtocolError, canonicalize_answers, limits
from app.protocol.wire import record_with_draft

from ..store.storage import Store, StoredEvent
from .clock import Clock, to_datetime
from .refusals import already_resolved


class Prompts(Protocol):
    """What drafts need of the gateway's prompts."""

    clock: Clock
    store: Store

    async def get(self, prompt_id: str, person: str | None) -> PromptRecord: ...

    async def engaged(
        self, prompt_id: str, person: str | None, device_id: str | None
    ) -> PromptRecord: ...

    async def _stored(self, prompt_id: str) -> PromptRecord: ...

    def _publish(self, event: StoredEvent) -> None: ...


class Drafts:
    """Each device's drafts: checked, rate-limited, told to the person's other devices."""

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts
        self._draft_buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._device_ids: dict[str, str] = {}  # the id a device drafts under → its paired id

    async def put(
        self,
        prompt_id: str,
        person: str,
        answers: dict[str, Any],
        device_id: str | None,
        device_name: str | None,
        paired_id: str | None = None,
    ) -> PromptRecord:
        """What the person has chosen and typed so far on one device (v1.4), told to their
        other devices in a `prompt.draft` event; the latest wins there. Checked like an answer
        except that it may be partial; never stored with the prompt, so no agent sees it. It
        is also the person answering: with little time left, the deadline moves. `paired_id`:
        the authenticated device, which alone may draft under the ids it uses (#52)."""
        self._own_device_id(device_id, paired_id)
        self._draft_allowed(person, paired_id or device_id)
        record = await self.prompts.get(prompt_id, person)
        if not record.is_pending:
            raise already_resolved(record)
        canonical = canonicalize_answers(record.questions, answers, partial=True)
        record = await self.prompts.engaged(prompt_id, person, device_id)
        now = self.prompts.clock.now_ms()
        draft = Draft(
            answers=canonical,
            device_id=device_id,
            device_name=device_name,
            drafted_at=to_datetime(now),
        )
        event_json = record_with_draft(record.model_dump_json(by_alias=True), draft)
        event = await self.prompts.store.draft(record, event_json, now_ms=now)
        if event is None:  # resolved meanwhile, by another request or process
            raise already_resolved(await self.prompts._stored(prompt_id))
        self.prompts._publish(event)
        return record

    def _own_device_id(self, device_id: str | None, paired_id: str | None) -> None:
        """A device names itself in its drafts (its other windows know their own drafts by
        it); a paired device may not use an id another paired device uses, or that device
        would take the draft for its own and ignore it (403)."""
        if device_id is None or paired_id is None:
            return
        owner = self._device_ids.setdefault(device_id, paired_id)
        if owner != paired_id:
            raise ProtocolError(
                ErrorCode.FORBIDDEN, f"deviceId {device_id!r} is another paired device's"
            )
        if len(self._device_ids) > 100_000:  # bounded: forget, then learn again
            self._device_ids.clear()

    def _draft_allowed(self, person: str, device_id: str | None) -> None:
        """A person types; a flood is not a person: each device gets DRAFT_BURST drafts,
        refilled at DRAFTS_PER_SECOND, then 429 `too_many_drafts` (#52). Counted in real
        time, not on the protocol's clock: a clock set by hand (tests, a skewed host) must
        not stop the refill."""
        now = time.monotonic()
        key = (person, device_id or "")
        tokens, then = self._draft_buckets.get(key, (float(limits.DRAFT_BURST), now))
        tokens = min(float(limits.DRAFT_BURST), tokens + (now - then) * limits.DRAFTS_PER_SECOND)
        if tokens < 1:
            raise ProtocolError(
                ErrorCode.TOO_MANY_DRAFTS,
                f"more than {limits.DRAFTS_PER_SECOND} drafts a second from this device: "
                "send the latest after a pause",
                extra={"retryAfter": 1},
            )
        if len(self._draft_buckets) > 10_000:  # forget devices heard of long ago
            self._draft_buckets.clear()
        self._draft_buckets[key] = (tokens - 1, now)
