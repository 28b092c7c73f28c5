"""The store gives space back and prunes in short batches (#14, 5)."""

from __future__ import annotations

import asyncio
import os
import sqlite3

import pytest

from app.gateway.core.clock import to_datetime
from app.gateway.core.eager import finished
from app.gateway.store.sqlite import PRUNE_BATCH, PromptStore
from app.gateway.store.storage import Remember, StoreUnavailable
from app.protocol import DEFAULT_PERSON_ID, PromptRecord, validate_prompt
from tests.support import prompt_body, wait_until


def _fill(store: PromptStore, count: int, at_ms: int) -> None:
    """`count` answered prompts, each with its event and an idempotency key."""
    request = validate_prompt(prompt_body("fill"))
    for i in range(count):
        record = PromptRecord(
            id=f"pr_{i:08d}",
            session_key=f"s{i}",
            questions=request.questions,
            status="answered",
            created_at=to_datetime(at_ms),
            expires_at=to_datetime(at_ms + 60_000),
            resolved_at=to_datetime(at_ms),
            answers={"deploy_target": ["Production"]},
        )
        _insert(
            store,
            record,
            remember=Remember(f"device:{record.id}:k", {"id": record.id}, ""),
            now_ms=at_ms,
            expires_ms=at_ms + 60_000,
        )


def test_pruning_goes_in_batches_and_the_file_shrinks(tmp_path):
    store = PromptStore(tmp_path / "gateway.sqlite3")
    count = PRUNE_BATCH * 2 + 500
    _fill(store, count, at_ms=1_000)
    store.connection.execute("UPDATE prompts SET resolved_ms = 1000")
    store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    full_pages = store.connection.execute("PRAGMA page_count").fetchone()[0]
    cutoffs = {"prompts_before_ms": 2_000, "events_before_ms": 2_000}
    batches = []
    while (gone := finished(store.prune_batch(**cutoffs))) >= PRUNE_BATCH:
        batches.append(gone)
    batches.append(gone)
    assert len(batches) == 3  # each batch a short transaction of at most PRUNE_BATCH per table
    assert all(b <= 3 * PRUNE_BATCH for b in batches)
    assert sum(batches) == 3 * count  # prompts, events and keys
    assert store.pruned_through == count
    while finished(store.reclaim_some(pages=500)):
        pass
    db = store.connection
    assert db.execute("PRAGMA freelist_count").fetchone()[0] == 0
    assert db.execute("PRAGMA page_count").fetchone()[0] < full_pages / 4
    assert os.path.getsize(tmp_path / "gateway.sqlite3-wal") == 0  # checkpointed and truncated
    store.close_now()
    reopened = PromptStore(tmp_path / "gateway.sqlite3")
    assert reopened.pruned_through == count
    reopened.close_now()


def test_events_and_keys_go_oldest_first_up_to_the_first_one_still_kept(tmp_path):
    """Retention reads the log and the keys in the order they were written, without an index
    of their times (#27): it takes the old ones before the first young one, and an old one
    behind a young one (the clock stepped back) waits for a later pass rather than leaving a
    gap in the log."""
    path = tmp_path / "gateway.sqlite3"
    store = PromptStore(path)
    for n, at_ms in enumerate((1_000, 1_500, 9_000, 1_200, 9_500)):  # seqs 1..5
        record = _pending(f"pr_logged{n}", status="answered")
        _insert(store, record, remember=Remember(f"key-{n}", {"n": n}, ""), now_ms=at_ms)
    again = _pending("pr_logged_again", status="answered")  # key-0 written again: young, last
    _insert(store, again, remember=Remember("key-0", {"n": 0}, ""), now_ms=9_700)
    store.connection.execute("DELETE FROM events WHERE seq = 6")  # only key-0's write counts

    assert finished(store.prune_batch(prompts_before_ms=0, events_before_ms=2_000)) == 2 + 1
    seqs = [r[0] for r in store.connection.execute("SELECT seq FROM events ORDER BY seq")]
    assert seqs == [3, 4, 5] and store.pruned_through == 2
    assert finished(store.remembered("key-1")) is None
    assert finished(store.remembered("key-0")) is not None
    assert finished(store.remembered("key-3")) is not None  # old, but behind key-2

    assert finished(store.prune_batch(prompts_before_ms=0, events_before_ms=9_600)) == 3 + 3
    assert store.pruned_through == 5
    kept = [finished(store.remembered(f"key-{n}")) is not None for n in range(5)]
    assert kept == [True] + [False] * 4
    for name, table in (("events_created", "events"), ("idempotency_created", "idempotency")):
        store.connection.execute(f"CREATE INDEX {name} ON {table}(created_ms)")  # as before
    store.close_now()
    reopened = PromptStore(path)
    names = {r[0] for r in reopened.connection.execute("SELECT name FROM sqlite_master")}
    assert not {"events_created", "idempotency_created"} & names  # dropped on opening
    assert finished(reopened.remembered("key-0")) is not None
    reopened.close_now()


def test_an_older_small_file_is_converted_to_give_space_back(tmp_path):
    path = tmp_path / "gateway.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    old.commit()
    old.close()
    store = PromptStore(path)
    assert store.connection.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
    store.close_now()


def test_the_write_ahead_log_is_checkpointed_off_the_loop(tmp_path):
    """Commits never checkpoint (a commit that did waited 20 ms and more, #27); the store's
    own thread copies the log into the database file instead, so the log does not grow
    without end."""
    path = tmp_path / "gateway.sqlite3"
    store = PromptStore(path)
    try:
        assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        empty = path.stat().st_size
        _fill(store, 400, at_ms=1_000)
        wait_until(lambda: path.stat().st_size > empty)  # the rows reached the file itself
        with sqlite3.connect(path) as reader:
            assert reader.execute("SELECT COUNT(*) FROM prompts").fetchone() == (400,)
    finally:
        store.close_now()
    assert not store._checkpointer._thread.is_alive()  # closing the store ends it


def _pending(prompt_id: str, at_ms: int = 1_000, status: str = "pending") -> PromptRecord:
    return PromptRecord(
        id=prompt_id,
        session_key=prompt_id,
        questions=validate_prompt(prompt_body("recent")).questions,
        status=status,
        created_at=to_datetime(at_ms),
        expires_at=to_datetime(at_ms + 60_000),
    )


def _insert(
    store: PromptStore,
    record: PromptRecord,
    remember: Remember | None = None,
    now_ms: int = 1_000,
    expires_ms: int = 61_000,
) -> None:
    """`record` created in the store, as the gateway's create would."""
    finished(
        store.create(
            record,
            record.model_dump_json(by_alias=True),
            owner="owner",
            person=DEFAULT_PERSON_ID,
            expires_ms=expires_ms,
            link_hash=None,
            remember=remember,
            now_ms=now_ms,
        )
    )


def _answered(record: PromptRecord) -> PromptRecord:
    return record.model_copy(
        update={
            "status": "answered",
            "resolved_at": to_datetime(2_000),
            "answers": {"deploy_target": ["Production"]},
            "version": record.version + 1,  # a resolution is one version on (#52)
        }
    )


def test_prompts_kept_in_memory_are_exactly_what_was_committed(tmp_path):
    """The store keeps recent prompts as records, so an answer and the agent's result do not
    read back what the create just wrote (#27); what it keeps is only ever what committed."""
    store = PromptStore(tmp_path / "gateway.sqlite3")
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        record = _pending("pr_kept")
        _insert(store, record)
        statements.clear()
        found = finished(store.get("pr_kept"))
        assert found is not None and found.record == record and found.owner == "owner"
        assert statements == []  # from memory: no query

        # A change whose event cannot be written is not made at all: in memory and on disk.
        store.connection.execute(
            "CREATE TRIGGER no_events BEFORE INSERT ON events "
            "BEGIN SELECT RAISE(ABORT, 'the log is full'); END"
        )
        answered = _answered(record)
        with pytest.raises(StoreUnavailable):
            finished(
                store.resolve(answered, "{}", remember=None, now_ms=2_000),
            )
        assert finished(store.get("pr_kept")).record.status == "pending"
        with pytest.raises(StoreUnavailable):
            _insert(store, _pending("pr_rolled_back"))
        assert finished(store.get("pr_rolled_back")) is None
        store.connection.execute("DROP TRIGGER no_events")

        answered_json = answered.model_dump_json(by_alias=True)
        event = finished(store.resolve(answered, answered_json, remember=None, now_ms=2_000))
        assert event is not None and event.person == DEFAULT_PERSON_ID
        assert finished(store.get("pr_kept")).record == answered
        assert finished(store.resolve(answered, "{}", remember=None, now_ms=3_000)) is None

        # Pruned, it is gone from memory too.
        finished(store.prune_batch(prompts_before_ms=3_000, events_before_ms=0))
        assert finished(store.get("pr_kept")) is None
    finally:
        store.close_now()
    reopened = PromptStore(tmp_path / "gateway.sqlite3")  # and the file agrees
    assert finished(reopened.get("pr_kept")) is None
    assert finished(reopened.get("pr_rolled_back")) is None
    reopened.close_now()


def test_an_older_file_gets_the_narrower_indexes_and_keeps_its_prompts(tmp_path):
    """A create and an answer write one page per index the prompt is in (#27): indexes no
    query needs for a pending prompt, or for one without a run, are replaced on opening."""
    path = tmp_path / "gateway.sqlite3"
    store = PromptStore(path)
    _insert(store, _pending("pr_old"))
    db = store.connection
    for name in ("prompts_run", "prompts_resolved"):  # as files made before had them
        db.execute(f"DROP INDEX {name}")
    db.execute("CREATE INDEX prompts_run ON prompts(owner, run_id) WHERE status = 'pending'")
    db.execute("CREATE INDEX prompts_resolved ON prompts(resolved_ms)")
    db.execute("CREATE INDEX prompts_person_pending ON prompts(person) WHERE status = 'pending'")
    store.close_now()

    reopened = PromptStore(path)
    try:
        indexes = dict(
            reopened.connection.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'prompts'"
            ).fetchall()
        )
        assert "prompts_person_pending" not in indexes
        assert indexes["prompts_run"].endswith("WHERE status = 'pending' AND run_id IS NOT NULL")
        assert indexes["prompts_resolved"].endswith("WHERE status != 'pending'")
        assert finished(reopened.get("pr_old")) is not None
        assert finished(reopened.pending_of_person(DEFAULT_PERSON_ID)) == ["pr_old"]
        plan = reopened.connection.execute(
            "EXPLAIN QUERY PLAN SELECT n FROM prompts WHERE status != 'pending' "
            "AND resolved_ms < 5 LIMIT 10"
        ).fetchall()
        assert "prompts_resolved" in str(plan)  # retention still finds them by index
    finally:
        reopened.close_now()


def test_a_postgresql_database_of_the_first_schema_gets_the_narrower_indexes(database_url):
    """The same narrowing for PostgreSQL (#27), as a migration: a database made by a gateway
    of schema version 1 is taken to the newest version, its prompts kept."""
    import psycopg

    from app.gateway.store.postgres import MIGRATIONS, PostgresStore

    with psycopg.connect(database_url, autocommit=True) as first:
        first.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        first.execute(MIGRATIONS[0])
        first.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
        first.execute(
            "INSERT INTO prompts (id, owner, person, session_key, status, expires_ms, record) "
            "VALUES ('pr_old', 'owner', %s, 's', 'pending', 61000, %s)",
            (DEFAULT_PERSON_ID, _pending("pr_old").model_dump_json(by_alias=True)),
        )

    async def migrated() -> None:
        store = await PostgresStore.open(database_url)
        try:
            found = await store.db.run(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'prompts'"
            )
            indexes = dict(found.fetchall())
            assert indexes["prompts_run"].endswith(
                "WHERE ((status = 'pending'::text) AND (run_id IS NOT NULL))"
            )
            assert indexes["prompts_resolved"].endswith("WHERE (status <> 'pending'::text)")
            version = await store.db.run("SELECT value FROM meta WHERE key = 'schema_version'")
            assert version.fetchone() == (str(len(MIGRATIONS)),)
            assert await store.get("pr_old") is not None
            assert await store.pending_of_person(DEFAULT_PERSON_ID) == ["pr_old"]
        finally:
            await store.close()

    asyncio.run(migrated())


def test_the_file_is_held_by_one_store_at_a_time(tmp_path):
    """What a store committed it keeps in memory and it hears no one else's writes, so a second
    store on the same file is refused (in this process as in another) until the first closes."""
    from app.gateway.store.ownership import FileInUse, ensure_free

    path = tmp_path / "gateway.sqlite3"
    ensure_free(path)  # nothing there yet
    store = PromptStore(path)
    with pytest.raises(FileInUse) as refused:
        PromptStore(path)
    assert refused.value.pid == os.getpid()
    assert str(tmp_path) in str(refused.value)
    with pytest.raises(FileInUse):
        ensure_free(path)
    store.close_now()
    ensure_free(path)
    PromptStore(path).close_now()
