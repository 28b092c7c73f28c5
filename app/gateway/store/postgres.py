"""The store in PostgreSQL, shared by any number of gateway processes (docs/PROTOCOL.md v1.3).

Each process keeps its own event feed and waiters (the fan-out of #16 stays per process) and
hears the others through LISTEN/NOTIFY: a committed event notifies its sequence number, a
change of devices, people or agent tokens notifies "registry"; the listener reads the rows
again. Ordering across processes comes from one counter row: taking the next event number
locks it until the transaction commits, so events become visible in sequence order and a
device's cursor never skips one committed late. First answer wins by a conditional UPDATE.

Nothing here holds the event loop (#42): statements run on psycopg's async connections, from a
pool (`PostgresSettings`), so a slow network or a locked table delays only the requests that
wait for it. A statement that cannot get its connection, its lock or its answer in time fails
its request with 503 (`StoreUnavailable`), and nothing else. A change of a prompt is one
statement (its row, its idempotency key, its event and the notification: one round trip, all
or nothing), because latency, not work, is what a database on another machine adds. The schema
is created and migrated here, at start-up, versioned in `meta`, one process at a time (an
advisory lock).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from app.protocol import PromptRecord, ProtocolError

from .postgres_settings import PostgresSettings
from .queries import (
    AMEND_PROMPT,
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
    StoreUnavailable,
    pending_exists,
)

log = logging.getLogger("ask_user.gateway")

CHANNEL = "ask_user"
REGISTRY = "registry"
PRUNED = "pruned"
MIGRATION_LOCK = 0x41534B01  # advisory lock keys: start-up migration, retention
RETENTION_LOCK = 0x41534B02
RELISTEN_SECONDS = 1.0
CONNECT_TIMEOUT_SECONDS = 2  # a database host that does not answer (a lost network)

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


def _pg(sql: str) -> str:
    """The shared SQL's `?` placeholders as psycopg's."""
    return sql.replace("?", "%s")


class Fetched:
    """A statement's rows, all read: what `Rows` promises, with nothing left on the wire."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)


async def _run(conn: psycopg.AsyncConnection, statement: str, params: Any) -> Fetched:
    try:
        cur = await conn.execute(statement, params)
        rows = await cur.fetchall() if cur.description is not None else []
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise StoreUnavailable(exc) from exc
    return Fetched(rows, cur.rowcount)


class _OnConnection:
    """`Database` on one connection: a transaction's statements."""

    def __init__(self, conn: psycopg.AsyncConnection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Fetched:
        return await _run(self._conn, _pg(sql), params)

    async def run(self, statement: str, params: Sequence[Any] | None = None) -> Fetched:
        """A statement in psycopg's own placeholders (`%s`)."""
        return await _run(self._conn, statement, params)

    async def announce_registry_change(self) -> None:
        await self.run("SELECT pg_notify(%s, %s)", (CHANNEL, REGISTRY))


class PostgresDatabase:
    """`Database` on the pool: each statement on whichever connection is free, each transaction
    on one; every failure of the database becomes `StoreUnavailable` (503, nothing changed)."""

    def __init__(self, url: str, settings: PostgresSettings) -> None:
        self.url = url
        options = (
            f"-c lock_timeout={settings.lock_timeout_ms} "
            f"-c statement_timeout={settings.statement_timeout_ms}"
        )
        self.pool = AsyncConnectionPool(
            url,
            min_size=settings.pool_size,
            max_size=settings.pool_size,
            timeout=settings.connection_wait_ms / 1000,
            kwargs={
                "autocommit": True,
                "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                "options": options,
            },
            open=False,
            name="ask-user",
        )

    async def open(self) -> None:
        """Fail at start-up, not on the first request, when the database cannot be reached."""
        try:
            # One connection first, so what is wrong (the address, the role, the password) is
            # said as PostgreSQL says it, not as a pool that did not fill in time.
            probe = await psycopg.AsyncConnection.connect(
                self.url, connect_timeout=CONNECT_TIMEOUT_SECONDS
            )
            await probe.close()
            await self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS * 2)
        except psycopg.Error as exc:
            await self.pool.close()
            raise StoreUnavailable(exc) from exc

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection]:
        try:
            async with self.pool.connection() as conn:
                yield conn
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:  # PoolTimeout too
            raise StoreUnavailable(exc) from exc

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Fetched:
        return await self.run(_pg(sql), params)

    async def run(self, statement: str, params: Sequence[Any] | None = None) -> Fetched:
        """A statement in psycopg's own placeholders (`%s`)."""
        async with self.connection() as conn:
            return await _run(conn, statement, params)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_OnConnection]:
        async with self.connection() as conn:
            try:
                async with conn.transaction():
                    yield _OnConnection(conn)
            except psycopg.Error as exc:
                raise StoreUnavailable(exc) from exc

    @asynccontextmanager
    async def transaction_if_free(self) -> AsyncIterator[_OnConnection]:
        async with self.transaction() as tx:
            await tx.run("SET LOCAL lock_timeout = '1ms'")  # 0 would mean: wait for ever
            yield tx

    async def announce_registry_change(self) -> None:
        await self.run("SELECT pg_notify(%s, %s)", (CHANNEL, REGISTRY))

    async def close(self) -> None:
        await self.pool.close()


def _announced(change: str, *, keep: bool) -> str:
    """One statement for a change of a prompt: `change` (a data-modifying CTE named `changed`
    that returns the prompt's id, person and record), the key kept with it when `keep`, the
    next event number, the event and its notification; only when `changed` returned a row.
    Taking the event number locks the counter row until the statement commits, so no process's
    next event becomes visible before this one."""
    kept = (
        f"kept AS (INSERT INTO {REMEMBER_COLUMNS} SELECT %s, %s, %s, %s FROM changed "
        "ON CONFLICT (scope) DO UPDATE SET body = excluded.body, "
        "created_ms = excluded.created_ms, request_hash = excluded.request_hash), "
        if keep
        else ""
    )
    return (
        f"WITH changed AS ({change}), {kept}"
        "counted AS (UPDATE event_counter SET seq = seq + 1 "
        "WHERE EXISTS (SELECT 1 FROM changed) RETURNING seq), "
        "logged AS (INSERT INTO events (seq, type, prompt_id, person, created_ms, record) "
        "SELECT counted.seq, %s, changed.id, changed.person, %s, changed.record "
        "FROM counted, changed RETURNING seq, person) "
        "SELECT seq, person, pg_notify(%s, seq::text) FROM logged"
    )


_CREATE = {
    keep: _announced(_pg(INSERT_PROMPT) + " RETURNING id, person, record", keep=keep)
    for keep in (False, True)
}
# A prompt's version, read from its record's text rather than as JSON: PostgreSQL's JSON
# operators refuse a record holding `\u0000` (a person may type one), which failed its answer
# with a 500. The compact dump has `"version":N` once at the top; a string holding those
# characters has its quotes escaped, so it never matches.
_VERSION = "substring(record from '\"version\":([0-9]+)')::int"
_RESOLVE = {
    keep: _announced(_pg(RESOLVE_PROMPT.format(version=_VERSION)) + ", id, record", keep=keep)
    for keep in (False, True)
}


_EXTEND = {
    False: _announced(_pg(EXTEND_PROMPT.format(version=_VERSION)) + ", id, record", keep=False)
}
# FOR UPDATE: a resolution committed meanwhile is seen (the row is read again once its lock
# is let go), so no draft event follows its prompt's resolution (#52).
_DRAFT = {
    False: _announced(
        "SELECT id, person, %s::text AS record FROM prompts WHERE id = %s AND status = 'pending' "
        "FOR UPDATE",
        keep=False,
    )
}
_AMEND = {
    keep: _announced(_pg(AMEND_PROMPT.format(version=_VERSION)) + ", id, record", keep=keep)
    for keep in (False, True)
}


class PostgresStore(SharedQueries):
    """storage.Store in PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._pruned_through = 0

    @classmethod
    async def open(cls, url: str, settings: PostgresSettings | None = None) -> PostgresStore:
        """Connected, migrated, ready."""
        db = PostgresDatabase(url, settings or PostgresSettings())
        await db.open()
        store = cls(db)
        try:
            await store._migrate()
            store._pruned_through = await store._read_pruned_through()
        except BaseException:
            await db.close()
            raise
        return store

    async def _migrate(self) -> None:
        async with self._db.transaction() as db:
            await db.run("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await db.run(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            row = (await db.run("SELECT value FROM meta WHERE key = 'schema_version'")).fetchone()
            version = int(row[0]) if row else 0
            if version > len(MIGRATIONS):
                raise RuntimeError(
                    f"the database's schema is version {version}, newer than this gateway "
                    f"knows ({len(MIGRATIONS)}): upgrade the gateway"
                )
            for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
                await db.run(migration)
                await db.run(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(number),),
                )
                log.info("PostgreSQL schema migrated to version %d", number)

    @property
    def db(self) -> PostgresDatabase:
        return self._db

    async def close(self) -> None:
        await self._db.close()

    async def _value(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """The first column of the one row a statement gives."""
        row = (await self._db.run(sql, params)).fetchone()
        assert row is not None, sql
        return row[0]

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
        params = prompt_row(record, record_json, owner, person, expires_ms, link_hash)
        event = await self._change(_CREATE, params, CREATED, record, record_json, remember, now_ms)
        if event is None:  # the session's pending prompt is there (or another process's, just now)
            in_the_way = await self.pending_in_session(person, record.session_key, record.agent_id)
            raise pending_exists(in_the_way)
        return event

    async def resolve(
        self, record: PromptRecord, record_json: str, *, remember: Remember | None, now_ms: int
    ) -> StoredEvent | None:
        params = resolve_row(record, record_json, now_ms)
        return await self._change(_RESOLVE, params, RESOLVED, record, record_json, remember, now_ms)

    async def extend(
        self, record: PromptRecord, record_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        params = extend_row(record, record_json)
        return await self._change(_EXTEND, params, UPDATED, record, record_json, None, now_ms)

    async def draft(
        self, record: PromptRecord, event_json: str, *, now_ms: int
    ) -> StoredEvent | None:
        params = (event_json, record.id)
        return await self._change(_DRAFT, params, DRAFTED, record, event_json, None, now_ms)

    async def amend(
        self,
        record: PromptRecord,
        record_json: str,
        *,
        was_version: int,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent | None:
        params = amend_row(record, record_json, was_version)
        return await self._change(_AMEND, params, UPDATED, record, record_json, remember, now_ms)

    async def _change(
        self,
        statements: dict[bool, str],
        params: tuple[Any, ...],
        type_: str,
        record: PromptRecord,
        record_json: str,
        remember: Remember | None,
        now_ms: int,
    ) -> StoredEvent | None:
        """One statement (`_announced`): the event as stored, or None when `changed` changed
        no row."""
        kept = remember_row(remember, now_ms) if remember is not None else ()
        found = await self._db.run(
            statements[remember is not None], (*params, *kept, type_, now_ms, CHANNEL)
        )
        row = found.fetchone()
        return None if row is None else StoredEvent(row[0], type_, record_json, row[1], record.id)

    # ---- events ----------------------------------------------------------------------------

    async def newest_seq(self) -> int:
        return int(await self._value("SELECT seq FROM event_counter"))

    @property
    def pruned_through(self) -> int:
        return self._pruned_through

    async def _read_pruned_through(self) -> int:
        row = (await self._db.run("SELECT value FROM meta WHERE key = 'pruned_through'")).fetchone()
        return int(row[0]) if row else 0

    # ---- retention -------------------------------------------------------------------------

    async def prune_batch(
        self, *, prompts_before_ms: int, events_before_ms: int, batch: int = PRUNE_BATCH
    ) -> int:
        """Like the SQLite store's, by one process at a time: another process pruning now
        makes this one a no-op (0)."""
        gone = 0
        async with self._db.transaction() as db:
            locked = await db.run("SELECT pg_try_advisory_xact_lock(%s)", (RETENTION_LOCK,))
            if not locked.fetchone()[0]:
                return 0
            gone += (
                await db.run(
                    "DELETE FROM prompts WHERE n IN (SELECT n FROM prompts WHERE status <> "
                    "'pending' AND resolved_ms < %s LIMIT %s)",
                    (prompts_before_ms, batch),
                )
            ).rowcount
            last = (
                await db.run(
                    "SELECT MAX(seq) FROM (SELECT seq FROM events WHERE created_ms < %s "
                    "ORDER BY seq LIMIT %s) oldest",
                    (events_before_ms, batch),
                )
            ).fetchone()[0]
            if last is not None:
                gone += (await db.run("DELETE FROM events WHERE seq <= %s", (last,))).rowcount
                await db.run(
                    "INSERT INTO meta (key, value) VALUES ('pruned_through', %s) ON CONFLICT "
                    "(key) DO UPDATE SET value = GREATEST(meta.value::bigint, "
                    "excluded.value::bigint)::text",
                    (str(last),),
                )
                await db.run("SELECT pg_notify(%s, %s)", (CHANNEL, PRUNED))
            gone += (
                await db.run(
                    "DELETE FROM idempotency WHERE scope IN (SELECT scope FROM idempotency "
                    "WHERE created_ms < %s LIMIT %s)",
                    (events_before_ms, batch),
                )
            ).rowcount
        self._pruned_through = await self._read_pruned_through()
        return gone

    async def reclaim_some(self) -> bool:
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
                    self._pruned_through = await self._read_pruned_through()
                    on_registry()
                    on_events(await self.newest_seq())
                    async for note in listener.notifies():
                        await self._heard(note.payload, on_events, on_registry)
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, ProtocolError, OSError) as exc:
                log.warning("PostgreSQL: not hearing other gateways (%s); retrying", exc)
            await asyncio.sleep(RELISTEN_SECONDS)

    async def _heard(
        self, payload: str, on_events: Callable[[int], None], on_registry: Callable[[], None]
    ) -> None:
        if payload == REGISTRY:
            on_registry()
        elif payload == PRUNED:
            self._pruned_through = await self._read_pruned_through()
        elif payload.isdigit():
            on_events(int(payload))
