"""What the gateway keeps, behind one interface with two implementations (docs/PROTOCOL.md v1.3):
one SQLite file (sqlite.py, the embedded default, for one process) or PostgreSQL shared by any
number of gateway processes (postgres.py). Which one a process uses is chosen where it is
assembled (`open_store` in api.py), not here: the interface knows neither.

The gateway's core calls a `Store` synchronously on its event loop, one call at a time, so a
check and the write that depends on it never interleave with another request of this process;
across processes the database decides (a conditional UPDATE: first answer wins). The device
registry and people run their few statements through the store's `Database`, written once in
the SQL both dialects share (`?` placeholders).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from app.protocol import ErrorCode, PromptRecord, ProtocolError

PRUNE_BATCH = 2000
CREATED, RESOLVED = "prompt.created", "prompt.resolved"


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


class Rows(Protocol):
    """What a statement gives back, in both drivers."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    """Statements and transactions in the SQL both dialects share (`?` placeholders)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...

    def transaction(self) -> AbstractContextManager[None]:
        """All or nothing; a storage failure becomes `StoreUnavailable`."""
        ...

    def transaction_if_free(self) -> AbstractContextManager[None]:
        """As `transaction`, for a write that can wait for a later chance: a lock held by
        someone else fails it at once (`StoreUnavailable`) instead of holding the loop."""
        ...

    def announce_registry_change(self) -> None:
        """Within a transaction that changed devices, people or agent tokens: other gateway
        processes reload theirs once it commits (nothing to do for a file one process owns)."""
        ...


class Store(Protocol):
    """Prompts as records (JSON, with indexed columns), the event log, idempotency keys."""

    @property
    def db(self) -> Database: ...

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]: ...

    # prompts
    def prompt_of_link(self, link_hash: str) -> str | None: ...

    def insert(
        self,
        record: PromptRecord,
        record_json: str,  # the record as stored and served, encoded once by the caller
        *,
        owner: str,
        person: str,
        expires_ms: int,
        link_hash: str | None = None,
    ) -> None: ...

    def resolve(self, record: PromptRecord, record_json: str, resolved_ms: int) -> str | None:
        """Move a pending prompt to `record`'s terminal status: the person it belongs to, or
        None if it was not pending (the first change wins, whatever runs alongside)."""
        ...

    def get(self, prompt_id: str) -> StoredPrompt | None: ...

    def pending_in_session(
        self, person: str, session_key: str, agent_id: str | None
    ) -> str | None: ...

    def pending_of_person(self, person: str) -> list[str]: ...

    def pending_of_run(self, owner: str, run_id: str) -> list[str]: ...

    def pending_deadlines(self) -> list[tuple[int, str]]: ...

    def due(self, now_ms: int) -> list[str]: ...

    def list_json(
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
    def newest_seq(self) -> int:
        """The newest event committed (by any process)."""
        ...

    def append_event(
        self, type_: str, record: PromptRecord, record_json: str, *, person: str, now_ms: int
    ) -> StoredEvent:
        """The event as stored: hand it to the feed once its transaction has committed."""
        ...

    def events_after(self, seq: int, limit: int, person: str) -> list[StoredEvent]:
        """`person`'s events after `seq`, oldest first."""
        ...

    def events_since(self, seq: int, limit: int) -> list[StoredEvent]:
        """Everyone's events after `seq`, oldest first: what other processes committed."""
        ...

    @property
    def pruned_through(self) -> int:
        """Events up to this seq may have been deleted: an older cursor has missed some."""
        ...

    # idempotency
    def remembered(self, scope: str) -> tuple[dict, str] | None: ...

    def remember(self, scope: str, body: dict, request_hash: str, now_ms: int) -> None: ...

    # retention
    def prune_batch(
        self, *, prompts_before_ms: int, events_before_ms: int, batch: int = PRUNE_BATCH
    ) -> int: ...

    def reclaim_some(self) -> bool: ...

    # other processes
    async def follow(
        self, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        """Until cancelled: call `on_events(seq)` when another process committed the events
        up to `seq`, and `on_registry` when it changed devices, people or agent tokens."""
        ...
