"""Faults a fourth probe found (#39), each held to a test over a real gateway on 127.0.0.1:
expiry that must go on after a write the store could not take, and a device's first request
that must not wait on a lock held by someone else."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from app.gateway.store.postgres_settings import PostgresSettings
from tests.support import (
    AGENT_TOKEN,
    RunningGateway,
    client,
    prompt_body,
    start_gateway,
    wait_until,
)

pytestmark = pytest.mark.both_stores


@contextlib.contextmanager
def store_locked(gateway: RunningGateway, table: str = "prompts") -> Iterator[None]:
    """Another client holds what the gateway's writes need, as a backup, a shell or a
    migration could: SQLite's write lock, or a PostgreSQL table."""
    if url := gateway.config.get("database_url"):
        with psycopg.connect(url) as other:
            other.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")  # reads go on
            yield
            other.rollback()
        return
    other = sqlite3.connect(gateway.data_dir / "gateway.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _status(gateway: RunningGateway, prompt_id: str) -> str:
    """As the store holds it: a read over HTTP would expire an overdue prompt on sight."""
    return gateway.sql("SELECT status FROM prompts WHERE id = ?", (prompt_id,))[0][0]


def test_expiry_goes_on_after_a_pass_the_store_could_not_take(gateway, caplog):
    caplog.set_level(logging.WARNING, logger="ask_user.gateway")
    cursor = gateway.device.get("/v1/prompts").json()["cursor"]
    prompts = [
        gateway.create(sessionKey=f"s{seconds}", timeoutSeconds=seconds)["id"]
        for seconds in (30, 36, 45)
    ]
    with store_locked(gateway):
        gateway.clock.advance(31)  # the first is due while nothing can be written
        wait_until(lambda: "expiry could not be written" in caplog.text, timeout=30)
        assert _status(gateway, prompts[0]) == "pending"
    # The store takes writes again: the missed prompt expires without the clock moving.
    wait_until(lambda: _status(gateway, prompts[0]) == "expired", timeout=15)
    gateway.clock.advance(19)  # and the later deadlines still fire
    wait_until(lambda: all(_status(gateway, p) == "expired" for p in prompts), timeout=15)
    resolved: set[str] = set()

    def devices_heard() -> bool:
        nonlocal cursor
        page = gateway.device.get("/v1/events", params={"after": cursor}).json()
        cursor = page["cursor"]
        resolved.update(e["prompt"]["id"] for e in page["events"] if e["type"] == "prompt.resolved")
        return resolved == set(prompts)

    wait_until(devices_heard, timeout=15)
    assert "Exception in callback" not in caplog.text


@pytest.mark.parametrize("store_kind", ["sqlite", "postgres"], indirect=True)
def test_a_devices_first_request_does_not_wait_on_a_held_lock(tmp_path, store_kind, request):
    """Its lastSeenAt is noted on the way; with the store locked by someone else, that note
    must not hold the request (or the loop) for the store's lock wait: made a minute here, so
    a note that waits shows as a request that never comes back."""
    config: dict = {
        "postgres": PostgresSettings(lock_timeout_ms=60_000, statement_timeout_ms=70_000)
    }
    if store_kind == "postgres":
        config["database_url"] = request.getfixturevalue("database_url")
    patch = request.getfixturevalue("monkeypatch")
    patch.setattr("app.gateway.store.sqlite.WRITE_LOCK_WAIT_MS", 60_000)
    gateway = start_gateway(tmp_path / "gateway", **config)
    try:
        code = gateway.admin.post("/v1/pairings", json={}).json()["code"]
        paired = gateway.client(None).post("/v1/devices", json={"code": code, "name": "Phone"})
        assert paired.status_code in (200, 201), paired.text
        device = client(gateway.url, paired.json()["token"], timeout=10)
        with device, store_locked(gateway, table="devices"):
            listed = device.get("/v1/prompts")
            assert listed.status_code == 200, listed.text
            assert gateway.client(None).get("/v1/health").status_code == 200
    finally:
        gateway.stop()


def test_a_locked_table_holds_only_the_requests_that_need_it(tmp_path, database_url):
    """#42: with PostgreSQL a statement waiting for a lock someone else holds (a migration,
    `VACUUM FULL`, an open psql transaction) waits off the event loop. While a create waits on
    `prompts`, health, a device's poll and a read of another table are answered; the create
    answers 503 once its lock wait is up, and nothing was written."""
    settings = PostgresSettings(lock_timeout_ms=4_000)
    gateway = start_gateway(tmp_path / "gateway", database_url=database_url, postgres=settings)
    try:
        cursor = gateway.device.get("/v1/prompts").json()["cursor"]
        with (
            psycopg.connect(database_url) as holder,
            psycopg.connect(database_url, autocommit=True) as watcher,
            client(gateway.url, AGENT_TOKEN, timeout=30) as agent,
            ThreadPoolExecutor(1) as pool,
        ):
            holder.execute("LOCK TABLE prompts IN ACCESS EXCLUSIVE MODE")
            creating = pool.submit(agent.post, "/v1/prompts", json=prompt_body("locked"))

            def create_waits_for_the_lock() -> bool:
                row = watcher.execute(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted "
                    "AND relation = 'prompts'::regclass"
                ).fetchone()
                return row is not None and row[0] > 0

            wait_until(create_waits_for_the_lock)
            health = gateway.client(None).get("/v1/health")
            poll = gateway.device.get("/v1/events", params={"after": cursor, "wait": 0})
            devices = gateway.admin.get("/v1/devices")
            assert not creating.done()  # all three were answered while it waited
            assert (health.status_code, poll.status_code, devices.status_code) == (200, 200, 200)
            created = creating.result(timeout=30)
            assert created.status_code == 503, created.text
            assert created.json()["error"]["code"] == "unavailable"
            holder.rollback()
        assert gateway.sql("SELECT count(*) FROM prompts")[0][0] == 0
        assert gateway.create()["status"] == "pending"  # and the next one goes through
    finally:
        gateway.stop()


def test_a_wait_hears_an_answer_that_landed_while_its_read_was_on_the_wire(tmp_path, database_url):
    """#42: a result wait is decided on a read of the store; with the database across a link
    (2 ms each way here) an answer can commit between that read and the wait's start. Each of
    40 waits, sent just behind an answer, ends with the answer rather than sleeping through
    its 60 s."""
    from urllib.parse import urlsplit

    from tests.bench.delay_proxy import DelayProxy
    from tests.bench.pgnet_bench import through

    with DelayProxy(urlsplit(database_url).port or 5432, 0.002) as port:
        far = through(database_url, port)
        gateway = start_gateway(tmp_path / "gateway", database_url=far)
        try:
            with (
                client(gateway.url, AGENT_TOKEN, timeout=90) as waiter,
                ThreadPoolExecutor(1) as pool,
            ):
                answer = {"answers": {"deploy_target": ["Staging"]}}
                for n in range(40):
                    prompt_id = gateway.create(sessionKey=f"s{n}")["id"]
                    answering = pool.submit(
                        gateway.device.post, f"/v1/prompts/{prompt_id}/answer", json=answer
                    )
                    # The wait sent 0-9 ms behind the answer: some read while it commits.
                    time.sleep((n % 10) / 1000)
                    path = f"/v1/prompts/{prompt_id}/result"
                    result = waiter.get(path, params={"wait": 60}, timeout=30)
                    assert result.json()["status"] == "answered"
                    assert answering.result(timeout=30).status_code == 200
        finally:
            gateway.stop()


def test_a_request_pipelined_behind_a_change_waiting_for_the_database_is_not_answered_first(
    tmp_path, database_url
):
    """#42: HTTP/1.1 answers in order. A create waits for a locked table (PostgreSQL, off the
    loop) while a health check comes behind it in the same packet: the create's answer is the
    first, and the connection then closes with the health check never served (the client
    sends it again), rather than the health check's 200 coming first."""
    import socket

    settings = PostgresSettings(lock_timeout_ms=2_000)
    gateway = start_gateway(tmp_path / "gateway", database_url=database_url, postgres=settings)
    try:
        body = json.dumps(prompt_body("pipelined")).encode()
        port = gateway.url.rsplit(":", 1)[1]
        create = (
            f"POST /v1/prompts HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {AGENT_TOKEN}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        health = f"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        with psycopg.connect(database_url) as holder:
            holder.execute("LOCK TABLE prompts IN ACCESS EXCLUSIVE MODE")
            with socket.create_connection(("127.0.0.1", int(port)), timeout=30) as conn:
                conn.sendall(create + health)  # one packet
                received = b""
                while chunk := conn.recv(65536):
                    received += chunk
            holder.rollback()
        assert received.startswith(b"HTTP/1.1 503"), received[:200]
        assert received.count(b"HTTP/1.1 ") == 1  # the health check was not answered first
        assert gateway.client(None).get("/v1/health").status_code == 200  # sent again: fine
    finally:
        gateway.stop()
