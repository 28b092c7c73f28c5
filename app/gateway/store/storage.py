"""What the gateway keeps, behind one interface with two implementations (docs/PROTOCOL.md v1.3):
one SQLite file (sqlite.py, the embedded default, for one process) or PostgreSQL shared by any
number of gateway processes (postgres.py). Which one a process uses is chosen where it is
assembled (`open_store` in api.py), not here: the interface knows neither.

Every call is a coroutine (#42). SQLite's never wait (its file is local, its calls as quick as
before), so the core runs them to the end without yielding the loop, and a check and the write
that depends on it never interleave with another request of this process. PostgreSQL's wait for
the network without holding the loop: other requests run meanwhile, as other processes' do,
and the database decides (a conditional UPDATE: first answer wins). A change of a prompt is one
call (`create`, `resolve`): its row, its idempotency key and its event, all or nothing, in one
round trip where the database allows. The device registry and people run their few statements
through the store's `Database`, written once in the SQL both dialects share (`?` placeholders).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from app.protocol import ErrorCode, PromptRecord, ProtocolError

PRUNE_BATCH = 2000
CREATED, RESOLVED, UPDATED = "prompt.created", "prompt.resolved", "prompt.updated"
DRAFTED = "prompt.draft"


class StoreUnavailable(ProtocolError):
    """A write the store could not take (disk full, locked by another process, the database
    gone, an I/O error): rolled back, so nothing changed; 503, and the caller may retry."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(
            ErrorCode.UNAVAILABLE,
            f"the gateway could not save this change ({cause}); nothing changed: retry later",
        )


def pending_exists(prompt_id: str | None) -> ProtocolError:
    """One pending prompt per session (per person): the one already there, when known."""
    return ProtocolError(
        ErrorCode.PENDING_EXISTS,
        "this session already has a pending prompt; wait for its result or cancel it first",
        extra={"promptId": prompt_id} if prompt_id else {},
    )


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    type: str
    record_json: str
    person: str  # whose devices hear of it
    prompt_id: str


@dataclass(frozen=True, slots=True)
class StoredPrompt:
    """A record with what the wire does not show: the agent token (fingerprint) that made it,
    and the person it belongs to."""

    record: PromptRecord
    owner: str
    person: str


@dataclass(frozen=True, slots=True)
class Remember:
    """An idempotency key's response, kept with the change that made it."""

    scope: str
    body: dict[str, Any]
    request_hash: str


class Rows(Protocol):
    """What a statement gives back, in both drivers."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Statements(Protocol):
    """Statements in the SQL both dialects share (`?` placeholders); a statement's rows are all
    fetched by the time it returns."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...

    async def announce_registry_change(self) -> None:
        """Within a transaction that changed devices, people or agent tokens: other gateway
        processes reload theirs once it commits (nothing to do for a file one process owns)."""
        ...


class Database(Statements, Protocol):
    """Statements, and transactions of them."""

    def transaction(self) -> AbstractAsyncContextManager[Statements]:
        """All or nothing, on the `Statements` it gives (one connection); a storage failure
        becomes `StoreUnavailable`."""
        ...

    def transaction_if_free(self) -> AbstractAsyncContextManager[Statements]:
        """As `transaction`, for a write that can wait for a later chance: a lock held by
        someone else fails it at once (`StoreUnavailable`) instead of waiting for it."""
        ...


class Store(Protocol):
    """Prompts as records (JSON, with indexed columns), the event log, idempotency keys."""

    @property
    def db(self) -> Database: ...

    async def close(self) -> None: ...

    # changes: each all or nothing
    async def create(
        self,
        record: PromptRecord,
        record_json: str,  # the record as stored and served, encoded once by the caller
        *,
        owner: str,
        person: str,
        expires_ms: int,
        link_hash: str | None,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent:
        """The new pending prompt, its key and its `prompt.created` event, committed: the event
        to hand to the feed. `pending_exists` (nothing written) while its session has one."""
        ...

    async def resolve(
        self, record: PromptRecord, record_json: str, *, remember: Remember | None, now_ms: int
    ) -> StoredEvent | None:
        """Move a pending prompt to `record`'s terminal status, with its key and its
        `prompt.resolved` event, committed: the event; None if it was not pending (the first
        change wins, whatever runs alongside)."""
        ...

    async def extend(
        self, record: PromptRecord, record_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        """A pending prompt's new deadline (`record.expires_at`, the person is answering), with
        its `prompt.updated` event, committed: the event; None if it was not pending."""
        ...

    async def amend(
        self,
        record: PromptRecord,
        record_json: str,
        *,
        was_version: int,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent | None:
        """A resolved prompt's new record (a late answer, or its delivery), with its key and
        its `prompt.updated` event, committed: the event; None if the stored record is no
        longer `was_version` (another change came first)."""
        ...

    async def draft(
        self, record: PromptRecord, event_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        """A `prompt.draft` event (`event_json`: the record with the draft) for a prompt still
        pending, its row unchanged, committed: the event; None if it is no longer pending."""
        ...

    async def late_answered(
        self, person: str, session_key: str | None, resolved_after_ms: int
    ) -> list[str]:
        """`person`'s prompts resolved after `resolved_after_ms` (in `session_key`), oldest
        first, as stored JSON: where undelivered late answers are looked for."""
        ...

    # prompts
    async def prompt_of_link(self, link_hash: str) -> str | None: ...

    async def get(self, prompt_id: str) -> StoredPrompt | None: ...

    async def pending_in_session(
        self, person: str, session_key: str, agent_id: str | None
    ) -> str | None: ...

    async def pending_counts(self, owner: str, person: str) -> tuple[int, int]: ...

    async def pending_of_person(self, person: str) -> list[str]: ...

    async def pending_of_run(self, owner: str, run_id: str) -> list[str]: ...

    async def pending_deadlines(self) -> list[tuple[int, str]]: ...

    async def due(self, now_ms: int) -> list[str]: ...

    async def list_json(
        self,
        *,
        person: str,
        pending_only: bool,
        session_key: str | None,
        limit: int,
        before: str | None,
    ) -> list[str] | None:
        """Records newest first, as stored JSON; None when `before` names no prompt."""
        ...

    # events
    async def newest_seq(self) -> int:
        """The newest event committed (by any process)."""
        ...

    async def events_after(self, seq: int, limit: int, person: str) -> list[StoredEvent]:
        """`person`'s events after `seq`, oldest first."""
        ...

    async def events_since(self, seq: int, limit: int) -> list[StoredEvent]:
        """Everyone's events after `seq`, oldest first: what other processes committed."""
        ...

    @property
    def pruned_through(self) -> int:
        """Events up to this seq may have been deleted: an older cursor has missed some."""
        ...

    # idempotency
    async def remembered(self, scope: str) -> tuple[dict[str, Any], str] | None: ...

    # retention
    async def prune_batch(
        self, *, prompts_before_ms: int, events_before_ms: int, batch: int = PRUNE_BATCH
    ) -> int: ...

    async def reclaim_some(self) -> bool: ...

    # other processes
    async def follow(
        self, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        """Until cancelled: call `on_events(seq)` when another process committed the events
        up to `seq`, and `on_registry` when it changed devices, people or agent tokens."""
        ...
