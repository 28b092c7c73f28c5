"""PostgreSQL across a link with latency (#42): what a team gets from a gateway on one machine
and its database on another, reproduced here with a delaying TCP proxy (delay_proxy.py) between
the gateway processes and a throwaway cluster.

In one run: cycles per second (create → answer → result) and answer → agent latency, with 1 and
8 agents, 1 and 2 gateway processes, at 0 ms and 1 ms one-way delay; SQLite beside them; and a
process's health while another client holds ACCESS EXCLUSIVE on `prompts`.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import httpx

from tests import postgres

from .delay_proxy import DelayProxy
from .harness import PROMPT, GatewayProcess, agent_client, device_client, emit, percentiles
from .many_bench import _database_server

_databases = itertools.count(1)


async def _agent_loop(agent, device, tag: str, until: float, samples: list[float]) -> int:
    """create → the agent's result wait parked → answer: the answer's time to the agent."""
    done = 0
    while time.perf_counter() < until:
        created = await agent.post("/v1/prompts", json={**PROMPT, "sessionKey": f"{tag}-{done}"})
        created.raise_for_status()
        prompt_id = created.json()["id"]
        waiting = asyncio.create_task(
            agent.get(f"/v1/prompts/{prompt_id}/result", params={"wait": 30})
        )
        await asyncio.sleep(0.002)  # parked
        started = time.perf_counter()
        answered = await device.post(
            f"/v1/prompts/{prompt_id}/answer", json={"answers": {"q": ["A"]}}
        )
        answered.raise_for_status()
        result = await waiting
        samples.append(time.perf_counter() - started)
        assert result.json()["status"] == "answered", result.text
        done += 1
    return done


async def _load(agent_url: str, device_url: str, agents: int, seconds: float, tag: str):
    agent, device = agent_client(agent_url), device_client(device_url)
    samples: list[float] = []
    started = time.perf_counter()
    counts = await asyncio.gather(
        *(
            _agent_loop(agent, device, f"{tag}-{a}", started + seconds, samples)
            for a in range(agents)
        )
    )
    elapsed = time.perf_counter() - started
    await agent.aclose()
    await device.aclose()
    return sum(counts) / elapsed, samples


def _load_process(agent_url: str, device_url: str, agents: int, seconds: float, tag: str):
    return asyncio.run(_load(agent_url, device_url, agents, seconds, tag))


def _measure(
    pool: ProcessPoolExecutor, gateways: list[GatewayProcess], agents: int, seconds: float
) -> dict:
    """`agents` loops spread over two load processes, each process's agents and device on one
    gateway (with two gateways, one each: what a load balancer would do)."""
    tag = f"a{agents}-{time.monotonic_ns()}"
    shares = [agents // 2 + (i < agents % 2) for i in range(2)]
    jobs = []
    for i, share in enumerate(s for s in shares if s):
        url = gateways[i % len(gateways)].url
        jobs.append(pool.submit(_load_process, url, url, share, seconds, f"{tag}{i}"))
    busy_before = _machine_busy()
    rate, samples = 0.0, []
    for job in jobs:
        job_rate, job_samples = job.result()
        rate += job_rate
        samples += job_samples
    busy_after = _machine_busy()
    busy, total = busy_after[0] - busy_before[0], busy_after[1] - busy_before[1]
    return {
        "cycles_per_s": round(rate, 1),
        "answer_to_agent": percentiles(samples),
        # The whole machine's (load, gateways, PostgreSQL, proxy): near 1, a second gateway
        # process has no core to run on, whatever the gateway does.
        "machine_cpu_busy": round(busy / total, 2) if total else None,
    }


def _machine_busy() -> tuple[int, int]:
    """CPU ticks busy and in all, over every core, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(f) for f in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def through(url: str, port: int) -> str:
    """The same database, reached at `port` (the proxy)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit(":", 1)[0] + f":{port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _hold_lock(url: str, seconds: float, held: threading.Event) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("LOCK TABLE prompts IN ACCESS EXCLUSIVE MODE")
        held.set()
        time.sleep(seconds)
        conn.rollback()


async def _while_locked(url: str, gateway: GatewayProcess, seconds: float) -> dict:
    """Health every 20 ms from one client, a create and a read every 0.5 s from another, while
    `prompts` is locked by someone else for `seconds`."""
    held = threading.Event()
    locker = threading.Thread(target=_hold_lock, args=(url, seconds, held), daemon=True)
    locker.start()
    await asyncio.to_thread(held.wait, 30)
    statuses: dict[str, int] = {}
    health: list[float] = []
    async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as bare:
        agent = agent_client(gateway.url)

        async def writes() -> None:
            n = 0
            while locker.is_alive():
                n += 1
                for call in (
                    agent.post("/v1/prompts", json={**PROMPT, "sessionKey": f"locked-{n}"}),
                    agent.get("/v1/prompts/pr_none/result"),
                ):
                    response = await call
                    key = str(response.status_code)
                    statuses[key] = statuses.get(key, 0) + 1
                await asyncio.sleep(0.5)

        writer = asyncio.create_task(writes())
        while locker.is_alive():
            started = time.perf_counter()
            (await bare.get("/v1/health")).raise_for_status()
            health.append(time.perf_counter() - started)
            await asyncio.sleep(0.02)
        await writer
        await agent.aclose()
    return {"health": percentiles(health), "create_and_read_statuses": statuses}


async def pgnet(
    seconds: float = 4.0,
    delays_ms: tuple[float, ...] = (0.0, 1.0),
    agent_levels: tuple[int, ...] = (1, 8),
    lock_seconds: float = 6.0,
) -> None:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        list(pool.map(abs, range(2)))  # the load processes are up before any clock starts
        sqlite = GatewayProcess()
        try:
            for agents in agent_levels:
                emit(
                    "pgnet",
                    store="sqlite",
                    processes=1,
                    delay_ms=0,
                    agents=agents,
                    **_measure(pool, [sqlite], agents, seconds),
                )
        finally:
            sqlite.stop()
        with _database_server() as (admin_url, _):
            name = f"pgnet_{os.getpid()}_{next(_databases)}"
            url = postgres.new_database(admin_url, name)
            for delay in delays_ms:
                with DelayProxy(urlsplit(url).port or 5432, delay / 1000) as port:
                    far = through(url, port)
                    gateways = [GatewayProcess(far)]
                    try:
                        for processes in (1, 2):
                            if processes == 2:
                                gateways.append(GatewayProcess(far))
                            for agents in agent_levels:
                                emit(
                                    "pgnet",
                                    store="postgres",
                                    processes=processes,
                                    delay_ms=delay,
                                    agents=agents,
                                    **_measure(pool, gateways, agents, seconds),
                                )
                    finally:
                        for gateway in gateways:
                            gateway.stop()
            gateway = GatewayProcess(url)
            try:
                emit(
                    "pgnet_locked",
                    lock_seconds=lock_seconds,
                    **await _while_locked(url, gateway, lock_seconds),
                    target="health p99 under 50 ms while prompts is locked",
                )
            finally:
                gateway.stop()
