"""Many gateway processes on one PostgreSQL database (PROTOCOL.md v1.3), black-box over HTTP:
what one process accepts, any other serves; first answer wins across them; kill -9 of one
loses nothing acknowledged while the other keeps serving; people stay apart."""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support import (
    ADMIN_TOKEN,
    AGENT_TOKEN,
    DEVICE_TOKEN,
    GatewayProcess,
    RunningGateway,
    client,
    prompt_body,
    start_gateway,
    wait_until,
)

ANSWER = {"answers": {"deploy_target": ["Production"]}}


@pytest.fixture
def pair(tmp_path, database_url):
    """Two `python -m app gateway` processes sharing one database."""
    gateways = [
        GatewayProcess(tmp_path / name, extra_args=["--database-url", database_url])
        for name in ("a", "b")
    ]
    for gateway in gateways:
        gateway.start()
    yield gateways
    for gateway in gateways:
        gateway.kill()


def test_created_through_one_answered_through_the_other_wakes_the_agent_on_the_first(
    tmp_path, database_url
):
    """In-process gateways, so the test can see the poll and the agent's wait parked before
    the event that must wake them comes from the other process."""
    a = start_gateway(tmp_path / "a", database_url=database_url)
    b = start_gateway(tmp_path / "b", database_url=database_url)
    core_a, core_b = (g.server.app.state.gateway for g in (a, b))
    try:
        cursor = b.device.get("/v1/prompts").json()["cursor"]
        with ThreadPoolExecutor(2) as pool:
            # b's device is parked at b's head when a's agent asks: it hears of it through b.
            polled = pool.submit(b.device.get, "/v1/events", params={"after": cursor, "wait": 30})
            wait_until(lambda: core_b.feed.parked == 1)
            created = a.create()
            page = polled.result(timeout=30).json()
            assert [(e["type"], e["prompt"]["id"]) for e in page["events"]] == [
                ("prompt.created", created["id"])
            ]
            waiting = pool.submit(
                a.agent.get, f"/v1/prompts/{created['id']}/result", params={"wait": 30}
            )
            wait_until(lambda: core_a.waiters.waiting == 1)
            answered = b.device.post(f"/v1/prompts/{created['id']}/answer", json=ANSWER)
            assert answered.status_code == 200, answered.text
            # The agent waits on a; the answer went to b: a heard it (LISTEN/NOTIFY).
            assert waiting.result(timeout=30).json() == {"status": "answered", "answers": ANSWER}
        # a's device reads the same events in the same order, with the same cursors.
        after_created = a.device.get("/v1/events", params={"after": page["cursor"]}).json()
        assert [e["type"] for e in after_created["events"]] == ["prompt.resolved"]
        from_b = b.device.get("/v1/events", params={"after": page["cursor"]}).json()
        for page_of in (from_b, after_created):
            page_of.pop("serverTime")
        assert from_b == after_created
    finally:
        a.stop()
        b.stop()


def test_fifty_different_answers_through_both_exactly_one_wins(pair):
    a, b = pair
    created = client(a.url, AGENT_TOKEN).post("/v1/prompts", json=prompt_body()).json()
    barrier = threading.Barrier(50)

    def answer(n: int) -> tuple[int, str]:
        choice = "Production" if n % 2 else "Staging (Recommended)"
        with client((a, b)[n % 2].url, DEVICE_TOKEN) as device:
            barrier.wait(timeout=30)
            response = device.post(
                f"/v1/prompts/{created['id']}/answer",
                json={"answers": {"deploy_target": [choice]}},
            )
        return response.status_code, choice

    with ThreadPoolExecutor(50) as pool:
        outcomes = list(pool.map(answer, range(50)))
    winners = [choice for status, choice in outcomes if status == 200]
    assert len(winners) == 1, outcomes
    assert sorted({status for status, _ in outcomes}) == [200, 409]
    for gateway in (a, b):  # both tell the same winner
        record = client(gateway.url, DEVICE_TOKEN).get(f"/v1/prompts/{created['id']}").json()
        assert record["answers"] == {"deploy_target": winners}
    events = client(b.url, DEVICE_TOKEN).get("/v1/events", params={"after": 0}).json()
    assert [e["type"] for e in events["events"]] == ["prompt.created", "prompt.resolved"]


def test_kill_9_of_one_loses_nothing_acknowledged_and_the_other_keeps_serving(pair):
    a, b = pair
    acknowledged: dict[str, str] = {}  # prompt id → what was acknowledged last
    errors: list[str] = []
    stop = threading.Event()
    sessions = itertools.count()

    def load(gateway: GatewayProcess, worker: int) -> None:
        agent, device = client(gateway.url, AGENT_TOKEN), client(gateway.url, DEVICE_TOKEN)
        try:
            while not stop.is_set():
                try:
                    session = f"s{worker}-{next(sessions)}"
                    made = agent.post("/v1/prompts", json=prompt_body(session=session))
                    if made.status_code != 201:
                        errors.append(made.text)
                        continue
                    prompt_id = made.json()["id"]
                    acknowledged[prompt_id] = "pending"
                    which = len(acknowledged) % 3
                    if which == 0:
                        done = device.post(f"/v1/prompts/{prompt_id}/answer", json=ANSWER)
                        status = "answered"
                    elif which == 1:
                        done = agent.post(f"/v1/prompts/{prompt_id}/cancel", json={})
                        status = "cancelled"
                    else:
                        continue
                    if done.status_code == 200:
                        acknowledged[prompt_id] = status
                except httpx.TransportError:
                    if gateway is b:
                        errors.append("b stopped answering")
                    return  # a was killed under us: what it acknowledged is counted
        finally:
            agent.close()
            device.close()

    threads = [
        threading.Thread(target=load, args=(gateway, n)) for n, gateway in enumerate((a, a, b, b))
    ]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(acknowledged) >= 60, timeout=60)
    a.kill()  # SIGKILL, mid-load
    before = len(acknowledged)
    wait_until(lambda: len(acknowledged) >= before + 30, timeout=60)  # b goes on
    stop.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors[:3]
    device = client(b.url, DEVICE_TOKEN)
    for prompt_id, status in list(acknowledged.items()):
        record = device.get(f"/v1/prompts/{prompt_id}")
        assert record.status_code == 200, (prompt_id, record.text)
        if status != "pending":
            assert record.json()["status"] == status, (prompt_id, record.json()["status"])
    events, cursor = [], 0
    while page := device.get("/v1/events", params={"after": cursor, "limit": 500}).json():
        events += page["events"]
        if not page["events"]:
            break
        cursor = page["cursor"]
    created = [e["prompt"]["id"] for e in events if e["type"] == "prompt.created"]
    resolved = [e["prompt"]["id"] for e in events if e["type"] == "prompt.resolved"]
    assert len(created) == len(set(created)) and len(resolved) == len(set(resolved))
    assert set(acknowledged) <= set(created)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))


def test_a_revoked_device_and_a_removed_person_stop_at_once_on_every_process(pair):
    a, b = pair
    admin_a = client(a.url, ADMIN_TOKEN)
    person = admin_a.post("/v1/people", json={"name": "Bob"}).json()["personId"]
    code = admin_a.post("/v1/pairings", json={"personId": person}).json()["code"]
    paired = httpx.post(f"{b.url}/v1/devices", json={"code": code, "name": "Bob's"})
    assert paired.status_code == 201, paired.text
    phone_a = client(a.url, paired.json()["token"])  # paired on b, known on a
    wait_until(lambda: phone_a.get("/v1/prompts").status_code == 200)
    bobs_agent = client(b.url, admin_a.post(f"/v1/people/{person}/agent-tokens").json()["token"])
    wait_until(lambda: bobs_agent.post("/v1/prompts", json=prompt_body()).status_code == 201)
    # The default person's device sees nothing of Bob's, on either process.
    for gateway in (a, b):
        assert client(gateway.url, DEVICE_TOKEN).get("/v1/prompts").json()["prompts"] == []
    assert len(phone_a.get("/v1/prompts").json()["prompts"]) == 1
    with ThreadPoolExecutor(1) as pool:
        cursor = phone_a.get("/v1/prompts").json()["cursor"]
        parked = pool.submit(phone_a.get, "/v1/events", params={"after": cursor, "wait": 30})
        removed = client(b.url, ADMIN_TOKEN).delete(f"/v1/people/{person}")
        assert removed.status_code == 204
        ended = parked.result(timeout=30)
    # a hears two things from b, in order: Bob's prompt cancelled, then Bob gone. Its parked
    # poll ends with 401, or first reads the cancellation of Bob's own prompt (never anything
    # of anyone else's); from then on every request of Bob's is 401, on either process.
    if ended.status_code == 200:
        assert [
            (e["type"], e["prompt"]["resolvedBy"]["reason"]) for e in ended.json()["events"]
        ] == [("prompt.resolved", "person-removed")]
    else:
        assert ended.status_code == 401
    wait_until(lambda: phone_a.get("/v1/prompts").status_code == 401)
    for gateway in (a, b):
        bobs = client(gateway.url, bobs_agent.headers["authorization"].split()[1])
        assert bobs.post("/v1/prompts", json=prompt_body()).status_code == 401


def test_a_prompt_expires_once_whichever_process_gets_there_first(tmp_path, database_url):
    """Two gateways on one clock and one database: both arm the deadline, one expires it."""
    first = start_gateway(tmp_path / "a", database_url=database_url)
    second: RunningGateway | None = None
    try:
        second = start_gateway(tmp_path / "b", clock=first.clock, database_url=database_url)
        created = [first.create(sessionKey=f"s{n}", timeoutSeconds=30) for n in range(5)]
        for record in created:  # the second heard of each (and armed its deadline)
            wait_until(
                lambda r=record: second.device.get(f"/v1/prompts/{r['id']}").status_code == 200
            )
        first.clock.advance(31)
        for record in created:
            wait_until(
                lambda r=record: (
                    second.device.get(f"/v1/prompts/{r['id']}").json()["status"] == "expired"
                )
            )
        # What the store says now, the second's feed hears a moment later (LISTEN/NOTIFY).
        expired: list[str] = []

        def second_heard_all() -> bool:
            events = second.device.get("/v1/events", params={"after": 0}).json()["events"]
            expired[:] = [e["prompt"]["id"] for e in events if e["type"] == "prompt.resolved"]
            return len(expired) >= len(created)

        wait_until(second_heard_all)
        assert sorted(expired) == sorted(r["id"] for r in created)  # once each
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_a_lost_database_connection_answers_503_then_recovers_and_catches_up(
    tmp_path, database_url
):
    """The server drops every gateway connection (a restart, a network blip): a request
    meanwhile is 503 `unavailable` at worst, never a 500; the next ones work; a process whose
    listener was cut catches up on what it missed."""
    import psycopg

    a = start_gateway(tmp_path / "a", database_url=database_url)
    b = start_gateway(tmp_path / "b", database_url=database_url)
    try:
        created = a.create()
        with psycopg.connect(database_url, autocommit=True) as conn:
            dropped = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert dropped is not None and dropped[0] >= 4  # each process: its connection, listener
        first = a.device.get(f"/v1/prompts/{created['id']}")
        assert first.status_code in (200, 503), first.text
        if first.status_code == 503:
            assert first.json()["error"]["code"] == "unavailable"
        for gateway in (a, b):
            wait_until(
                lambda g=gateway: g.device.get(f"/v1/prompts/{created['id']}").status_code == 200
            )
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(
                b.agent.get, f"/v1/prompts/{created['id']}/result", params={"wait": 30}
            )
            wait_until(lambda: b.server.app.state.gateway.waiters.waiting == 1)
            answer = lambda: a.device.post(  # noqa: E731
                f"/v1/prompts/{created['id']}/answer", json=ANSWER
            )
            wait_until(lambda: answer().status_code == 200)
            assert waiting.result(timeout=30).json() == {"status": "answered", "answers": ANSWER}
    finally:
        a.stop()
        b.stop()
