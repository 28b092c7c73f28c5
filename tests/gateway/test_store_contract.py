"""The store's contract, the same tests on both stores (#42): a change is all or nothing with
its key and its event; first change wins, also when several run at once; one pending prompt
per session; events in order. With PostgreSQL the changes run concurrently on the pool, as
requests of one process do now that nothing holds the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from app.gateway.core.clock import to_datetime
from app.gateway.store.storage import CREATED, RESOLVED, Remember, Store
from app.protocol import DEFAULT_PERSON_ID, ErrorCode, PromptRecord, ProtocolError, validate_prompt
from tests.support import prompt_body

QUESTIONS = validate_prompt(prompt_body("contract")).questions


def _record(prompt_id: str, session: str, status: str = "pending") -> PromptRecord:
    return PromptRecord(
        id=prompt_id,
        session_key=session,
        questions=QUESTIONS,
        status=status,
        created_at=to_datetime(1_000),
        expires_at=to_datetime(61_000),
        answers={"deploy_target": ["Production"]} if status == "answered" else None,
        version=1 if status == "pending" else 2,  # a resolution is one version on (#52)
    )


async def _create(store: Store, record: PromptRecord, remember: Remember | None = None):
    return await store.create(
        record,
        record.model_dump_json(by_alias=True),
        owner="owner",
        person=DEFAULT_PERSON_ID,
        expires_ms=61_000,
        link_hash=f"link-{record.id}",
        remember=remember,
        now_ms=1_000,
    )


async def _resolve(store: Store, record: PromptRecord, remember: Remember | None = None):
    return await store.resolve(
        record, record.model_dump_json(by_alias=True), remember=remember, now_ms=2_000
    )


@pytest.fixture(params=["sqlite", "postgres"])
def run_on_store(request, tmp_path) -> Callable[[Callable[[Store], Awaitable[None]]], None]:
    """Runs a test body against a fresh store of each kind."""

    def run(body: Callable[[Store], Awaitable[None]]) -> None:
        async def main() -> None:
            if request.param == "sqlite":
                from app.gateway.store.sqlite import PromptStore

                store: Store = PromptStore(tmp_path / "gateway.sqlite3")
            else:
                from app.gateway.store.postgres import PostgresStore

                store = await PostgresStore.open(request.getfixturevalue("database_url"))
            try:
                await body(store)
            finally:
                await store.close()

        asyncio.run(main())

    return run


def test_a_change_commits_its_row_key_and_event_together(run_on_store):
    async def body(store: Store) -> None:
        first = await store.newest_seq()
        record = _record("pr_a", "s1")
        created = await _create(
            store, record, Remember("create:owner:r1", {"promptId": "pr_a"}, "h")
        )
        assert (created.seq, created.type, created.prompt_id) == (first + 1, CREATED, "pr_a")
        assert await store.remembered("create:owner:r1") == ({"promptId": "pr_a"}, "h")
        assert (await store.get("pr_a")).record == record
        assert await store.prompt_of_link("link-pr_a") == "pr_a"

        answered = _record("pr_a", "s1", status="answered")
        resolved = await _resolve(store, answered, Remember("device:pr_a:k", {"ok": 1}, "h2"))
        assert resolved is not None and resolved.type == RESOLVED
        assert (resolved.seq, resolved.person) == (first + 2, DEFAULT_PERSON_ID)
        assert (await store.get("pr_a")).record.status == "answered"
        assert await store.remembered("device:pr_a:k") == ({"ok": 1}, "h2")
        assert await store.newest_seq() == first + 2
        seen = [(e.seq, e.type) for e in await store.events_after(first, 10, DEFAULT_PERSON_ID)]
        assert seen == [(first + 1, CREATED), (first + 2, RESOLVED)]
        assert await store.events_after(first, 10, "ps_someone_else") == []

    run_on_store(body)


def test_one_pending_prompt_per_session_and_nothing_written_for_the_refused_one(run_on_store):
    async def body(store: Store) -> None:
        await _create(store, _record("pr_first", "shared"))
        head = await store.newest_seq()
        with pytest.raises(ProtocolError) as refused:
            await _create(store, _record("pr_second", "shared"), Remember("k2", {"x": 1}, ""))
        assert refused.value.code == ErrorCode.PENDING_EXISTS
        assert refused.value.extra == {"promptId": "pr_first"}
        assert await store.get("pr_second") is None
        assert await store.remembered("k2") is None  # the key went with the refused change
        assert await store.newest_seq() == head  # and no event

    run_on_store(body)


def test_the_first_of_many_concurrent_resolutions_wins_alone(run_on_store):
    """Ten answers of one prompt at once: one event, one winner, the rest told None."""

    async def body(store: Store) -> None:
        await _create(store, _record("pr_raced", "s"))
        head = await store.newest_seq()
        outcomes = await asyncio.gather(
            *(_resolve(store, _record("pr_raced", "s", status="answered")) for _ in range(10))
        )
        assert sum(o is not None for o in outcomes) == 1
        assert await store.newest_seq() == head + 1
        assert await store.pending_of_person(DEFAULT_PERSON_ID) == []

    run_on_store(body)


def test_concurrent_creates_get_consecutive_events_in_order(run_on_store):
    async def body(store: Store) -> None:
        head = await store.newest_seq()
        records = [_record(f"pr_{n:02d}", f"s{n}") for n in range(20)]
        events = await asyncio.gather(*(_create(store, r) for r in records))
        assert sorted(e.seq for e in events) == list(range(head + 1, head + 21))
        logged = await store.events_since(head, 100)
        assert [e.seq for e in logged] == list(range(head + 1, head + 21))
        assert {e.prompt_id for e in logged} == {r.id for r in records}
        listed = await store.list_json(
            person=DEFAULT_PERSON_ID, pending_only=True, session_key=None, limit=50, before=None
        )
        assert len(listed) == 20

    run_on_store(body)
