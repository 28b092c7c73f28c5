"""The device's local store: the source of truth for the screen.

Prompts as last seen (by version), what this person answered, the outbox of answers and
dismissals not yet acknowledged, the event cursor and the device id. Summaries stay until
the person clears them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.privatefiles import private_file
from app.protocol import PromptRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS prompts (
    id TEXT PRIMARY KEY,
    session_key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    status TEXT NOT NULL,
    record TEXT NOT NULL,
    local_answers TEXT,
    gone INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS prompts_by_time ON prompts(created_at, id);
CREATE INDEX IF NOT EXISTS prompts_by_session ON prompts(session_key, created_at, id);
CREATE INDEX IF NOT EXISTS prompts_pending ON prompts(status) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS outbox (
    key TEXT PRIMARY KEY,
    prompt_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    answers TEXT,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class StoredPrompt:
    record: PromptRecord
    local_answers: dict[str, list[str]] | None
    gone: bool
    outbox_kind: str | None  # "answer" | "dismiss" | "late" while not yet acknowledged


@dataclass(frozen=True)
class OutboxEntry:
    key: str
    prompt_id: str
    kind: str
    answers: dict[str, list[str]] | None


# A stored prompt's row, with whether the outbox holds a change for it (see `_stored`).
_STORED_ROWS = (
    "SELECT p.record, p.local_answers, p.gone, o.kind FROM prompts p "
    "LEFT JOIN outbox o ON o.prompt_id = p.id"
)


class LocalStore:
    """SQLite in WAL mode; every method is one short transaction, safe from any thread."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        private_file(self.path)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tx(self, fn: Any) -> Any:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                result = fn(self._db)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

    # ---- meta --------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._tx(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value)
            )
        )

    @property
    def device_id(self) -> str:
        """Random, made once, kept forever."""
        with self._lock:
            existing = self.get_meta("device_id")
            if existing is None:
                existing = "dev_" + uuid.uuid4().hex
                self.set_meta("device_id", existing)
            return existing

    @property
    def cursor(self) -> str | None:
        return self.get_meta("cursor")

    def forget_cursor(self) -> None:
        self._tx(lambda db: db.execute("DELETE FROM meta WHERE key = 'cursor'"))

    def get_json(self, key: str) -> Any:
        value = self.get_meta(key)
        return json.loads(value) if value is not None else None

    def set_json(self, key: str, value: Any) -> None:
        self.set_meta(key, json.dumps(value))

    # ---- prompts -----------------------------------------------------------------------

    def apply(self, record: PromptRecord, cursor: str | None = None) -> bool:
        """Keep `record` if it is newer than what we hold; True when something changed."""
        return bool(self.apply_many([record], cursor))

    def apply_many(self, records: list[PromptRecord], cursor: str | None = None) -> frozenset[str]:
        """Keep each record newer than what we hold; the ids of those that changed."""

        def run(db: sqlite3.Connection) -> frozenset[str]:
            changed: set[str] = set()
            for record in records:
                row = db.execute(
                    "SELECT version FROM prompts WHERE id = ?", (record.id,)
                ).fetchone()
                if row is not None and row[0] >= record.version:
                    continue
                db.execute(
                    "INSERT INTO prompts (id, session_key, created_at, version, status, record) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                    "version = excluded.version, status = excluded.status, "
                    "record = excluded.record, gone = 0",
                    (
                        record.id,
                        record.session_key,
                        created_key(record),
                        record.version,
                        record.status,
                        record.model_dump_json(by_alias=True),
                    ),
                )
                changed.add(record.id)
            if cursor is not None:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('cursor', ?)", (cursor,)
                )
            return frozenset(changed)

        applied: frozenset[str] = self._tx(run)
        return applied

    def mark_gone(self, prompt_id: str) -> None:
        self._tx(lambda db: db.execute("UPDATE prompts SET gone = 1 WHERE id = ?", (prompt_id,)))

    def get(self, prompt_id: str) -> StoredPrompt | None:
        with self._lock:
            row = self._db.execute(
                _STORED_ROWS + " WHERE p.id = ?",
                (prompt_id,),
            ).fetchone()
        return _stored(row) if row else None

    def waiting(self, session_key: str | None = None) -> list[StoredPrompt]:
        """Every prompt still pending here (however many), oldest first."""
        sql = _STORED_ROWS + " WHERE p.status = 'pending' AND p.gone = 0"
        params: tuple[Any, ...] = ()
        if session_key is not None:
            sql += " AND p.session_key = ?"
            params = (session_key,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY p.created_at, p.id", params).fetchall()
        return [_stored(r) for r in rows]

    def pending_ids(self) -> list[str]:
        with self._lock:
            return [
                r[0]
                for r in self._db.execute(
                    "SELECT id FROM prompts WHERE status = 'pending' AND gone = 0"
                )
            ]

    def page(
        self, *, session_key: str | None = None, limit: int = 50, before: str | None = None
    ) -> list[StoredPrompt]:
        """The newest `limit` prompts (older than the prompt `before`), oldest first."""
        where: list[str] = []
        params: list[str | int] = []
        if session_key is not None:
            where.append("p.session_key = ?")
            params.append(session_key)
        if before is not None:
            where.append("(p.created_at, p.id) < (SELECT created_at, id FROM prompts WHERE id = ?)")
            params.append(before)
        sql = _STORED_ROWS
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY p.created_at DESC, p.id DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [_stored(r) for r in reversed(rows)]

    def session_activity(self) -> dict[str, str]:
        """Each session with when it last asked: its newest prompt's `createdAt`."""
        with self._lock:
            rows = self._db.execute(
                "SELECT session_key, MAX(created_at) FROM prompts GROUP BY session_key"
            ).fetchall()
        return dict(rows)

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM prompts").fetchone()[0])

    def clear_history(self, session_key: str | None = None) -> int:
        """Delete resolved prompts (never pending ones or ones still in the outbox)."""

        def run(db: sqlite3.Connection) -> int:
            sql = (
                "DELETE FROM prompts WHERE (status != 'pending' OR gone = 1) "
                "AND id NOT IN (SELECT prompt_id FROM outbox)"
            )
            params: tuple[Any, ...] = ()
            if session_key is not None:
                sql += " AND session_key = ?"
                params = (session_key,)
            return db.execute(sql, params).rowcount

        return int(self._tx(run))

    # ---- outbox ------------------------------------------------------------------------

    def enqueue(self, prompt_id: str, kind: str, answers: dict[str, list[str]] | None) -> str:
        """Durably remember what the person did, before anything goes on the network."""
        key = f"{kind}_{uuid.uuid4().hex}"

        def run(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO outbox (key, prompt_id, kind, answers, created_ms) "
                "VALUES (?, ?, ?, ?, CAST(strftime('%s','now') AS INTEGER) * 1000)",
                (key, prompt_id, kind, json.dumps(answers) if answers is not None else None),
            )
            db.execute(
                "UPDATE prompts SET local_answers = ? WHERE id = ?",
                (json.dumps(answers) if answers is not None else None, prompt_id),
            )

        self._tx(run)
        return key

    def outbox(self) -> list[OutboxEntry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT key, prompt_id, kind, answers FROM outbox ORDER BY created_ms, key"
            ).fetchall()
        return [OutboxEntry(r[0], r[1], r[2], json.loads(r[3]) if r[3] else None) for r in rows]

    def acknowledge(self, key: str, record: PromptRecord | None, keep_local: bool = True) -> None:
        """The gateway has settled this entry: apply what it said, drop the entry."""

        def run(db: sqlite3.Connection) -> None:
            row = db.execute("SELECT prompt_id FROM outbox WHERE key = ?", (key,)).fetchone()
            db.execute("DELETE FROM outbox WHERE key = ?", (key,))
            if row is not None and not keep_local:
                db.execute("UPDATE prompts SET local_answers = NULL WHERE id = ?", (row[0],))

        self._tx(run)
        if record is not None:
            self.apply(record)


def created_key(record: PromptRecord) -> str:
    """When a prompt was asked, as the store orders prompts by it (the wire's `createdAt`)."""
    return str(record.to_wire()["createdAt"])


def _stored(row: tuple[Any, ...]) -> StoredPrompt:
    return StoredPrompt(
        record=PromptRecord.model_validate_json(row[0]),
        local_answers=json.loads(row[1]) if row[1] else None,
        gone=bool(row[2]),
        outbox_kind=row[3],
    )
