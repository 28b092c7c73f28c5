"""The statements both stores run alike, in the SQL SQLite and PostgreSQL share (`?`
placeholders): each query of prompts, events and idempotency keys written once. Each store adds
what differs — its schema and migrations, how a change is committed (SQLite: a transaction of
these statements; PostgreSQL: one statement built around them), how an event gets its number,
and how old rows are pruned."""

from __future__ import annotations

import json
from typing import Any

from app.protocol import PromptRecord

from .storage import Database, Remember, StoredEvent, StoredPrompt

# One pending prompt per session (per person) is the unique index's rule, in both stores: a
# create meets the prompt in its way here, without a read before every insert (#27), and a race
# between gateway processes ends the same way.
INSERT_PROMPT = (
    "INSERT INTO prompts (id, owner, person, session_key, agent_id, run_id, status, "
    "expires_ms, record, link_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (person, session_key, agent_id) WHERE status = 'pending' DO NOTHING"
)
# First change wins: only a pending prompt moves, and the statement says whose it was.
# A change of a pending prompt is written only over the version it was made from (`{version}`:
# the record's version in each dialect's JSON): an answer or an expiry made from a record read
# before an extension must not put its deadline back (#52; PostgreSQL's processes raced so).
RESOLVE_PROMPT = (
    "UPDATE prompts SET status = ?, resolved_ms = ?, record = ? "
    "WHERE id = ? AND status = 'pending' AND {version} = ? RETURNING person"
)


# An idempotency key's response is kept in these columns (remember_row's values), each store
# replacing an older one its own way (a retention pass may have raced it).
REMEMBER_COLUMNS = "idempotency (scope, body, created_ms, request_hash)"


# A pending prompt's deadline moved: its record and its deadline column, if still pending.
EXTEND_PROMPT = (
    "UPDATE prompts SET record = ?, expires_ms = ? WHERE id = ? AND status = 'pending' "
    "AND {version} = ? RETURNING person"
)


# A draft is told of while the prompt is pending (v1.4); its row does not change.
DRAFT_OF_PENDING = "SELECT person FROM prompts WHERE id = ? AND status = 'pending'"


# A resolved prompt's record changed (a late answer, its delivery: v1.4), if it is still the
# version the change was made from: the first of two such changes wins. `{version}` is the
# record's version in each dialect's JSON.
AMEND_PROMPT = (
    "UPDATE prompts SET record = ? WHERE id = ? AND status != 'pending' AND {version} = ? "
    "RETURNING person"
)


def amend_row(record: PromptRecord, record_json: str, was_version: int) -> tuple[Any, ...]:
    """AMEND_PROMPT's values."""
    return (record_json, record.id, was_version)


def extend_row(record: PromptRecord, record_json: str) -> tuple[Any, ...]:
    """EXTEND_PROMPT's values (the version it was made from: one before the record's)."""
    return (record_json, record.expires_ms, record.id, record.version - 1)


def resolve_row(record: PromptRecord, record_json: str, resolved_ms: int) -> tuple[Any, ...]:
    """RESOLVE_PROMPT's values (the version it was made from: one before the record's)."""
    return (record.status, resolved_ms, record_json, record.id, record.version - 1)


def remember_row(remember: Remember, now_ms: int) -> tuple[Any, ...]:
    """An idempotency row's values: scope, body, created_ms, request_hash."""
    return (remember.scope, json.dumps(remember.body), now_ms, remember.request_hash)


def prompt_row(
    record: PromptRecord,
    record_json: str,
    owner: str,
    person: str,
    expires_ms: int,
    link_hash: str | None,
) -> tuple[Any, ...]:
    """INSERT_PROMPT's values."""
    return (
        record.id,
        owner,
        person,
        record.session_key,
        record.agent_id or "",
        record.run_id,
        record.status,
        expires_ms,
        record_json,
        link_hash,
    )


class SharedQueries:
    """Mixed into each store, which gives it its `db`."""

    @property
    def db(self) -> Database:
        raise NotImplementedError

    async def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """The one row a statement gives, or None."""
        row: tuple[Any, ...] | None = (await self.db.execute(sql, params)).fetchone()
        return row

    # ---- prompts ---------------------------------------------------------------------------

    async def prompt_of_link(self, link_hash: str) -> str | None:
        row = await self._one("SELECT id FROM prompts WHERE link_hash = ?", (link_hash,))
        return row[0] if row else None

    async def get(self, prompt_id: str) -> StoredPrompt | None:
        row = await self._one(
            "SELECT record, owner, person FROM prompts WHERE id = ?", (prompt_id,)
        )
        if row is None:
            return None
        return StoredPrompt(PromptRecord.model_validate_json(row[0]), row[1], row[2])

    async def pending_in_session(
        self, person: str, session_key: str, agent_id: str | None
    ) -> str | None:
        row = await self._one(
            "SELECT id FROM prompts WHERE person = ? AND session_key = ? AND agent_id = ? "
            "AND status = 'pending'",
            (person, session_key, agent_id or ""),
        )
        return row[0] if row else None

    async def late_answered(
        self, person: str, session_key: str | None, resolved_after_ms: int
    ) -> list[str]:
        sql = (
            "SELECT record FROM prompts WHERE status != 'pending' AND resolved_ms > ? "
            "AND person = ?"
        )
        params: tuple[Any, ...] = (resolved_after_ms, person)
        if session_key is not None:
            sql, params = sql + " AND session_key = ?", (*params, session_key)
        rows = await self.db.execute(sql + " ORDER BY resolved_ms, n", params)
        # Only records with a late answer are parsed by the caller (which checks each): the
        # stored JSON (model_dump_json, compact) says `"lateAnswer":{` for those alone.
        return [r[0] for r in rows if '"lateAnswer":{' in r[0]]

    async def pending_counts(self, owner: str, person: str) -> tuple[int, int]:
        """How many prompts are pending of this agent token, and of this person (the quotas
        keep both small, so counting the pending rows is cheap)."""
        row = (
            await self.db.execute(
                "SELECT COALESCE(SUM(CASE WHEN owner = ? THEN 1 ELSE 0 END), 0), COUNT(*) "
                "FROM prompts WHERE status = 'pending' AND person = ?",
                (owner, person),
            )
        ).fetchone()
        assert row is not None  # an aggregate always has its row
        return int(row[0]), int(row[1])

    async def pending_of_person(self, person: str) -> list[str]:
        rows = await self.db.execute(
            "SELECT id FROM prompts WHERE person = ? AND status = 'pending' ORDER BY n", (person,)
        )
        return [r[0] for r in rows]

    async def pending_of_run(self, owner: str, run_id: str) -> list[str]:
        rows = await self.db.execute(
            "SELECT id FROM prompts WHERE owner = ? AND run_id = ? AND status = 'pending' "
            "ORDER BY n",
            (owner, run_id),
        )
        return [r[0] for r in rows]

    async def pending_deadlines(self) -> list[tuple[int, str]]:
        rows = await self.db.execute(
            "SELECT expires_ms, id FROM prompts WHERE status = 'pending' ORDER BY expires_ms"
        )
        return [(r[0], r[1]) for r in rows]

    async def due(self, now_ms: int) -> list[str]:
        """Pending prompts past their deadline, the earliest first. In the deadline index's
        order: ordered by creation, SQLite scanned every prompt kept (2.5 ms with 20,000, at
        each deadline)."""
        rows = await self.db.execute(
            "SELECT id FROM prompts WHERE status = 'pending' AND expires_ms <= ? "
            "ORDER BY expires_ms, n",
            (now_ms,),
        )
        return [r[0] for r in rows]

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
        where: list[str] = ["person = ?"]
        params: list[str | int] = [person]
        if pending_only:
            where.append("status = 'pending'")
        if session_key is not None:
            where.append("session_key = ?")
            params.append(session_key)
        if before is not None:
            row = await self._one(
                "SELECT n FROM prompts WHERE id = ? AND person = ?", (before, person)
            )
            if row is None:
                return None
            where.append("n < ?")
            params.append(row[0])
        sql = "SELECT record FROM prompts WHERE " + " AND ".join(where) + " ORDER BY n DESC LIMIT ?"
        params.append(limit)
        return [r[0] for r in await self.db.execute(sql, params)]

    # ---- events ----------------------------------------------------------------------------

    async def events_after(self, seq: int, limit: int, person: str) -> list[StoredEvent]:
        rows = await self.db.execute(
            "SELECT seq, type, record, person, prompt_id FROM events WHERE person = ? "
            "AND seq > ? ORDER BY seq LIMIT ?",
            (person, seq, limit),
        )
        return [StoredEvent(*r) for r in rows]

    async def events_since(self, seq: int, limit: int) -> list[StoredEvent]:
        rows = await self.db.execute(
            "SELECT seq, type, record, person, prompt_id FROM events WHERE seq > ? "
            "ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [StoredEvent(*r) for r in rows]

    # ---- idempotency -----------------------------------------------------------------------

    async def remembered(self, scope: str) -> tuple[dict[str, Any], str] | None:
        """The response kept for a key, and the hash of the request that made it ('' for keys
        kept before requests were hashed)."""
        row = await self._one(
            "SELECT body, request_hash FROM idempotency WHERE scope = ?", (scope,)
        )
        return (json.loads(row[0]), row[1]) if row else None
