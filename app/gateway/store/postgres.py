"""The store in PostgreSQL, shared by any number of gateway processes (docs/PROTOCOL.md v1.3).

Each process keeps its own event feed and waiters (the fan-out of #16 stays per process) and
hears the others through LISTEN/NOTIFY: a committed event notifies its sequence number, a
change of devices, people or agent tokens notifies "registry"; the listener reads the rows
again. Ordering across processes comes from one counter row: taking the next event number
locks it until the transaction commits, so events become visible in sequence order and a
device's cursor never skips one committed late. First answer wins by a conditional UPDATE.

The core calls the store synchronously on its event loop, as it does SQLite's file (psycopg's
blocking connection, one per process, autocommit with explicit transactions); the listener is
psycopg's async connection. The schema is created and migrated here, at start-up, versioned in
`meta`, one process at a time (an advisory lock).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg

from app.protocol import PromptRecord, ProtocolError

from .queries import SharedQueries
from .storage import (
    PRUNE_BATCH,
    StoredEvent,
    StoreUnavailable,
)

log = logging.getLogger("ask_user.gateway")

CHANNEL = "ask_user"
REGISTRY = "registry"
PRUNED = "pruned"
# A statement waiting longer for a lock, or running longer, answers 503 instead of freezing
# this process's loop.
LOCK_WAIT, STATEMENT_WAIT = "2s", "5s"
MIGRATION_LOCK = 0x41534B01  # advisory lock keys: start-up migration, retention
RETENTION_LOCK = 0x41534B02
RELISTEN_SECONDS = 1.0
# A database host that does not answer (a lost network) costs the loop this long at most, once.
CONNECT_TIMEOUT_SECONDS = 2

# Each entry takes the schema one version further; never edit one that has shipped.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE prompts (
        n BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        person TEXT NOT NULL,
        session_key TEXT NOT NULL,
        agent_id TEXT NOT NULL DEFAULT '',
        run_id TEXT,
        status TEXT NOT NULL,
        expires_ms BIGINT NOT NULL,
        resolved_ms BIGINT,
        record TEXT NOT NULL,
        link_hash TEXT UNIQUE
    );
    CREATE INDEX prompts_pending_expiry ON prompts(expires_ms) WHERE status = 'pending';
    CREATE INDEX prompts_run ON prompts(owner, run_id) WHERE status = 'pending';
    CREATE INDEX prompts_person ON prompts(person, n);
    CREATE INDEX prompts_resolved ON prompts(resolved_ms);
    CREATE UNIQUE INDEX prompts_one_pending_per_person_session
        ON prompts(person, session_key, agent_id) WHERE status = 'pending';
    CREATE TABLE events (
        seq BIGINT PRIMARY KEY,
        type TEXT NOT NULL,
        prompt_id TEXT NOT NULL,
        person TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX events_person ON events(person, seq);
    CREATE INDEX events_created ON events(created_ms);
    CREATE TABLE event_counter (one_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one_row),
                                seq BIGINT NOT NULL);
    INSERT INTO event_counter (seq) VALUES (0);
    CREATE TABLE idempotency (
        scope TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        request_hash TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX idempotency_created ON idempotency(created_ms);
    CREATE TABLE devices (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_ms BIGINT NOT NULL,
        last_seen_ms BIGINT,
        person_id TEXT NOT NULL
    );
    CREATE TABLE pairings (
        code_hash TEXT PRIMARY KEY,
        name TEXT,
        created_ms BIGINT NOT NULL,
        expires_ms BIGINT NOT NULL,
        used_ms BIGINT,
        person_id TEXT NOT NULL
    );
    CREATE TABLE people (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL UNIQUE,
        created_ms BIGINT NOT NULL
    );
    CREATE TABLE agent_tokens (
        token_hash TEXT PRIMARY KEY,
        person_id TEXT NOT NULL,
        created_ms BIGINT NOT NULL
    );
    """,
    # A prompt only in the indexes its queries need (#27, as the SQLite store's): a run's
    # index only with a run, retention's only once resolved.
    """
    DROP INDEX prompts_run;
    CREATE INDEX prompts_run ON prompts(owner, run_id)
        WHERE status = 'pending' AND run_id IS NOT NULL;
    DROP INDEX prompts_resolved;
    CREATE INDEX prompts_resolved ON prompts(resolved_ms) WHERE status <> 'pending';
    """,
)


class PostgresDatabase:
    """One blocking connection, reopened when the server went away; every failure of the
    database becomes `StoreUnavailable` (503, nothing changed)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._sql: dict[str, str] = {}  # `?` → `%s`, once per statement
        self.connection()  # fail at start-up, not on the first request

    def connection(self) -> psycopg.Connection:
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            try:
                conn = psycopg.connect(
                    self.url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_SECONDS,
                    options=f"-c lock_timeout={LOCK_WAIT} -c statement_timeout={STATEMENT_WAIT}",
                )
            except psycopg.Error as exc:
                raise StoreUnavailable(exc) from exc
            self._conn = conn
        return conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor:
        statement = self._sql.get(sql)
        if statement is None:
            statement = self._sql[sql] = sql.replace("?", "%s")
        return self.run(statement, params)

    def run(self, statement: str, params: Sequence[Any] | None = None) -> psycopg.Cursor:
        """A statement in psycopg's own placeholders (`%s`)."""
        conn = self.connection()
        try:
            return conn.execute(statement, params)  # type: ignore[arg-type]  # our own SQL
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise StoreUnavailable(exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self.connection()
        try:
            with conn.transaction():
                yield
        except psycopg.Error as exc:
            raise StoreUnavailable(exc) from exc

    @contextmanager
    def transaction_if_free(self) -> Iterator[None]:
        with self.transaction():
            self.run("SET LOCAL lock_timeout = '1ms'")  # 0 would mean: wait for ever
            yield

    def announce_registry_change(self) -> None:
        self.run("SELECT pg_notify(%s, %s)", (CHANNEL, REGISTRY))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class PostgresStore(SharedQueries):
    """storage.Store in PostgreSQL."""

    def __init__(self, url: str) -> None:
        self._db = PostgresDatabase(url)
        self._migrate()
        self._pruned_through = self._read_pruned_through()

    def _migrate(self) -> None:
        db = self._db
        with db.transaction():
            db.run("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            db.run("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = db.run("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > len(MIGRATIONS):
                raise RuntimeError(
                    f"the database's schema is version {version}, newer than this gateway "
                    f"knows ({len(MIGRATIONS)}): upgrade the gateway"
                )
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                db.run(migration)
                db.run(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(number),),
                )
                log.info("PostgreSQL schema migrated to version %d", number)

    @property
    def db(self) -> PostgresDatabase:
        return self._db

    def close(self) -> None:
        self._db.close()

    def transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    # ---- prompts ---------------------------------------------------------------------------

    def _value(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """The first column of the one row a statement gives."""
        row = self._db.run(sql, params).fetchone()
        assert row is not None, sql
        return row[0]

    # ---- events ----------------------------------------------------------------------------

    def newest_seq(self) -> int:
        return self._value("SELECT seq FROM event_counter")

    def append_event(
        self, type_: str, record: PromptRecord, record_json: str, *, person: str, now_ms: int
    ) -> StoredEvent:
        """Within the caller's transaction, as its last statement: the counter row stays locked
        until the commit, so no process's next event can become visible before this one."""
        seq = self._value(
            "WITH next AS (UPDATE event_counter SET seq = seq + 1 RETURNING seq) "
            "INSERT INTO events (seq, type, prompt_id, person, created_ms, record) "
            "SELECT next.seq, %s, %s, %s, %s, %s FROM next RETURNING seq",
            (type_, record.id, person, now_ms, record_json),
        )
        self._db.run("SELECT pg_notify(%s, %s)", (CHANNEL, str(seq)))
        return StoredEvent(seq, type_, record_json, person, record.id)

    @property
    def pruned_through(self) -> int:
        return self._pruned_through

    def _read_pruned_through(self) -> int:
        row = self._db.run("SELECT value FROM meta WHERE key = 'pruned_through'").fetchone()
        return int(row[0]) if row else 0

    # ---- idempotency -----------------------------------------------------------------------

    def remember(self, scope: str, body: dict, request_hash: str, now_ms: int) -> None:
        self._db.run(
            "INSERT INTO idempotency (scope, body, created_ms, request_hash) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (scope) DO UPDATE SET body = excluded.body, "
            "created_ms = excluded.created_ms, request_hash = excluded.request_hash",
            (scope, json.dumps(body), now_ms, request_hash),
        )

    # ---- retention -------------------------------------------------------------------------

    def prune_batch(
        self, *, prompts_before_ms: int, events_before_ms: int, batch: int = PRUNE_BATCH
    ) -> int:
        """Like the SQLite store's, by one process at a time: another process pruning now
        makes this one a no-op (0)."""
        db = self._db
        gone = 0
        with db.transaction():
            if not self._value("SELECT pg_try_advisory_xact_lock(%s)", (RETENTION_LOCK,)):
                return 0
            gone += db.run(
                "DELETE FROM prompts WHERE n IN (SELECT n FROM prompts WHERE status <> 'pending' "
                "AND resolved_ms < %s LIMIT %s)",
                (prompts_before_ms, batch),
            ).rowcount
            last = self._value(
                "SELECT MAX(seq) FROM (SELECT seq FROM events WHERE created_ms < %s "
                "ORDER BY seq LIMIT %s) oldest",
                (events_before_ms, batch),
            )
            if last is not None:
                gone += db.run("DELETE FROM events WHERE seq <= %s", (last,)).rowcount
                db.run(
                    "INSERT INTO meta (key, value) VALUES ('pruned_through', %s) ON CONFLICT "
                    "(key) DO UPDATE SET value = GREATEST(meta.value::bigint, "
                    "excluded.value::bigint)::text",
                    (str(last),),
                )
                db.run("SELECT pg_notify(%s, %s)", (CHANNEL, PRUNED))
            gone += db.run(
                "DELETE FROM idempotency WHERE scope IN (SELECT scope FROM idempotency "
                "WHERE created_ms < %s LIMIT %s)",
                (events_before_ms, batch),
            ).rowcount
        self._pruned_through = self._read_pruned_through()
        return gone

    def reclaim_some(self) -> bool:
        """PostgreSQL's autovacuum gives the space back."""
        return False

    # ---- other processes -------------------------------------------------------------------

    async def follow(
        self, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        """Listen until cancelled; after a lost connection, listen again and catch up on
        everything (notifications sent meanwhile are gone)."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._db.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
                ) as listener:
                    await listener.execute(f"LISTEN {CHANNEL}")
                    self._heard(PRUNED, on_events, on_registry)
                    on_registry()
                    on_events(self.newest_seq())
                    async for note in listener.notifies():
                        self._heard(note.payload, on_events, on_registry)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, ProtocolError, OSError) as exc:
                log.warning("PostgreSQL: not hearing other gateways (%s); retrying", exc)
            await asyncio.sleep(RELISTEN_SECONDS)

    def _heard(
        self, payload: str, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        if payload == REGISTRY:
            on_registry()
        elif payload == PRUNED:
            self._pruned_through = self._read_pruned_through()
        elif payload.isdigit():
            on_events(int(payload))
