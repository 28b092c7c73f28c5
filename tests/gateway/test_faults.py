"""Faults a fourth probe found (#39), each held to a test over a real gateway on 127.0.0.1:
expiry that must go on after a write the store could not take, and a device's first request
that must not wait on a lock held by someone else."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator

import psycopg
import pytest

from tests.support import RunningGateway, client, start_gateway, wait_until

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
    config = {}
    if store_kind == "postgres":
        config["database_url"] = request.getfixturevalue("database_url")
    patch = request.getfixturevalue("monkeypatch")
    patch.setattr("app.gateway.store.sqlite.WRITE_LOCK_WAIT_MS", 60_000)
    patch.setattr("app.gateway.store.postgres.LOCK_WAIT", "60s")
    patch.setattr("app.gateway.store.postgres.STATEMENT_WAIT", "70s")
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
