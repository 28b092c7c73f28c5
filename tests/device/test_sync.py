"""The sync loop against a real gateway on 127.0.0.1, with faults."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from app.device import Connection, DeviceCore, DisplayStatus, LocalStore, ServerClock, Settings
from app.protocol import PromptRecord
from tests.support import DEVICE_TOKEN, start_gateway

from .proxy import CuttableProxy


async def until(condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)
    return value


def core(path, url: str, **kw) -> DeviceCore:
    device = DeviceCore(LocalStore(path), poll_wait=kw.pop("poll_wait", 5), **kw)
    device.configure(Settings(gateway_url=url, token=DEVICE_TOKEN, device_name="test"))
    return device


def status(device: DeviceCore, prompt_id: str) -> DisplayStatus | None:
    item = device.item(prompt_id)
    return item.status if item else None


def create(gateway, **kw) -> str:
    return gateway.create(**kw)["id"]


def test_receives_prompts_and_answers_here(gateway, tmp_path):
    async def scenario():
        device = core(tmp_path / "d.db", gateway.url)
        device.start()
        try:
            await until(lambda: device.connection.kind == Connection.CONNECTED)
            prompt_id = await asyncio.to_thread(create, gateway)
            await until(lambda: status(device, prompt_id) == DisplayStatus.PENDING)
            device.answer(prompt_id, {"deploy_target": ["production"]})
            assert status(device, prompt_id) in (DisplayStatus.SENDING, DisplayStatus.ANSWERED_HERE)
            await until(lambda: status(device, prompt_id) == DisplayStatus.ANSWERED_HERE)
            assert device.item(prompt_id).answers == {"deploy_target": ["Production"]}
            assert device.store.outbox() == []
        finally:
            await device.stop()

    asyncio.run(scenario())
    [answered] = gateway.device.get("/v1/prompts", params={"status": "all"}).json()["prompts"]
    result = gateway.agent.get(f"/v1/prompts/{answered['id']}/result", params={"wait": 0})
    assert result.json() == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }


def test_gateway_restart_while_running_catches_up_every_missed_event(gateway, tmp_path):
    async def scenario():
        nonlocal gateway
        device = core(tmp_path / "d.db", gateway.url, poll_wait=2)
        device.start()
        try:
            first = await asyncio.to_thread(create, gateway, session="a")
            await until(lambda: status(device, first) == DisplayStatus.PENDING)
            gateway = await asyncio.to_thread(gateway.restart)  # the device's poll breaks
            second = await asyncio.to_thread(create, gateway, session="b")
            gateway.device.post(f"/v1/prompts/{first}/dismiss", json={})
            await until(lambda: status(device, second) == DisplayStatus.PENDING, timeout=40)
            await until(lambda: status(device, first) == DisplayStatus.DISMISSED)
            assert device.connection.kind == Connection.CONNECTED
        finally:
            await device.stop()

    try:
        asyncio.run(scenario())
    finally:
        gateway.stop()


def test_connections_cut_mid_long_poll(gateway, tmp_path):
    async def scenario():
        proxy = await CuttableProxy("127.0.0.1", gateway.server.port).start()
        device = core(tmp_path / "d.db", proxy.url, poll_wait=30)
        device.start()
        try:
            await until(lambda: device.connection.kind == Connection.CONNECTED)
            seen = []
            for round_ in range(3):
                await asyncio.sleep(0.2)  # the long-poll is parked at the gateway
                assert proxy.cut() >= 1
                prompt_id = await asyncio.to_thread(create, gateway, session=f"s{round_}")
                await until(
                    lambda p=prompt_id: status(device, p) == DisplayStatus.PENDING, timeout=40
                )
                seen.append(prompt_id)
            assert [i.id for i in device.timeline()] == seen
        finally:
            await device.stop()
            await proxy.stop()

    asyncio.run(scenario())


def test_answer_while_gateway_down_is_delivered_once_even_across_an_app_restart(gateway, tmp_path):
    async def first_run(prompt_holder):
        device = core(tmp_path / "d.db", gateway.url, poll_wait=2)
        device.start()
        prompt_id = await asyncio.to_thread(create, gateway)
        await until(lambda: status(device, prompt_id) == DisplayStatus.PENDING)
        prompt_holder.append(prompt_id)
        await asyncio.to_thread(gateway.server.stop)  # the gateway goes down
        device.answer(prompt_id, {"deploy_target": ["Production"]})
        await until(lambda: device.connection.kind == Connection.RECONNECTING)
        assert status(device, prompt_id) == DisplayStatus.SENDING
        await device.stop()  # the app is closed with the answer still queued
        device.store.close()

    held: list[str] = []
    asyncio.run(first_run(held))
    prompt_id = held[0]
    back = start_gateway(gateway.data_dir, gateway.clock, port=gateway.server.port)

    async def second_run():
        device = DeviceCore(LocalStore(tmp_path / "d.db"), poll_wait=2)  # settings kept
        assert [e.prompt_id for e in device.store.outbox()] == [prompt_id]
        assert status(device, prompt_id) == DisplayStatus.SENDING
        device.start()
        try:
            await until(
                lambda: status(device, prompt_id) == DisplayStatus.ANSWERED_HERE, timeout=40
            )
        finally:
            await device.stop()

    try:
        asyncio.run(second_run())
        events = back.device.get("/v1/events", params={"after": "0", "wait": 0}).json()
        resolved = [e for e in events["events"] if e["type"] == "prompt.resolved"]
        assert len(resolved) == 1  # delivered exactly once
        assert resolved[0]["prompt"]["answers"] == {"deploy_target": ["Production"]}
    finally:
        back.stop()


def test_two_devices_one_prompt(gateway, tmp_path):
    async def scenario():
        phone = core(tmp_path / "phone.db", gateway.url)
        laptop = core(tmp_path / "laptop.db", gateway.url)
        phone.start()
        laptop.start()
        try:
            prompt_id = await asyncio.to_thread(create, gateway)
            await until(
                lambda: (
                    status(phone, prompt_id) == DisplayStatus.PENDING
                    and status(laptop, prompt_id) == DisplayStatus.PENDING
                )
            )
            phone.answer(prompt_id, {"deploy_target": ["Production"]})
            laptop.answer(prompt_id, {"deploy_target": ["Staging (Recommended)"]})
            await until(
                lambda: (
                    status(phone, prompt_id)
                    in (DisplayStatus.ANSWERED_HERE, DisplayStatus.ANSWERED_ELSEWHERE)
                    and status(laptop, prompt_id)
                    in (DisplayStatus.ANSWERED_HERE, DisplayStatus.ANSWERED_ELSEWHERE)
                )
            )
            statuses = sorted([status(phone, prompt_id), status(laptop, prompt_id)])
            assert statuses == [DisplayStatus.ANSWERED_HERE, DisplayStatus.ANSWERED_ELSEWHERE]
            assert phone.item(prompt_id).answers == laptop.item(prompt_id).answers
        finally:
            await phone.stop()
            await laptop.stop()

    asyncio.run(scenario())


def test_410_resyncs(gateway, tmp_path):
    async def scenario():
        device = core(tmp_path / "d.db", gateway.url, poll_wait=1)
        device.store.set_meta("cursor", "999")  # a cursor this gateway never gave
        gone = await asyncio.to_thread(create, gateway, session="old")
        # the device saw this prompt pending before; it is dismissed while the device is away
        device.store.apply(
            PromptRecord.model_validate(gateway.device.get(f"/v1/prompts/{gone}").json())
        )
        gateway.device.post(f"/v1/prompts/{gone}/dismiss", json={})
        fresh = await asyncio.to_thread(create, gateway, session="new")
        device.start()
        try:
            await until(lambda: status(device, fresh) == DisplayStatus.PENDING)
            await until(lambda: status(device, gone) == DisplayStatus.DISMISSED)
            assert int(device.store.cursor) <= 3
        finally:
            await device.stop()

    asyncio.run(scenario())


def test_device_clock_off_by_an_hour_does_not_move_the_deadline(gateway, tmp_path):
    async def scenario():
        prompt_id = await asyncio.to_thread(create, gateway, timeoutSeconds=120)
        lefts = []
        for skew in (-3600, 3600):
            clock = ServerClock(wall=lambda skew=skew: time.time() + skew)
            device = core(tmp_path / f"d{skew}.db", gateway.url, clock=clock)
            device.start()
            try:
                await until(lambda d=device: status(d, prompt_id) == DisplayStatus.PENDING)
                lefts.append(device.clock.seconds_left(device.item(prompt_id).record))
            finally:
                await device.stop()
        return prompt_id, lefts

    _prompt_id, lefts = asyncio.run(scenario())
    assert all(100 < left <= 120 for left in lefts), lefts


def test_the_clock_offset_is_kept_for_the_next_start_without_a_write_per_event(gateway, tmp_path):
    """#43: each event's response says the gateway's time; the offset is written to the store
    only when it moved by a second or more, not on every event's way to the screen, and a
    new start counts down from the kept one before it hears the gateway."""
    wall = [1_000_000.0]
    device = DeviceCore(LocalStore(tmp_path / "d.db"), clock=ServerClock(wall=lambda: wall[0]))
    writes = []
    set_meta = device.store.set_meta
    device.store.set_meta = lambda key, value: (writes.append(key), set_meta(key, value))
    device._observe_time(wall[0] + 5)  # the gateway is 5 s ahead
    device._observe_time(wall[0] + 5.2)  # 200 ms more: jitter, not kept
    wall[0] += 30
    device._observe_time(wall[0] + 5.1)
    assert writes == ["clock_offset_ms"]
    device._observe_time(wall[0] + 7)  # now 2 s ahead of what was kept
    assert writes == ["clock_offset_ms", "clock_offset_ms"]
    device.store.close()
    again = DeviceCore(LocalStore(tmp_path / "d.db"))
    assert again.clock.offset_ms == 7000
    again.store.close()


def test_unauthorized_is_shown_and_fixed_by_new_settings(gateway, tmp_path):
    async def scenario():
        device = DeviceCore(LocalStore(tmp_path / "d.db"), poll_wait=1)
        assert device.connection.kind == Connection.CONNECTING
        device.start()
        try:
            await until(lambda: device.connection.kind == Connection.UNCONFIGURED)
            device.configure(Settings(gateway_url=gateway.url, token="wrong"))
            await until(lambda: device.connection.kind == Connection.UNAUTHORIZED)
            device.configure(Settings(gateway_url=gateway.url, token=DEVICE_TOKEN))
            await until(lambda: device.connection.kind == Connection.CONNECTED)
        finally:
            await device.stop()

    asyncio.run(scenario())


def test_locally_expired_card_refuses_answers(gateway, tmp_path):
    async def scenario():
        device = core(tmp_path / "d.db", gateway.url)
        device.start()
        try:
            prompt_id = await asyncio.to_thread(create, gateway, timeoutSeconds=30)
            await until(lambda: status(device, prompt_id) == DisplayStatus.PENDING)
            device.clock.observe(device.clock.now_ms() + 31_000)  # the deadline has passed
            assert status(device, prompt_id) == DisplayStatus.EXPIRED
            try:
                device.answer(prompt_id, {"deploy_target": ["Production"]})
                raise AssertionError("a read-only card took an answer")
            except Exception as exc:
                assert "no longer takes answers" in str(exc)
            assert device.store.outbox() == []
        finally:
            await device.stop()

    asyncio.run(scenario())


def test_reconnecting_state_carries_the_next_try(tmp_path):
    async def scenario():
        device = core(tmp_path / "d.db", "http://127.0.0.1:9")  # nothing listens there
        device.start()
        try:
            await until(lambda: device.connection.kind == Connection.RECONNECTING)
            assert device.connection.next_try_monotonic is not None
            assert 0 <= device.connection.seconds_to_retry() <= 30
        finally:
            await device.stop()

    asyncio.run(scenario())


def test_a_draft_on_one_device_shows_on_the_other_and_goes_with_the_answer(gateway, tmp_path):
    """v1.4: what the person chose on the phone reaches the laptop (not as its own, not
    sent), the last write wins, and it is gone once the prompt is answered."""

    async def scenario():
        phone = core(tmp_path / "phone.db", gateway.url)
        laptop = core(tmp_path / "laptop.db", gateway.url)
        phone.start()
        laptop.start()
        try:
            prompt_id = await asyncio.to_thread(create, gateway)
            await until(lambda: status(laptop, prompt_id) == status(phone, prompt_id) == "pending")
            await until(lambda: phone.connection.kind == Connection.CONNECTED)
            window = object()
            phone.share_draft(prompt_id, {"deploy_target": ["Production"]}, window)
            assert phone.draft_of(prompt_id).source is window  # this app's other windows: now
            heard = await until(lambda: laptop.draft_of(prompt_id))
            assert heard.answers == {"deploy_target": ["Production"]} and heard.source is None
            phone.share_draft(prompt_id, {"deploy_target": ["our rack"]}, window)
            await until(lambda: laptop.draft_of(prompt_id).answers["deploy_target"] == ["our rack"])
            assert phone.draft_of(prompt_id).source is window  # its own echo is not taken
            laptop.answer(prompt_id, {"deploy_target": ["Staging (Recommended)"]})
            await until(lambda: phone.draft_of(prompt_id) is None)
            await until(lambda: laptop.draft_of(prompt_id) is None)
        finally:
            await phone.stop()
            await laptop.stop()

    asyncio.run(scenario())
    [answered] = gateway.device.get("/v1/prompts", params={"status": "all"}).json()["prompts"]
    assert answered["answers"] == {"deploy_target": ["Staging (Recommended)"]}
