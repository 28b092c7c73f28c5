"""The durable store: one SQLite file in WAL mode holding prompts, events and idempotency keys.

Calls are synchronous and short; the gateway runs them on its event loop, one at a time, so a
check and the write that depends on it never interleave with another request.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.protocol import PromptRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    session_key TEXT NOT NULL,
    agent_id TEXT NOT NULL DEFAULT '',
    run_id TEXT,
    status TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    resolved_ms INTEGER,
    record TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS prompts_one_pending_per_session
    ON prompts(session_key, agent_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS prompts_pending_expiry ON prompts(expires_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS prompts_run ON prompts(owner, run_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS prompts_session ON prompts(session_key, n);
CREATE INDEX IF NOT EXISTS prompts_resolved ON prompts(resolved_ms);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_created ON events(created_ms);
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency(created_ms);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _private_file(path: Path) -> None:
    """Every question and answer is in this file: 0600 in a 0700 folder it makes. SQLite gives
    the -wal and -shm files the database file's mode."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    os.chmod(path, 0o600)


@dataclass(frozen=True)
class StoredEvent:
    seq: int
    type: str
    record_json: str


class PromptStore:
    """Prompts as records (JSON, with indexed columns), the event log, idempotency keys."""

    def __init__(self, path: Path | str, *, synchronous: str = "NORMAL") -> None:
        self.path = Path(path)
        _private_file(self.path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a killed process; FULL also survives a power cut.
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)
        self._last_seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        seq_row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='events'").fetchone()
        self._last_seq = max(self._last_seq, seq_row[0] if seq_row else 0)

    @property
    def connection(self) -> sqlite3.Connection:
        """The one connection, shared by the device registry (same file, same loop)."""
        return self._db

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ---- prompts ---------------------------------------------------------------------------

    def insert(self, record: PromptRecord, owner: str, expires_ms: int) -> None:
        self._db.execute(
            "INSERT INTO prompts (id, owner, session_key, agent_id, run_id, status, expires_ms, "
            "record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.id,
                owner,
                record.session_key,
                record.agent_id or "",
                record.run_id,
                record.status,
                expires_ms,
                record.model_dump_json(by_alias=True),
            ),
        )

    def update(self, record: PromptRecord, resolved_ms: int | None) -> None:
        self._db.execute(
            "UPDATE prompts SET status = ?, resolved_ms = ?, record = ? WHERE id = ?",
            (record.status, resolved_ms, record.model_dump_json(by_alias=True), record.id),
        )

    def get(self, prompt_id: str) -> tuple[PromptRecord, str] | None:
        """The record and the owner (agent token fingerprint) of a prompt, if it exists."""
        row = self._db.execute(
            "SELECT record, owner FROM prompts WHERE id = ?", (prompt_id,)
        ).fetchone()
        if row is None:
            return None
        return PromptRecord.model_validate_json(row[0]), row[1]

    def pending_in_session(self, session_key: str, agent_id: str | None) -> str | None:
        row = self._db.execute(
            "SELECT id FROM prompts WHERE session_key = ? AND agent_id = ? AND status = 'pending'",
            (session_key, agent_id or ""),
        ).fetchone()
        return row[0] if row else None

    def pending_of_run(self, owner: str, run_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT id FROM prompts WHERE owner = ? AND run_id = ? AND status = 'pending' "
            "ORDER BY n",
            (owner, run_id),
        )
        return [r[0] for r in rows]

    def pending_deadlines(self) -> list[tuple[int, str]]:
        rows = self._db.execute(
            "SELECT expires_ms, id FROM prompts WHERE status = 'pending' ORDER BY expires_ms"
        )
        return [(r[0], r[1]) for r in rows]

    def due(self, now_ms: int) -> list[str]:
        rows = self._db.execute(
            "SELECT id FROM prompts WHERE status = 'pending' AND expires_ms <= ? ORDER BY n",
            (now_ms,),
        )
        return [r[0] for r in rows]

    def list_json(
        self,
        *,
        pending_only: bool,
        session_key: str | None,
        limit: int,
        before: str | None,
    ) -> list[str] | None:
        """Records newest first, as stored JSON; None when `before` names no prompt."""
        where, params = [], []
        if pending_only:
            where.append("status = 'pending'")
        if session_key is not None:
            where.append("session_key = ?")
            params.append(session_key)
        if before is not None:
            row = self._db.execute("SELECT n FROM prompts WHERE id = ?", (before,)).fetchone()
            if row is None:
                return None
            where.append("n < ?")
            params.append(row[0])
        sql = "SELECT record FROM prompts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY n DESC LIMIT ?"
        params.append(limit)
        return [r[0] for r in self._db.execute(sql, params)]

    # ---- events ----------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append_event(self, type_: str, record: PromptRecord, now_ms: int) -> int:
        cur = self._db.execute(
            "INSERT INTO events (type, prompt_id, created_ms, record) VALUES (?, ?, ?, ?)",
            (type_, record.id, now_ms, record.model_dump_json(by_alias=True)),
        )
        self._last_seq = cur.lastrowid or self._last_seq
        return self._last_seq

    def events_after(self, seq: int, limit: int) -> list[StoredEvent]:
        rows = self._db.execute(
            "SELECT seq, type, record FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [StoredEvent(r[0], r[1], r[2]) for r in rows]

    @property
    def pruned_through(self) -> int:
        """Events up to this seq may have been deleted: an older cursor has missed some."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'pruned_through'").fetchone()
        return int(row[0]) if row else 0

    # ---- idempotency -----------------------------------------------------------------------

    def remembered(self, scope: str) -> dict | None:
        row = self._db.execute("SELECT body FROM idempotency WHERE scope = ?", (scope,)).fetchone()
        return json.loads(row[0]) if row else None

    def remember(self, scope: str, body: dict, now_ms: int) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO idempotency (scope, body, created_ms) VALUES (?, ?, ?)",
            (scope, json.dumps(body), now_ms),
        )

    # ---- retention -------------------------------------------------------------------------

    def prune(self, *, prompts_before_ms: int, events_before_ms: int) -> tuple[int, int]:
        """Delete terminal prompts resolved before, and events/keys created before, the cutoffs."""
        with self.transaction():
            gone_prompts = self._db.execute(
                "DELETE FROM prompts WHERE status != 'pending' AND resolved_ms < ?",
                (prompts_before_ms,),
            ).rowcount
            row = self._db.execute(
                "SELECT MAX(seq) FROM events WHERE created_ms < ?", (events_before_ms,)
            ).fetchone()
            gone_events = 0
            if row[0] is not None:
                gone_events = self._db.execute(
                    "DELETE FROM events WHERE seq <= ?", (row[0],)
                ).rowcount
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('pruned_through', ?)",
                    (str(max(row[0], self.pruned_through)),),
                )
            self._db.execute("DELETE FROM idempotency WHERE created_ms < ?", (events_before_ms,))
        return gone_prompts, gone_events
