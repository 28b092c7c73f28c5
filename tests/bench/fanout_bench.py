"""Fan-out: subscribed devices (event polls parked at the head cursor) hearing each event.

Devices live in their own process, as raw keep-alive HTTP/1.1 connections (the lightest
client Python has), each re-polling from the cursor it was given. Per level of devices, each
round creates a prompt (every device hears it), then answers it while the agent waits on its
result (the agent's wait must come first, #16). Reported: created → first and → last device,
answer → agent, and the gateway's CPU per device per event against the same rounds with no
device (same run, same process).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import time
from typing import Any
from urllib.parse import urlsplit

from .harness import DEVICE_TOKEN as TOKEN
from .harness import (
    PROMPT,
    GatewayProcess,
    agent_client,
    device_client,
    emit,
    percentiles,
    raise_file_limit,
    serve_devices,
)

_CURSOR = re.compile(rb'"cursor":"(\d+)"')
_SEQS = re.compile(rb'"seq":(\d+)')


async def _device(host: str, port: int, cursor: str, heard: dict[int, list[float]], ready) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    ready()
    while True:
        writer.write(
            f"GET /v1/events?after={cursor}&wait=60 HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))
        body = await reader.readexactly(length)
        now = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process here
        for seq in _SEQS.findall(body):
            heard.setdefault(int(seq), []).append(now)
        cursor = _CURSOR.search(body).group(1).decode()


def _device_process(url: str, count: int, cursor: str, pipe: Any) -> None:
    raise_file_limit()
    parts = urlsplit(url)

    def device(heard: dict, ready: Any) -> Any:
        return _device(parts.hostname, parts.port, cursor, heard, ready)

    # Half a second more once connected: every first poll has parked.
    asyncio.run(serve_devices(device, count, pipe, burst=200, settle=0.5))


async def _arrival(request: Any) -> tuple[Any, float]:
    """A response and the moment it arrived (not when the caller got round to it)."""
    response = await request
    return response, time.monotonic()


async def _rounds(
    gateway: GatewayProcess, devices: int, rounds: int, tag: str, health_probe: bool = False
) -> dict:
    agent, answerer = agent_client(gateway.url), device_client(gateway.url)
    cursor = (await answerer.get("/v1/prompts")).json()["cursor"]
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = None
    if devices:
        process = multiprocessing.get_context("spawn").Process(
            target=_device_process, args=(gateway.url, devices, cursor, child)
        )
        process.start()
        assert await asyncio.to_thread(parent.recv) == "ready"

    async def all_heard(seq: int) -> tuple[float, float] | None:
        """When every device has heard `seq`; then a pause while their next polls park (a
        person takes seconds to answer: the agent's wake is measured against parked devices,
        not behind a thousand re-polls still arriving)."""
        if not devices:
            return None
        parent.send(seq)
        heard = await asyncio.to_thread(parent.recv)
        await asyncio.sleep(0.05 + devices * 0.0002)
        return heard

    first, median, last, to_agent, creates, healths = [], [], [], [], [], []
    prober = device_client(gateway.url)

    async def probe() -> None:
        """Health round trips all through the rounds: does a wake-up hold other requests?"""
        while True:
            started = time.monotonic()
            await prober.get("/v1/health")
            healths.append(time.monotonic() - started)
            await asyncio.sleep(0.01)

    probing = asyncio.create_task(probe()) if health_probe else None
    cpu_before = gateway.cpu_seconds()
    for i in range(rounds):
        started = time.monotonic()
        created = (
            await agent.post("/v1/prompts", json={**PROMPT, "sessionKey": f"{tag}-{i}"})
        ).json()
        creates.append(time.monotonic() - started)
        seq = int(cursor) + 1
        heard = await all_heard(seq)
        if heard:
            first.append(heard[0] - started)
            median.append(heard[1] - started)
            last.append(heard[2] - started)
        result = asyncio.create_task(
            _arrival(agent.get(f"/v1/prompts/{created['id']}/result", params={"wait": 30}))
        )
        await asyncio.sleep(0.005)  # the agent's wait is parked
        started = time.monotonic()
        await answerer.post(f"/v1/prompts/{created['id']}/answer", json={"answers": {"q": ["A"]}})
        response, arrived = await result
        to_agent.append(arrived - started)
        assert response.json()["status"] == "answered"
        await all_heard(seq + 1)
        cursor = str(seq + 1)
    cpu = gateway.cpu_seconds() - cpu_before
    rss = gateway.rss_bytes()  # with every device still connected
    if probing is not None:
        probing.cancel()
    await prober.aclose()
    if process is not None:
        parent.send(None)
        process.join(30)
    await agent.aclose()
    await answerer.aclose()
    return {
        "first": first,
        "median": median,
        "last": last,
        "rss": rss,
        "to_agent": to_agent,
        "creates": creates,
        "healths": healths,
        "cpu": cpu,
    }


async def fanout(levels=(0, 1, 100, 500, 1000, 5000), rounds: int = 60) -> None:
    raise_file_limit()
    gateway = GatewayProcess()
    try:
        await _rounds(gateway, 0, 20, "warm")
        base = await _rounds(gateway, 0, rounds, "base")
        alone = percentiles(base["to_agent"])
        one_device: float | None = None
        for devices in levels:
            measured = (
                base if devices == 0 else await _rounds(gateway, devices, rounds, f"d{devices}")
            )
            to_agent = percentiles(measured["to_agent"])
            row: dict[str, Any] = {
                "subscribed_devices": devices,
                "create_round_trip": percentiles(measured["creates"]),
                "answer_to_agent": to_agent,
                "answer_to_agent_ratio_p50_vs_no_devices": round(
                    to_agent["p50_ms"] / alone["p50_ms"], 2
                ),
            }
            if devices == 1:
                one_device = to_agent["p50_ms"]
            if one_device is not None and devices > 1:
                row["answer_to_agent_ratio_p50_vs_one_device"] = round(
                    to_agent["p50_ms"] / one_device, 2
                )
            if devices > 1:  # CPU per device is lost in the clock's 10 ms grain with one
                events = 2 * rounds
                row["gateway_cpu_per_device_per_event_us"] = round(
                    (measured["cpu"] - base["cpu"]) / (events * devices) * 1e6, 1
                )
            if devices:
                row |= {
                    "created_to_first_device": percentiles(measured["first"]),
                    "created_to_median_device": percentiles(measured["median"]),
                    "created_to_last_device": percentiles(measured["last"]),
                    "gateway_rss_mb": round(measured["rss"] / 1e6, 1),
                }
            if devices >= 1000:  # other requests during wake-ups, in rounds of their own
                probed = await _rounds(gateway, devices, 20, f"p{devices}", health_probe=True)
                row["health_every_10ms_during_rounds"] = percentiles(probed["healths"])
            emit(
                "fanout",
                **row,
                target="answer->agent p50 at 1,000 devices <= 2x one device; "
                "<= 40 us gateway CPU per device per event; with 5,000 devices create and "
                "health p99 < 50 ms",
            )
    finally:
        gateway.stop()
