"""Late answers (docs/PROTOCOL.md v1.4, v1.5): an answer after the deadline, or after the
agent's run stopped, kept on the ended prompt and handed to the agent that asked (or its
project) exactly once — claimed under a lease, confirmed, never lost to a broken connection.

A part of the gateway's rules (`service.Gateway.late`): it reads and amends prompts through
the gateway it belongs to, and wakes the agents waiting for one of a person's late answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from app.protocol import (
    ErrorCode,
    LateAnswer,
    LateAnswerItem,
    LateClaim,
    PromptRecord,
    ProtocolError,
    ResolvedBy,
    canonicalize_answers,
    limits,
)

from ..store.storage import Remember, Store, StoredEvent
from .clock import Clock, to_datetime
from .idempotency import IdempotencyKey, device_key


class Prompts(Protocol):
    """What late answers need of the gateway's prompts."""

    clock: Clock
    store: Store

    async def get(self, prompt_id: str, person: str | None) -> PromptRecord: ...

    async def _replayed(self, key: IdempotencyKey | None, what: str) -> dict[str, Any] | None: ...

    async def _stored(self, prompt_id: str) -> PromptRecord: ...

    def _publish(self, event: StoredEvent) -> None: ...


def _claimed_elsewhere(record: PromptRecord) -> ProtocolError:
    return ProtocolError(
        ErrorCode.CLAIMED_ELSEWHERE,
        "another agent holds this late answer (this claim's lease lapsed, or it never had it)",
        extra={"prompt": record.to_wire()},
    )


def _not_late(record: PromptRecord) -> ProtocolError:
    """409: a prompt that takes no late answer (still pending, answered, dismissed, cancelled
    by hand, or already answered late)."""
    why = (
        "is still pending: answer it"
        if record.is_pending
        else "was already answered late"
        if record.late_answer is not None
        else f"is {record.status}: only an expired or run-stopped prompt takes a late answer"
    )
    return ProtocolError(
        ErrorCode.ALREADY_RESOLVED,
        f"the prompt {why}",
        extra={"prompt": record.to_wire()},
    )


class LateAnswers:
    """A person's late answers: taken, looked at, claimed, waited for, confirmed."""

    def __init__(self, prompts: Prompts) -> None:
        self.prompts = prompts
        self._waits: dict[str, list[asyncio.Future[None]]] = {}

    async def answer(
        self,
        prompt_id: str,
        person: str | None,
        answers: dict[str, Any],
        device_id: str | None,
        idempotency_key: str | None,
        by_link: bool = False,
    ) -> dict[str, Any]:
        """An answer after the deadline, or after the agent's run stopped, for a day: the
        prompt keeps its terminal status and gains `lateAnswer`; the first one wins, a retried
        key gets the original 200. The agent collects it (`claim`)."""
        request = {"answers": answers, "deviceId": device_id}
        key = device_key(prompt_id, idempotency_key, "late-answer", request)
        record = await self.prompts.get(prompt_id, person)
        if (seen := await self.prompts._replayed(key, "idempotencyKey")) is not None:
            return seen
        now = self.prompts.clock.now_ms()
        if not record.takes_late_answer:
            raise _not_late(record)
        if not record.late_answer_open(now):
            raise ProtocolError(
                ErrorCode.ALREADY_RESOLVED,
                f"this prompt ended more than {limits.LATE_ANSWER_SECONDS // 3600} hours ago: "
                "too late for an answer to reach its agent",
                extra={"prompt": record.to_wire()},
            )
        late = LateAnswer(
            answers=canonicalize_answers(record.questions, answers),
            answered_at=to_datetime(now),
            resolved_by=ResolvedBy(kind="link" if by_link else "device", device_id=device_id),
        )
        answered = await self._amend(record, {"late_answer": late}, key, now)
        return answered.to_wire()

    async def _records(
        self, person: str, session_key: str | None, agent_id: str | None
    ) -> list[PromptRecord]:
        """`person`'s late answers not yet delivered that go to this agent (or project),
        oldest first."""
        since = self.prompts.clock.now_ms() - 2 * limits.LATE_ANSWER_SECONDS * 1000
        found = []
        for record_json in await self.prompts.store.late_answered(person, session_key, since):
            record = PromptRecord.model_validate_json(record_json)
            late = record.late_answer
            undelivered = late is not None and late.delivered_at is None
            if undelivered and record.late_answer_goes_to(session_key, agent_id):
                found.append(record)
        return found

    async def look(
        self, person: str, session_key: str | None, agent_id: str | None = None
    ) -> list[LateAnswerItem]:
        """A look at the late answers waiting for this agent (or project): claims nothing,
        and leaves out those another agent holds now."""
        now = self.prompts.clock.now_ms()
        return [
            LateAnswerItem.of(record)
            for record in await self._records(person, session_key, agent_id)
            if record.late_answer is not None and record.late_answer.claimable_by("", now)
        ]

    async def claim(
        self,
        person: str,
        session_key: str,
        agent_id: str | None,
        claim_id: str,
        lease_seconds: int,
        wait: float = 0,
    ) -> list[LateAnswerItem]:
        """Take what is meant for this agent (or project) under `claim_id` for
        `lease_seconds`: each answer is held by one claim at a time (two agents claiming at
        once never both get it), comes back if its claim is never confirmed, and a retry of
        the same claim returns what it holds (v1.5). With none, waits up to `wait` s."""

        async def claim() -> list[LateAnswerItem]:
            now = self.prompts.clock.now_ms()
            until = to_datetime(now + lease_seconds * 1000)
            held = []
            for record in await self._records(person, session_key, agent_id):
                late = record.late_answer
                assert late is not None
                if not late.claimable_by(claim_id, now):
                    continue
                if late.claim is not None and late.claim.claim_id == claim_id:
                    held.append(LateAnswerItem.of(record))  # a retry: it is ours already
                    continue
                mine = late.model_copy(update={"claim": LateClaim(claim_id=claim_id, until=until)})
                try:
                    claimed = await self._amend(record, {"late_answer": mine}, None, now)
                except ProtocolError:
                    continue  # another agent's claim (or a confirmation) came first
                held.append(LateAnswerItem.of(claimed))
            return held

        return await self._waiting(person, claim, wait)

    async def wait(
        self, person: str, session_key: str | None, wait: float, agent_id: str | None = None
    ) -> list[LateAnswerItem]:
        """As `look`; with none yet, waits up to `wait` seconds for one."""
        return await self._waiting(person, lambda: self.look(person, session_key, agent_id), wait)

    async def _waiting(
        self,
        person: str,
        look: Callable[[], Awaitable[list[LateAnswerItem]]],
        wait: float,
    ) -> list[LateAnswerItem]:
        found = await look()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while not found and (left := deadline - loop.time()) > 0:
            changed = loop.create_future()
            self._waits.setdefault(person, []).append(changed)
            try:
                await asyncio.wait_for(changed, left)
            except TimeoutError:
                break
            finally:
                waits = self._waits.get(person, [])
                if changed in waits:
                    waits.remove(changed)
            found = await look()
        return found

    async def acknowledge(
        self, prompt_id: str, person: str, claim_id: str | None = None
    ) -> dict[str, Any]:
        """The agent has its late answer: `deliveredAt` is set. Confirming again is the same
        200; with `claim_id`, only the agent holding that claim may confirm (409 otherwise:
        its lease lapsed and another agent took the answer)."""
        record = await self.prompts.get(prompt_id, person)
        late = record.late_answer
        if late is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"prompt {prompt_id} has no late answer to acknowledge"
            )
        if late.delivered_at is not None:
            if late.confirmed_for(claim_id):
                return record.to_wire()
            raise _claimed_elsewhere(record)
        now = self.prompts.clock.now_ms()
        if not late.claimable_by(claim_id or "", now):  # no claim: only what nobody holds
            raise _claimed_elsewhere(record)
        update: dict[str, Any] = {"delivered_at": to_datetime(now)}
        if claim_id is not None:
            update["claim"] = LateClaim(claim_id=claim_id, until=to_datetime(now))
        delivered = late.model_copy(update=update)
        try:
            amended = await self._amend(record, {"late_answer": delivered}, None, now)
        except ProtocolError:
            fresh = await self.prompts.get(prompt_id, person)  # a racing claim or confirmation
            if fresh.late_answer is not None and fresh.late_answer.confirmed_for(claim_id):
                return fresh.to_wire()
            raise _claimed_elsewhere(fresh) from None
        return amended.to_wire()

    async def _amend(
        self,
        record: PromptRecord,
        update: dict[str, Any],
        key: IdempotencyKey | None,
        now: int,
    ) -> PromptRecord:
        """A resolved prompt's record changed, if nobody changed it first (409 if they did)."""
        amended = record.model_copy(update={**update, "version": record.version + 1})
        amended_json = amended.model_dump_json(by_alias=True)
        remember = Remember(key.scope, amended.to_wire(), key.asked) if key else None
        event = await self.prompts.store.amend(
            amended, amended_json, was_version=record.version, remember=remember, now_ms=now
        )
        if event is None:  # another late answer (or its delivery) came first
            raise _not_late(await self.prompts._stored(record.id))
        self.prompts._publish(event)
        self.changed(event.person)
        return amended

    def changed(self, person: str) -> None:
        """A record of `person` changed after it ended: their waiting agents look again."""
        for changed in self._waits.pop(person, []):
            if not changed.done():
                changed.set_result(None)
