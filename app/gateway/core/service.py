"""The gateway's rules: create, wait, answer, dismiss, cancel, expire. HTTP-free.

Every rule of the contract comes from app.protocol; this module only decides what happens to
the store, the event log and the waiters, and raises ProtocolError for the HTTP layer to render.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Callable
from typing import Any

from app.protocol import (
    CreatePromptRequest,
    ErrorCode,
    PendingResult,
    PromptRecord,
    ProtocolError,
    ResolvedBy,
    ToolResult,
    canonicalize_answers,
    format_time,
    limits,
    parse_reply,
    tool_result,
)
from app.protocol.wire import result_body

from ..store.storage import CREATED, RESOLVED, UPDATED, Remember, Store, StoredEvent
from .clock import Clock, to_datetime
from .deadlines import DeadlineTimer
from .devices import secret_hash  # what the store keeps of an answer link, as of a code
from .drafts import Drafts
from .eager import spawn
from .feed import EventFeed, Page
from .idempotency import IdempotencyKey, conflict, device_key
from .ids import new_prompt_id
from .late_answers import LateAnswers
from .links import AnswerLinks
from .refusals import already_resolved
from .waiters import ResultWait, Waiters

LINK_TOKEN_BYTES = 24  # 192 random bits: an answer link is a capability (docs/PROTOCOL.md v1.2)
CATCH_UP_BATCH = 500  # events read at a time from what other gateway processes committed


def new_link_token() -> str:
    return secrets.token_urlsafe(LINK_TOKEN_BYTES)


def fingerprint(token: str) -> str:
    """Who owns a prompt, without keeping the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def _not_found(prompt_id: str) -> ProtocolError:
    return ProtocolError(ErrorCode.NOT_FOUND, f"no prompt with id {prompt_id!r}")


_EXPIRY = ResolvedBy(kind="system", reason="expired")


EXPIRY_BATCH = 50  # prompts expired between two chances for other requests


class Gateway:
    """The state machine of prompts: pending → exactly one terminal status, once."""

    def __init__(
        self,
        store: Store,
        clock: Clock | None = None,
        engaged_grace_seconds: int = limits.ENGAGED_GRACE_SECONDS,
    ) -> None:
        self.store = store
        self.clock = clock or Clock()
        self.engaged_grace_seconds = engaged_grace_seconds  # 0: answering moves no deadline
        self.waiters = Waiters()  # agents' result waits
        self.feed = EventFeed(store, self.server_time)  # devices' long-polls
        self.deadlines = DeadlineTimer(self.clock, self.expire_due)
        self._catching_up = asyncio.Lock()
        # Told of each new prompt, its person and its answer link's token (which only the
        # notification carries: the gateway keeps its hash).
        self.on_created: Callable[[PromptRecord, str, str], None] | None = None
        self.on_engaged: Callable[[str], None] | None = None  # the person is answering it
        self.late = LateAnswers(self)  # answers after the end (v1.4, v1.5)
        self.drafts = Drafts(self)  # what the person has chosen so far, on each device (v1.4)
        self.links = AnswerLinks(self)  # answering from a notification's link (v1.2)

    # ---- life --------------------------------------------------------------------------

    async def start(self) -> int:
        """Expire what passed its deadline while we were down, then arm the timer."""
        await self.feed.start()
        expired = await self.expire_due(self.clock.now_ms())
        self.deadlines.start(asyncio.get_running_loop(), await self.store.pending_deadlines())
        return expired

    def stop(self) -> None:
        self.deadlines.stop()

    def server_time(self) -> str:
        return format_time(to_datetime(self.clock.now_ms()))

    # ---- agent side --------------------------------------------------------------------

    async def create(
        self, owner: str, person: str, request: CreatePromptRequest
    ) -> tuple[PromptRecord, bool]:
        """A new pending prompt of `person` (True), or the one this agent already made with this
        requestId. One pending prompt per session is per person."""
        key = None
        if request.request_id:
            scope = f"create:{owner}:{request.request_id}"
            key = IdempotencyKey.of(scope, "create", request.to_wire())
        seen = await self._replayed(key, "requestId")
        if seen is not None and (stored := await self.store.get(seen["promptId"])) is not None:
            return await self._settled(stored.record), False
        try:
            return await self._insert(owner, person, request, key), True
        except ProtocolError as exc:
            in_the_way = exc.extra.get("promptId") if exc.code == ErrorCode.PENDING_EXISTS else None
            if (
                in_the_way is None
                or (await self._settled(await self._stored(in_the_way))).is_pending
            ):
                raise
        return await self._insert(owner, person, request, key), True  # that one was overdue

    async def _insert(
        self, owner: str, person: str, request: CreatePromptRequest, key: IdempotencyKey | None
    ) -> PromptRecord:
        """The new pending prompt, committed and announced; `pending_exists` (nothing written)
        while the session has one."""
        await self._within_quota(owner, person)
        now = self.clock.now_ms()
        expires = now + request.timeout_seconds * 1000
        record = PromptRecord(
            id=new_prompt_id(now),
            session_key=request.session_key,
            agent_id=request.agent_id,
            run_id=request.run_id,
            questions=request.questions,
            status="pending",
            created_at=to_datetime(now),
            expires_at=to_datetime(expires),
            version=1,
            kind=request.kind,
            stop=request.stop,
        )
        link = new_link_token()
        record_json = record.model_dump_json(by_alias=True)  # once: the row and its event
        event = await self.store.create(
            record,
            record_json,
            owner=owner,
            person=person,
            expires_ms=expires,
            link_hash=secret_hash(link),
            remember=Remember(key.scope, {"promptId": record.id}, key.asked) if key else None,
            now_ms=now,
        )
        self.deadlines.add(expires, record.id)
        self._publish(event)
        if self.on_created is not None:
            self.on_created(record, person, link)  # must not block: the announcer only queues it
        return record

    async def _within_quota(self, owner: str, person: str) -> None:
        """429 `too_many_pending` when this agent token, or this person, already has as many
        pending prompts as anyone answers (#52); says which."""
        of_owner, of_person = await self.store.pending_counts(owner, person)
        for held, most, whose, who in (
            (of_owner, limits.MAX_PENDING_PER_TOKEN, "token", "this agent token has {n} "
             "prompts pending, its limit"),
            (of_person, limits.MAX_PENDING_PER_PERSON, "person", "this person has {n} "
             "prompts pending, the limit"),
        ):  # fmt: skip
            if held >= most:
                raise ProtocolError(
                    ErrorCode.TOO_MANY_PENDING,
                    f"{who.format(n=held)} ({most}): wait for answers, or cancel some",
                    extra={"limit": most, "of": whose},
                )

    async def owned(self, owner: str, prompt_id: str) -> PromptRecord:
        found = await self.store.get(prompt_id)
        if found is None or found.owner != owner:
            raise _not_found(prompt_id)  # another agent's prompt is none of this agent's business
        return await self._settled(found.record)

    async def result_wait(self, owner: str, prompt_id: str, wait: float) -> Page | ResultWait:
        """The tool result's page now (terminal, or no `wait`), else a wait parked until the
        prompt is resolved or `wait` seconds pass (then `{"status": "pending"}`)."""
        record = await self.owned(owner, prompt_id)
        if not record.is_pending or wait <= 0 or self.waiters.closing:
            return Page(result_body(self._result_of(record)))
        del record  # a parked wait holds no record: thousands of them wait at once (#8)

        async def answer(resolved: PromptRecord | None) -> Page:
            if resolved is None:  # its deadline, the gateway's stop, another process's change
                resolved = await self.owned(owner, prompt_id)
            return Page(result_body(self._result_of(resolved)))

        return ResultWait(self.waiters, prompt_id, wait, answer)

    async def wait_result(
        self, owner: str, prompt_id: str, wait: float
    ) -> ToolResult | PendingResult:
        """The tool result once terminal; how long it has left if still pending when `wait`
        seconds pass."""
        record = await self.owned(owner, prompt_id)
        if record.is_pending and wait > 0:
            del record  # a parked wait holds no record: thousands of them wait at once (#8)
            await self.waiters.result_of(prompt_id, wait)
            record = await self.owned(owner, prompt_id)
        return self._result_of(record)

    def _result_of(self, record: PromptRecord) -> ToolResult | PendingResult:
        return tool_result(record) or PendingResult.of(record, self.clock.now_ms())

    async def cancel(self, owner: str, prompt_id: str, reason: str | None) -> PromptRecord:
        record = await self.owned(owner, prompt_id)
        if not record.is_pending:
            raise already_resolved(record)
        return await self._resolve(record, "cancelled", ResolvedBy(kind="agent", reason=reason))

    async def cancel_run(self, owner: str, run_id: str, reason: str | None) -> list[str]:
        by = ResolvedBy(kind="agent", reason=reason)
        return await self._cancel_each(await self.store.pending_of_run(owner, run_id), by)

    async def cancel_person(self, person: str, reason: str) -> list[str]:
        """Cancel every pending prompt of a person being removed: their agents stop waiting."""
        by = ResolvedBy(kind="system", reason=reason)
        return await self._cancel_each(await self.store.pending_of_person(person), by)

    async def _cancel_each(self, prompt_ids: list[str], resolved_by: ResolvedBy) -> list[str]:
        """Cancel those still pending (one may expire on sight, or be answered meanwhile,
        instead); the ids cancelled."""
        cancelled = []
        for prompt_id in prompt_ids:
            record = await self._settled(await self._stored(prompt_id))
            if record.is_pending:
                try:
                    await self._resolve(record, "cancelled", resolved_by)
                except ProtocolError as exc:
                    if exc.code != ErrorCode.ALREADY_RESOLVED:
                        raise
                    continue
                cancelled.append(prompt_id)
        return cancelled

    # ---- device side -------------------------------------------------------------------

    async def get(self, prompt_id: str, person: str | None) -> PromptRecord:
        """A prompt as it stands now, when it is `person`'s: another person's prompt is 404,
        as if it did not exist. `person` None: the caller holds the prompt's answer link,
        which is the credential."""
        found = await self.store.get(prompt_id)
        if found is None or (person is not None and found.person != person):
            raise _not_found(prompt_id)
        return await self._settled(found.record)

    async def answer(
        self,
        prompt_id: str,
        person: str,
        answers: dict[str, Any],
        device_id: str | None,
        idempotency_key: str | None,
    ) -> dict[str, Any]:
        """First answer wins; a retried idempotency key gets the original 200 body."""
        request = {"answers": answers, "deviceId": device_id}
        return await self._decide(
            prompt_id,
            person,
            device_key(prompt_id, idempotency_key, "answer", request),
            ResolvedBy(kind="device", device_id=device_id),
            lambda record: canonicalize_answers(record.questions, answers),
        )

    async def reply(
        self,
        prompt_id: str,
        person: str,
        text: str,
        device_id: str | None,
        idempotency_key: str | None,
    ) -> dict[str, Any]:
        """A plain-text reply, read by the contract's rules, then answered like any answer."""
        request = {"text": text, "deviceId": device_id}
        return await self._decide(
            prompt_id,
            person,
            device_key(prompt_id, idempotency_key, "reply", request),
            ResolvedBy(kind="device", device_id=device_id),
            lambda record: parse_reply(record.questions, text),
        )

    async def engaged(
        self, prompt_id: str, person: str | None, device_id: str | None
    ) -> PromptRecord:
        """The person is choosing or typing (docs/PROTOCOL.md v1.4): with less than the grace
        left, the deadline moves to the grace from now, never more than the most past the one
        the prompt was created with. The record as it stands: unchanged with time enough left,
        or with extensions off."""
        record = await self.get(prompt_id, person)
        if not record.is_pending:
            raise already_resolved(record)
        if self.on_engaged is not None:
            self.on_engaged(prompt_id)  # e.g. no reminder of what the person is answering
        grace_ms = self.engaged_grace_seconds * 1000
        now = self.clock.now_ms()
        original = record.original_expires_at or record.expires_at
        latest = int(original.timestamp() * 1000) + limits.MAX_ENGAGED_EXTENSION_SECONDS * 1000
        wanted = min(now + grace_ms, latest)
        # At most once per ENGAGED_EVERY_SECONDS however often the person is heard of (a
        # draft every quarter second moved it, and woke its agent, each time): only when the
        # move is that long, or reaches the most there is.
        step_ms = limits.ENGAGED_EVERY_SECONDS * 1000
        if grace_ms <= 0 or wanted <= record.expires_ms:
            return record
        if wanted - record.expires_ms < min(step_ms, grace_ms) and wanted < latest:
            return record
        extended = record.model_copy(
            update={
                "expires_at": to_datetime(wanted),
                "original_expires_at": original,
                "version": record.version + 1,
            }
        )
        extended_json = extended.model_dump_json(by_alias=True)
        event = await self.store.extend(extended, extended_json, now_ms=now)
        if event is None:  # resolved, or moved, meanwhile, by another request or process
            fresh = await self._stored(prompt_id)
            if fresh.is_pending:
                return await self.engaged(prompt_id, person, device_id)  # from what it is now
            raise already_resolved(fresh)
        self.deadlines.add(wanted, prompt_id)
        self.waiters.prompt_changed(prompt_id)  # the agent hears of it now, not in a while
        self._publish(event)
        return extended

    async def dismiss(
        self, prompt_id: str, person: str, device_id: str | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        key = device_key(prompt_id, idempotency_key, "dismiss", {"deviceId": device_id})
        by = ResolvedBy(kind="device", device_id=device_id)
        return await self._decide(prompt_id, person, key, by)

    async def _decide(
        self,
        prompt_id: str,
        person: str | None,
        key: IdempotencyKey | None,
        resolved_by: ResolvedBy,
        answers_for: Callable[[PromptRecord], dict[str, list[str]]] | None = None,
    ) -> dict[str, Any]:
        """A person's decision: answered (with `answers_for` the record's questions) or
        dismissed, on a prompt of `person` (None: by its link). A retried key gets the original
        200 body; first answer wins."""
        record = await self.get(prompt_id, person)  # first: another person's key says nothing
        if (seen := await self._replayed(key, "idempotencyKey")) is not None:
            return seen
        if not record.is_pending:
            raise already_resolved(record)
        if answers_for is None:
            return (await self._resolve(record, "dismissed", resolved_by, key=key)).to_wire()
        answers = answers_for(record)
        resolved = await self._resolve(record, "answered", resolved_by, answers=answers, key=key)
        return resolved.to_wire()

    async def _replayed(self, key: IdempotencyKey | None, what: str) -> dict[str, Any] | None:
        """The response kept for `key`; 409 when the key came with a different request."""
        seen = await self.store.remembered(key.scope) if key else None
        if seen is None or key is None:
            return None
        body, seen_hash = seen
        if seen_hash and seen_hash != key.asked:  # '': kept before requests were hashed
            raise conflict(what)
        return body

    async def _stored(self, prompt_id: str) -> PromptRecord:
        """A record the store just named (pending in a session, of a run, or due)."""
        found = await self.store.get(prompt_id)
        assert found is not None, prompt_id
        return found.record

    # ---- deadlines ---------------------------------------------------------------------

    async def expire_due(self, now_ms: int) -> int:
        """Expire every pending prompt whose deadline has come; returns how many. Many at once
        (a restart after a long stop) go in batches, the loop let go between them, so that
        nobody else's request waits for all of them (#52)."""
        count = 0
        for n, prompt_id in enumerate(await self.store.due(now_ms), start=1):
            count += (await self._expire(await self._stored(prompt_id)))[1]
            if n % EXPIRY_BATCH == 0:
                await asyncio.sleep(0)
        return count

    async def _settled(self, record: PromptRecord) -> PromptRecord:
        """The record as it stands now: a pending prompt past its deadline expires on sight."""
        if record.overdue(self.clock.now_ms()):
            return (await self._expire(record))[0]
        return record

    async def _expire(self, record: PromptRecord) -> tuple[PromptRecord, bool]:
        """Expired now (True), or as another request or gateway process just resolved it:
        expiry happens once, by whichever gets there first."""
        try:
            return await self._resolve(record, "expired", _EXPIRY), True
        except ProtocolError as exc:
            if exc.code != ErrorCode.ALREADY_RESOLVED:
                raise
            return await self._stored(record.id), False

    async def _resolve(
        self,
        record: PromptRecord,
        status: str,
        resolved_by: ResolvedBy,
        answers: dict[str, list[str]] | None = None,
        key: IdempotencyKey | None = None,
    ) -> PromptRecord:
        """Move a pending record to its terminal status, durably, with its event and key."""
        now = self.clock.now_ms()
        resolved = record.model_copy(
            update={
                "status": status,
                "resolved_at": to_datetime(now),
                "resolved_by": resolved_by,
                "answers": answers,
                "version": record.version + 1,
            }
        )
        resolved_json = resolved.model_dump_json(by_alias=True)  # once: the row and its event
        remember = Remember(key.scope, resolved.to_wire(), key.asked) if key else None
        event = await self.store.resolve(resolved, resolved_json, remember=remember, now_ms=now)
        if event is None:  # another request, or another gateway process, got there first
            fresh = await self._stored(record.id)
            if fresh.is_pending and fresh.version != record.version:
                # Changed meanwhile (the deadline moved): decide again from what it is now;
                # an expiry whose deadline moved away is no expiry.
                if status == "expired" and not fresh.overdue(now):
                    raise already_resolved(fresh)
                return await self._resolve(fresh, status, resolved_by, answers, key)
            raise already_resolved(fresh)
        # The agent first: it waits for this one prompt, while devices may be thousands (#16).
        self.waiters.prompt_resolved(record.id, resolved)
        self._publish(event)
        return resolved

    # ---- events ------------------------------------------------------------------------

    def _publish(self, event: StoredEvent) -> None:
        """An event this process committed, to the devices parked here, in sequence order: when
        another request or gateway process committed the ones before it, those are heard
        first."""
        if event.seq == self.feed.head + 1:
            self.feed.committed(event)
        elif event.seq > self.feed.head:
            spawn(self.catch_up(), "hearing the events before it")

    def heard_of(self, seq: int) -> None:
        """Another gateway process committed events up to `seq` (this one's own are heard as
        they commit)."""
        if seq > self.feed.head:
            spawn(self.catch_up(), "hearing other gateway processes")

    async def catch_up(self) -> None:
        """Hear what other gateway processes committed (PostgreSQL): their events go to the
        devices parked here, their answers wake the agents waiting here, and the prompts they
        created get a deadline here too (whichever process comes first expires it). One at a
        time: what one reads, the next need not."""
        async with self._catching_up:
            await self._catch_up()

    async def _catch_up(self) -> None:
        while batch := await self.store.events_since(self.feed.head, CATCH_UP_BATCH):
            for event in batch:
                if event.seq <= self.feed.head:  # fed meanwhile, as this process committed it
                    continue
                if event.type == RESOLVED:
                    self.waiters.prompt_resolved(event.prompt_id)
                elif event.type in (CREATED, UPDATED):  # its deadline, here too
                    record = PromptRecord.model_validate_json(event.record_json)
                    if record.is_pending:
                        self.deadlines.add(record.expires_ms, event.prompt_id)
                    else:  # a late answer or its delivery
                        self.late.changed(event.person)
                self.feed.committed(event)
            if len(batch) < CATCH_UP_BATCH:
                break
