"""The embedded store: one SQLite file in WAL mode holding prompts, events, idempotency keys,
devices and people, for one gateway process (several processes share PostgreSQL instead:
postgres.py). The interface is storage.py's.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from app.privatefiles import private_file
from app.protocol import DEFAULT_PERSON_ID, PromptRecord

from .checkpoints import Checkpointer
from .ownership import Ownership
from .queries import (
    AMEND_PROMPT,
    DRAFT_OF_PENDING,
    EXTEND_PROMPT,
    INSERT_PROMPT,
    REMEMBER_COLUMNS,
    RESOLVE_PROMPT,
    SharedQueries,
    amend_row,
    extend_row,
    prompt_row,
    remember_row,
    resolve_row,
)
from .storage import (
    CREATED,
    DRAFTED,
    PRUNE_BATCH,
    RESOLVED,
    UPDATED,
    Remember,
    StoredEvent,
    StoredPrompt,
    StoreUnavailable,
    pending_exists,
)

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
CREATE INDEX IF NOT EXISTS prompts_pending_expiry ON prompts(expires_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS prompts_session ON prompts(session_key, n);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    prompt_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    request_hash TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL,
    last_seen_ms INTEGER
);
CREATE TABLE IF NOT EXISTS pairings (
    code_hash TEXT PRIMARY KEY,
    name TEXT,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    used_ms INTEGER
);
CREATE TABLE IF NOT EXISTS people (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_tokens (
    token_hash TEXT PRIMARY KEY,
    person_id TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
"""


# Written exactly as here, so an older file's wider index is told apart and replaced.
_PARTIAL_INDEXES = {
    "prompts_run": "(owner, run_id) WHERE status = 'pending' AND run_id IS NOT NULL",
    "prompts_resolved": "(resolved_ms) WHERE status != 'pending'",
}

# Replaced, not updated: a key written again moves to the end of the table's order, which is
# the order retention reads it in (_oldest_through).
REMEMBER = f"INSERT OR REPLACE INTO {REMEMBER_COLUMNS} VALUES (?, ?, ?, ?)"
WRITE_LOCK_WAIT_MS = 250
WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024  # what a checkpoint truncates the WAL file back to
RECLAIM_PAGES = 2000  # 8 MB of 4 KiB pages a step
TRUNCATE_TRIES, TRUNCATE_RETRY_SECONDS = 20, 0.005  # at most 0.1 s, once per retention pass
CONVERT_TO_INCREMENTAL_MAX_BYTES = 64 * 1024 * 1024
# Prompts read or written lately, kept as records: an answer and the agent's result read the
# prompt its create just wrote, and a read from the file (a query and validating its JSON)
# cost about a tenth of a whole cycle (#27). One process owns the file, so what it committed
# is what the file holds.
RECENT_PROMPTS = 1024


@contextmanager
def immediate(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE … COMMIT, all or nothing: any failure rolls back, and a storage failure
    (disk full, locked by another process, I/O) becomes `StoreUnavailable` (503: retry)."""
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise StoreUnavailable(exc) from exc


_VERSION = "json_extract(record, '$.version')"  # a prompt's version, as SQLite reads it


class SqliteDatabase:
    """The store's one connection, for the device registry and people (same file, same
    loop). Its calls never wait: a coroutine of it runs to the end at once."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.connection = db

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.connection.execute(sql, params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteDatabase]:
        with immediate(self.connection):
            yield self

    @asynccontextmanager
    async def transaction_if_free(self) -> AsyncIterator[SqliteDatabase]:
        self.connection.execute("PRAGMA busy_timeout=0")
        try:
            with immediate(self.connection):
                yield self
        finally:
            self.connection.execute(f"PRAGMA busy_timeout={WRITE_LOCK_WAIT_MS}")

    async def announce_registry_change(self) -> None:
        """One process owns the file: nobody else to tell."""


class PromptStore(SharedQueries):
    """Prompts as records (JSON, with indexed columns), the event log, idempotency keys."""

    def __init__(self, path: Path | str, *, synchronous: str = "NORMAL") -> None:
        self.path = Path(path)
        private_file(self.path)
        self._ownership = Ownership(self.path)  # FileInUse while another process has it
        try:
            self._open(synchronous)
        except BaseException:
            self._ownership.release()
            raise

    def _open(self, synchronous: str) -> None:
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._incremental = self._vacuum_incrementally()  # before WAL: that writes the header
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a killed process; FULL also survives a power cut.
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        # Another process holding the write lock (a backup, the sqlite3 shell) makes a write wait
        # this long on the event loop, then answer 503 `unavailable`, instead of freezing every
        # request for seconds (#14).
        self._db.execute(f"PRAGMA busy_timeout={WRITE_LOCK_WAIT_MS}")
        self._db.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
        self._db.executescript(SCHEMA)
        self._migrate()
        self._db_access = SqliteDatabase(self._db)
        self._recent: OrderedDict[str, StoredPrompt] = OrderedDict()  # least recent first
        row = self._db.execute("SELECT value FROM meta WHERE key = 'pruned_through'").fetchone()
        self._pruned_through = int(row[0]) if row else 0
        # Checkpoints happen on a thread of their own, never in a commit on the loop.
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpointer = Checkpointer(self.path)

    def _vacuum_incrementally(self) -> bool:
        """Freed pages can go back to the file system: set on a new file (it must come before
        the first table); an older small file is converted once, a large one left as it is."""
        mode = self._db.execute("PRAGMA auto_vacuum").fetchone()[0]
        if mode == 2:
            return True
        tables = self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        if tables and self.path.stat().st_size > CONVERT_TO_INCREMENTAL_MAX_BYTES:
            return False
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        if tables:
            self._db.execute("VACUUM")
        return bool(self._db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2)

    def _migrate(self) -> None:
        """Columns added since a file was made."""
        columns = {r[1] for r in self._db.execute("PRAGMA table_info(idempotency)")}
        if "request_hash" not in columns:
            self._db.execute(
                "ALTER TABLE idempotency ADD COLUMN request_hash TEXT NOT NULL DEFAULT ''"
            )
        # Each prompt's answer link, by the SHA-256 of its token (docs/PROTOCOL.md v1.2): it goes
        # with the prompt when retention removes it.
        prompt_columns = {r[1] for r in self._db.execute("PRAGMA table_info(prompts)")}
        if "link_hash" not in prompt_columns:
            self._db.execute("ALTER TABLE prompts ADD COLUMN link_hash TEXT")
        self._db.execute(
            "CREATE UNIQUE INDEX IF NOT EXISTS prompts_link ON prompts(link_hash) "
            "WHERE link_hash IS NOT NULL"
        )
        # The person a prompt and its events belong to (docs/PROTOCOL.md v1.3): what was there
        # before people belongs to the default person. One pending prompt per session is per
        # person: two people's agents may both ask in their "main".
        whose = f"TEXT NOT NULL DEFAULT '{DEFAULT_PERSON_ID}'"
        for table, column in (
            ("prompts", "person"),
            ("events", "person"),
            ("devices", "person_id"),
            ("pairings", "person_id"),
        ):
            if column not in {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {whose}")
        self._db.execute("DROP INDEX IF EXISTS prompts_one_pending_per_session")
        self._db.execute(
            "CREATE UNIQUE INDEX IF NOT EXISTS prompts_one_pending_per_person_session "
            "ON prompts(person, session_key, agent_id) WHERE status = 'pending'"
        )
        self._index_only_what_is_asked()

    def _index_only_what_is_asked(self) -> None:
        """Each index a prompt is in is one more B-tree page written (and logged) by its create
        and its answer: three of eight held rows no query asks for, and cost a fifth of a
        create + answer (#27). A pending prompt's person is found through the one-pending-per-
        session index (person first); a run's prompts only when it has a run; retention looks
        only at resolved prompts."""
        self._db.execute("DROP INDEX IF EXISTS prompts_person_pending")
        # Retention reads the oldest events and keys in the order they were written (time
        # order), so none is in an index of its time: a page less for a create and an answer.
        self._db.execute("DROP INDEX IF EXISTS events_created")
        self._db.execute("DROP INDEX IF EXISTS idempotency_created")
        for name, definition in _PARTIAL_INDEXES.items():
            sql = f"CREATE INDEX {name} ON prompts{definition}"
            found = self._db.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
            ).fetchone()
            if found is None or found[0] != sql:
                self._db.execute(f"DROP INDEX IF EXISTS {name}")
                self._db.execute(sql)

    @property
    def connection(self) -> sqlite3.Connection:
        return self._db

    @property
    def db(self) -> SqliteDatabase:
        """The one connection, shared by the device registry and people (same file, loop)."""
        return self._db_access

    async def close(self) -> None:
        self.close_now()

    def close_now(self) -> None:
        """Close it from code that is not a coroutine (tests, tools)."""
        self._checkpointer.stop()
        self._db.close()
        self._ownership.release()

    def _keep(self, stored: StoredPrompt) -> None:
        self._recent[stored.record.id] = stored
        self._recent.move_to_end(stored.record.id)
        if len(self._recent) > RECENT_PROMPTS:
            self._recent.popitem(last=False)

    # ---- changes ---------------------------------------------------------------------------

    async def create(
        self,
        record: PromptRecord,
        record_json: str,
        *,
        owner: str,
        person: str,
        expires_ms: int,
        link_hash: str | None,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent:
        db = self._db
        with immediate(db):
            row = prompt_row(record, record_json, owner, person, expires_ms, link_hash)
            inserted = db.execute(INSERT_PROMPT, row).rowcount
            if inserted:
                if remember is not None:
                    db.execute(REMEMBER, remember_row(remember, now_ms))
                event = self._append_event(CREATED, record, record_json, person, now_ms)
        if not inserted:  # the session's pending prompt is in the way
            in_the_way = await self.pending_in_session(person, record.session_key, record.agent_id)
            raise pending_exists(in_the_way)
        self._keep(StoredPrompt(record, owner, person))  # committed: now it may be served
        return event

    async def resolve(
        self, record: PromptRecord, record_json: str, *, remember: Remember | None, now_ms: int
    ) -> StoredEvent | None:
        params = resolve_row(record, record_json, now_ms)
        return self._change_pending(
            RESOLVE_PROMPT.format(version=_VERSION),
            params,
            RESOLVED,
            record,
            record_json,
            remember,
            now_ms,
        )

    async def extend(
        self, record: PromptRecord, record_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        params = extend_row(record, record_json)
        return self._change_pending(
            EXTEND_PROMPT.format(version=_VERSION),
            params,
            UPDATED,
            record,
            record_json,
            None,
            now_ms,
        )

    async def amend(
        self,
        record: PromptRecord,
        record_json: str,
        *,
        was_version: int,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent | None:
        statement = AMEND_PROMPT.format(version=_VERSION)
        params = amend_row(record, record_json, was_version)
        return self._change_pending(
            statement, params, UPDATED, record, record_json, remember, now_ms
        )

    async def draft(
        self, record: PromptRecord, event_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        return self._change_pending(
            DRAFT_OF_PENDING, (record.id,), DRAFTED, record, event_json, None, now_ms
        )

    def _change_pending(
        self,
        statement: str,
        params: tuple[Any, ...],
        type_: str,
        record: PromptRecord,
        record_json: str,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent | None:
        """A prompt's row changed by `statement` (which returns its person), with its key and
        event, in one transaction; None if the statement's condition (still pending, still
        that version) did not hold. The record kept in memory follows once it has committed."""
        db = self._db
        with immediate(db):
            row = db.execute(statement, params).fetchone()
            if row is None:
                return None
            if remember is not None:
                db.execute(REMEMBER, remember_row(remember, now_ms))
            event = self._append_event(type_, record, record_json, row[0], now_ms)
        kept = self._recent.pop(record.id, None)
        if kept is not None:
            self._keep(StoredPrompt(record, kept.owner, event.person))
        return event

    def _append_event(
        self, type_: str, record: PromptRecord, record_json: str, person: str, now_ms: int
    ) -> StoredEvent:
        cur = self._db.execute(
            "INSERT INTO events (type, prompt_id, created_ms, record, person) "
            "VALUES (?, ?, ?, ?, ?)",
            (type_, record.id, now_ms, record_json, person),
        )
        assert cur.lastrowid is not None
        return StoredEvent(cur.lastrowid, type_, record_json, person, record.id)

    # ---- prompts ---------------------------------------------------------------------------

    async def get(self, prompt_id: str) -> StoredPrompt | None:
        stored = self._recent.get(prompt_id)
        if stored is not None:
            self._recent.move_to_end(prompt_id)
            return stored
        stored = await super().get(prompt_id)
        if stored is not None and not self._db.in_transaction:  # only what is committed
            self._keep(stored)
        return stored

    # ---- events ----------------------------------------------------------------------------

    async def newest_seq(self) -> int:
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='events'").fetchone()
        newest = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        return int(max(newest, row[0] if row else 0))

    @property
    def pruned_through(self) -> int:
        return self._pruned_through

    # ---- retention -------------------------------------------------------------------------

    async def prune_batch(
        self, *, prompts_before_ms: int, events_before_ms: int, batch: int = PRUNE_BATCH
    ) -> int:
        """One short transaction removing up to `batch` each of terminal prompts resolved before,
        and events and keys created before, the cutoffs; how many rows went. Call it until it
        returns less than `batch`, letting other work in between (#14: 300k rows once blocked
        start-up for seconds)."""
        with immediate(self._db):
            gone = self._db.execute(
                "DELETE FROM prompts WHERE n IN (SELECT n FROM prompts WHERE status != 'pending' "
                "AND resolved_ms < ? LIMIT ?)",
                (prompts_before_ms, batch),
            ).rowcount
            last = self._oldest_through("events", "seq", events_before_ms, batch)
            pruned_through = self._pruned_through
            if last is not None:
                gone_events = self._db.execute("DELETE FROM events WHERE seq <= ?", (last,))
                gone += gone_events.rowcount
                pruned_through = max(last, pruned_through)
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('pruned_through', ?)",
                    (str(pruned_through),),
                )
            last_key = self._oldest_through("idempotency", "rowid", events_before_ms, batch)
            gone_keys = 0
            if last_key is not None:
                gone_keys = self._db.execute(
                    "DELETE FROM idempotency WHERE rowid <= ?", (last_key,)
                ).rowcount
        self._pruned_through = pruned_through
        self._recent.clear()  # some of them may be gone
        return gone + gone_keys

    def _oldest_through(self, table: str, order: str, before_ms: int, batch: int) -> int | None:
        """The last of a table's oldest rows (at most `batch`, in the order they were written,
        which is time order) made before `before_ms`, stopping at the first one still kept:
        no index of times to write on every change (#27), and a row behind a younger one (the
        clock stepped back) waits for a later pass."""
        last = None
        for key, created_ms in self._db.execute(
            f"SELECT {order}, created_ms FROM {table} ORDER BY {order} LIMIT ?", (batch,)
        ):
            if created_ms >= before_ms:
                break
            last = key
        return last

    async def follow(
        self, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        """One process owns the file: no other process's changes to hear of."""

    async def reclaim_some(self, pages: int = RECLAIM_PAGES) -> bool:
        """Give up to `pages` free pages back to the file system, then shrink the WAL; True while
        free pages remain (so the caller can come back after letting other work run)."""
        if self._incremental:
            self._db.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()
            if self._db.execute("PRAGMA freelist_count").fetchone()[0]:
                return True
        # The checkpoint thread's passive checkpoint may be running: SQLite then answers busy
        # at once (no busy timeout for that), and the log was left at full size.
        for _ in range(TRUNCATE_TRIES):
            if self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
                break
            time.sleep(TRUNCATE_RETRY_SECONDS)
        return False
