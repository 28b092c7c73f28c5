"""Delivery latency, idle long-poll capacity and cycle throughput of one gateway process."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import httpx

from .harness import (
    PROMPT,
    GatewayProcess,
    agent_client,
    device_client,
    emit,
    percentiles,
    raise_file_limit,
)


async def _park_idle_polls(url: str, count: int, stop: Any) -> None:
    """`count` long-polls parked at the gateway, each on its own connection: agents waiting on
    `/result?wait=60` for prompts nobody answers during the run (an event poll would be woken
    by every event, which measures fan-out instead). Held until `stop` is set."""
    clients = [agent_client(url) for _ in range(max(1, count // 500))]
    prompt_ids = []
    for i in range(count):
        response = await clients[0].post(
            "/v1/prompts",
            json={**PROMPT, "sessionKey": f"idle-{count}-{i}", "timeoutSeconds": 3600},
        )
        prompt_ids.append(response.json()["id"])

    async def park(client: httpx.AsyncClient, prompt_id: str) -> None:
        while True:
            try:
                await client.get(f"/v1/prompts/{prompt_id}/result", params={"wait": 60})
            except httpx.HTTPError:
                await asyncio.sleep(0.5)

    tasks = []
    for i, prompt_id in enumerate(prompt_ids):
        tasks.append(asyncio.create_task(park(clients[i % len(clients)], prompt_id)))
        if i % 250 == 249:
            await asyncio.sleep(0.05)  # do not flood the listen backlog
    await asyncio.sleep(min(10, 1 + count / 1000))
    await asyncio.to_thread(stop.wait)
    for task in tasks:
        task.cancel()
    for client in clients:
        await client.aclose()


def _hold_idle_polls(url: str, count: int, ready: Any, stop: Any) -> None:
    raise_file_limit()
    asyncio.run(_park_idle_polls(url, count, _SetWhenParked(ready, stop)))


class _SetWhenParked:
    """Tells the parent the polls are parked the moment the holder starts waiting to stop."""

    def __init__(self, ready: Any, stop: Any) -> None:
        self.ready, self.stop = ready, stop

    def wait(self) -> None:
        self.ready.set()
        self.stop.wait()


class IdlePolls:
    """Idle long-polls held by a separate process, as real agents and devices are: the
    measuring client then holds only its own connections (and pays only its own garbage
    collections: with a thousand polls in the same process its collector paused up to 150 ms,
    which showed up as the gateway's p99)."""

    def __init__(self, url: str, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.ready, self.stop = context.Event(), context.Event()
        self.process = context.Process(
            target=_hold_idle_polls, args=(url, count, self.ready, self.stop), daemon=True
        )

    def __enter__(self) -> IdlePolls:
        self.process.start()
        if not self.ready.wait(600):
            raise RuntimeError("the idle polls were not parked within 10 minutes")
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.process.join(60)
        if self.process.is_alive():
            self.process.kill()


async def _received(client: httpx.AsyncClient, path: str, **params) -> tuple[httpx.Response, float]:
    """A long-poll's response and the moment it arrived (not when the caller got round to it)."""
    response = await client.get(path, params=params)
    return response, time.perf_counter()


async def _delivery(
    url: str, iterations: int, device_url: str | None = None
) -> tuple[list[float], list[float], list[float]]:
    """Create → a polling device sees it; answer → the agent's waiting /result returns; and,
    in the same iteration, the baseline: a bare health round trip from a third client of the
    same library. Interleaving them puts the machine's noise (shared, bursty) on both sides.
    With `device_url` (another gateway process on the same database) the device polls and
    answers there while the agent asks and waits at `url`."""
    agent, bare = agent_client(url), device_client(url)
    device = device_client(device_url or url)
    health, to_device, to_agent = [], [], []
    cursor = (await device.get("/v1/prompts")).json()["cursor"]
    await bare.get("/v1/health")  # its connection is open before the first sample
    for i in range(iterations):
        poll = asyncio.create_task(_received(device, "/v1/events", after=cursor, wait=30))
        await asyncio.sleep(0.002)  # the poll is parked
        started = time.perf_counter()
        (await bare.get("/v1/health")).raise_for_status()
        health.append(time.perf_counter() - started)
        started = time.perf_counter()
        created = (await agent.post("/v1/prompts", json={**PROMPT, "sessionKey": f"s{i}"})).json()
        page, received = await poll
        to_device.append(received - started)
        cursor = page.json()["cursor"]
        result = asyncio.create_task(
            _received(agent, f"/v1/prompts/{created['id']}/result", wait=30)
        )
        await asyncio.sleep(0.002)
        started = time.perf_counter()
        await device.post(f"/v1/prompts/{created['id']}/answer", json={"answers": {"q": ["A"]}})
        response, received = await result
        assert response.json()["status"] == "answered"
        to_agent.append(received - started)
        cursor = (await device.get("/v1/events", params={"after": cursor, "wait": 0})).json()[
            "cursor"
        ]
    for client in (agent, device, bare):
        await client.aclose()
    return health, to_device, to_agent


async def latency(iterations: int = 500, idle_levels=(1, 100, 1000)) -> None:
    raise_file_limit()
    gateway = GatewayProcess()
    try:
        for idle in idle_levels:
            with IdlePolls(gateway.url, idle):
                health, to_device, to_agent = await _delivery(gateway.url, iterations)
            baseline = percentiles(health)
            create = percentiles(to_device)
            answer = percentiles(to_agent)
            emit(
                "delivery_latency",
                idle_polls=idle,
                baseline_health=baseline,
                prompt_to_device=create,
                answer_to_agent=answer,
                ratio_p50_prompt_to_device=round(create["p50_ms"] / baseline["p50_ms"], 2),
                ratio_p50_answer_to_agent=round(answer["p50_ms"] / baseline["p50_ms"], 2),
                target="p50 <= 1.5x health round trip; p99 < 10 ms with 1,000 idle polls",
            )
    finally:
        gateway.stop()


async def capacity(levels=(1000, 5000, 10000), iterations: int = 100) -> None:
    limit = raise_file_limit()
    gateway = GatewayProcess()
    try:
        rss_empty = gateway.rss_bytes()
        fds_empty = gateway.open_fds()
        for level in levels:
            if level + 100 > limit:  # each side (client, gateway) holds one fd per poll
                emit("capacity", idle_polls=level, skipped=f"file limit {limit} too low")
                continue
            with IdlePolls(gateway.url, level):
                rss = gateway.rss_bytes()
                fds = gateway.open_fds()
                health, to_device, _ = await _delivery(gateway.url, iterations)
            baseline = percentiles(health)
            create = percentiles(to_device)
            emit(
                "capacity",
                idle_polls=level,
                rss_mb=round(rss / 2**20, 1),
                rss_baseline_empty_mb=round(rss_empty / 2**20, 1),
                rss_per_poll_kb=round((rss - rss_empty) / level / 1024, 2),
                open_fds=fds,
                open_fds_baseline=fds_empty,
                baseline_health=baseline,
                prompt_to_device=create,
                ratio_p50=round(create["p50_ms"] / baseline["p50_ms"], 2),
                target="10,000 idle polls under 300 MB RSS",
            )
            await asyncio.sleep(1)
    finally:
        gateway.stop()


async def _cycles(agent, device, tag: str, seconds: float) -> int:
    """create → answer → result, as fast as one agent can, for `seconds`; returns the count."""
    done = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        created = (
            await agent.post("/v1/prompts", json={**PROMPT, "sessionKey": f"{tag}-{done}"})
        ).json()
        await device.post(f"/v1/prompts/{created['id']}/answer", json={"answers": {"q": ["B"]}})
        result = (await agent.get(f"/v1/prompts/{created['id']}/result", params={"wait": 0})).json()
        assert result["status"] == "answered"
        done += 1
    return done


async def _healths(client, seconds: float) -> int:
    done = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        (await client.get("/v1/health")).raise_for_status()
        done += 1
    return done


async def _load(kind: str, url: str, agents: int, seconds: float, tag: str) -> float:
    agent, device = agent_client(url), device_client(url)
    started = time.perf_counter()
    if kind == "cycles":
        counts = await asyncio.gather(
            *(_cycles(agent, device, f"{tag}-{a}", seconds) for a in range(agents))
        )
    else:
        counts = await asyncio.gather(*(_healths(device, seconds) for _ in range(agents)))
    rate = sum(counts) / (time.perf_counter() - started)
    await agent.aclose()
    await device.aclose()
    return rate


def _load_process(kind: str, url: str, agents: int, seconds: float, tag: str) -> float:
    """One load process: `agents` concurrent loops for `seconds`; returns its rate per second."""
    return asyncio.run(_load(kind, url, agents, seconds, tag))


def _run_load(
    gateways: list[GatewayProcess],
    kind: str,
    agents: int,
    processes: int,
    seconds: float,
    other_cpu: Callable[[], float] = lambda: 0.0,
) -> tuple[float, float, float]:
    """The combined rate of `processes` load processes (spread over `gateways` in turn), the
    gateways' CPU seconds per operation over the same interval (user + system, from /proc),
    and `other_cpu`'s (say, a database server's) per operation."""
    tag = f"{kind}{agents}-{time.monotonic_ns()}"
    return run_in_processes(
        _load_process,
        [
            (kind, gateways[i % len(gateways)].url, n, seconds, f"{tag}-{i}")
            for i, n in enumerate(spread(agents, processes))
        ],
        seconds,
        lambda: sum(g.cpu_seconds() for g in gateways),
        other_cpu,
    )


def spread(agents: int, processes: int) -> list[int]:
    """`agents` loops shared out over `processes` as evenly as they go."""
    return [agents // processes + (i < agents % processes) for i in range(processes)]


def run_in_processes(
    load_process: Callable[..., float],
    arguments: list[tuple],
    seconds: float,
    gateway_cpu: Callable[[], float],
    other_cpu: Callable[[], float] = lambda: 0.0,
) -> tuple[float, float, float]:
    """`load_process(*a)` for each `a` of `arguments`, each in a process of its own (agents are
    separate programs, and one Python client process tops out near the gateway's own rate),
    each returning its rate per second over `seconds`: the combined rate, and `gateway_cpu`'s
    and `other_cpu`'s CPU seconds per operation over the same interval."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(arguments), mp_context=context) as pool:
        list(pool.map(_warm_up, range(len(arguments))))  # imports done before the clock starts
        cpu_before, other_before = gateway_cpu(), other_cpu()
        futures = [pool.submit(load_process, *a) for a in arguments]
        rate = sum(f.result() for f in futures)
        cpu, other = gateway_cpu() - cpu_before, other_cpu() - other_before
    operations = rate * seconds
    return rate, cpu / operations, other / operations


def _warm_up(_: int) -> None:
    return None


async def throughput(
    seconds: float = 5.0, concurrency_levels=(1, 8), load_processes: int = 2
) -> None:
    """Cycles per second, with the load from separate processes (agents are separate programs,
    and one Python client process tops out near the gateway's own rate), beside the same
    processes' bare health requests per second. The gateway's CPU time per cycle says what one
    core could sustain whatever the client."""
    gateway = GatewayProcess()
    try:
        for agents in concurrency_levels:
            processes = min(agents, load_processes)
            health_rate, cpu_per_health, _ = _run_load(
                [gateway], "health", agents, processes, seconds
            )
            cycle_rate, cpu_per_cycle, _ = _run_load(
                [gateway], "cycles", agents, processes, seconds
            )
            emit(
                "throughput",
                agents=agents,
                load_processes=processes,
                cycles_per_s=round(cycle_rate, 1),
                baseline_health_per_s=round(health_rate, 1),
                requests_per_cycle=3,
                ratio_cycle_requests_to_health=round(cycle_rate * 3 / health_rate, 2),
                gateway_cpu_ms_per_cycle=round(cpu_per_cycle * 1000, 3),
                gateway_cpu_ms_per_health=round(cpu_per_health * 1000, 3),
                ratio_cpu_cycle_to_health=round(cpu_per_cycle / cpu_per_health, 2),
                one_core_ceiling_cycles_per_s=round(1 / cpu_per_cycle),
                target=">= 1,000 cycles per second",
            )
    finally:
        gateway.stop()
