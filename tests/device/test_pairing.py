"""Pairing the device core with a real gateway: a code becomes this device's own token; moving
to another gateway starts from its prompt list; a revoked token is shown as refused."""

from __future__ import annotations

import asyncio

import pytest

from app.device import Connection, DeviceCore, DisplayStatus, LocalStore, PairingError
from tests.support import start_gateway

from .test_sync import core, create, status, until


def _code(gateway) -> str:
    return gateway.admin.post("/v1/pairings", json={}).json()["code"]


def test_a_code_pairs_and_the_device_works_with_its_own_token(gateway, tmp_path):
    code = _code(gateway)

    async def scenario():
        device = DeviceCore(LocalStore(tmp_path / "d.db"), poll_wait=2)
        device.start()
        try:
            await until(lambda: device.connection.kind == Connection.UNCONFIGURED)
            settings = await device.pair(gateway.url + "/", code.lower())
            assert settings.gateway_url == gateway.url and settings.token.startswith("dvt_")
            await until(lambda: device.connection.kind == Connection.CONNECTED)
            prompt_id = await asyncio.to_thread(create, gateway)
            await until(lambda: status(device, prompt_id) == DisplayStatus.PENDING)
            device.answer(prompt_id, {"deploy_target": ["Production"]})
            await until(lambda: status(device, prompt_id) == DisplayStatus.ANSWERED_HERE)

            [listed] = (await asyncio.to_thread(gateway.admin.get, "/v1/devices")).json()["devices"]
            await asyncio.to_thread(gateway.admin.delete, f"/v1/devices/{listed['deviceId']}")
            await until(lambda: device.connection.kind == Connection.UNAUTHORIZED)
        finally:
            await device.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "url, code, kind",
    [
        ("GATEWAY", "AAAA-AAAA", "code"),
        ("ftp://example.com", "AAAA-AAAA", "input"),
        ("GATEWAY", "  ", "input"),
        ("http://127.0.0.1:9", "AAAA-AAAA", "network"),
    ],
)
def test_a_failed_pairing_says_why_and_changes_nothing(gateway, tmp_path, url, code, kind):
    async def scenario():
        device = DeviceCore(LocalStore(tmp_path / "d.db"))
        before = device.settings
        with pytest.raises(PairingError) as failed:
            await device.pair(gateway.url if url == "GATEWAY" else url, code)
        assert failed.value.kind == kind
        assert device.settings == before and device.store.get_json("settings") is None

    asyncio.run(scenario())


def test_moving_to_another_gateway_starts_from_its_prompt_list(gateway, tmp_path):
    other = start_gateway(tmp_path / "other")
    for n in range(3):  # the other gateway's event log is ahead of this one's
        create(other, session=f"x{n}")
    kept = create(other, session="kept")

    async def scenario():
        device = core(tmp_path / "d.db", gateway.url, poll_wait=1)
        device.start()
        try:
            first = await asyncio.to_thread(create, gateway)
            await until(lambda: status(device, first) == DisplayStatus.PENDING)
            await device.pair(other.url, await asyncio.to_thread(_code, other))
            await until(lambda: status(device, kept) == DisplayStatus.PENDING)
            # The first gateway's prompt is not pending here any more: it is gone.
            await until(lambda: status(device, first) != DisplayStatus.PENDING)
        finally:
            await device.stop()

    try:
        asyncio.run(scenario())
    finally:
        other.stop()
