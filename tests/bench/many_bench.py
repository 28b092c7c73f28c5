"""Many gateway processes on one PostgreSQL database (#26), in one run: durable cycles per
second and answer → agent latency with one process and with two; the gateway's CPU per cycle
on PostgreSQL beside SQLite's (and the database server's own, which SQLite does not have).

The database is a throwaway cluster (tests/postgres.py), or your server when
`ASK_USER_TEST_DATABASE_URL` names one (then the server's CPU is not measured)."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from tests import postgres

from .gateway_bench import _delivery, _run_load
from .harness import GatewayProcess, emit, percentiles

_databases = itertools.count(1)


@contextlib.contextmanager
def _database_server() -> Iterator[tuple[str, Callable[[], float]]]:
    """The server's admin URL, and a reading of the CPU seconds its processes have used."""
    if url := os.environ.get(postgres.URL_ENV):
        yield url, lambda: 0.0
        return
    binaries = postgres.server_binaries()
    if binaries is None:
        raise SystemExit("PostgreSQL's server is not installed (apt-get install -y postgresql)")
    cluster = postgres.Cluster(binaries).start()
    try:
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        yield cluster.admin_url, lambda: _tree_cpu_seconds(postmaster)
    finally:
        cluster.stop()


def _tree_cpu_seconds(parent: int) -> float:
    """CPU seconds (user + system) of `parent`, its children that have ended, and its live
    children: PostgreSQL's postmaster and its backends."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while we looked
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == parent:
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        elif ppid == parent:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


async def many(
    seconds: float = 5.0, agents: int = 8, load_processes: int = 2, iterations: int = 300
) -> None:
    # SQLite, one process: the default store's cost per cycle, measured in this same run.
    sqlite = GatewayProcess()
    try:
        sqlite_rate, sqlite_cpu, _ = _run_load([sqlite], "cycles", agents, load_processes, seconds)
    finally:
        sqlite.stop()
    with _database_server() as (admin_url, server_cpu):
        url = postgres.new_database(admin_url, f"bench_{os.getpid()}_{next(_databases)}")
        first = GatewayProcess(url)
        second: GatewayProcess | None = None
        try:
            one_rate, one_cpu, one_server = _run_load(
                [first], "cycles", agents, load_processes, seconds, server_cpu
            )
            health, _, one_latency = await _delivery(first.url, iterations)
            second = GatewayProcess(url)
            two_rate, two_cpu, two_server = _run_load(
                [first, second], "cycles", agents, load_processes, seconds, server_cpu
            )
            health_two, _, two_latency = await _delivery(
                first.url, iterations, device_url=second.url
            )
        finally:
            first.stop()
            if second is not None:
                second.stop()
    emit(
        "store_cpu_per_cycle",
        agents=agents,
        load_processes=load_processes,
        sqlite_cycles_per_s=round(sqlite_rate, 1),
        sqlite_gateway_cpu_ms=round(sqlite_cpu * 1000, 3),
        postgres_cycles_per_s=round(one_rate, 1),
        postgres_gateway_cpu_ms=round(one_cpu * 1000, 3),
        postgres_server_cpu_ms=round(one_server * 1000, 3),
        ratio_gateway_cpu_postgres_to_sqlite=round(one_cpu / sqlite_cpu, 2),
        ratio_cycles_postgres_to_sqlite=round(one_rate / sqlite_rate, 2),
    )
    one, two = percentiles(one_latency), percentiles(two_latency)
    emit(
        "many_gateways",
        agents=agents,
        load_processes=load_processes,
        cycles_per_s_one_process=round(one_rate, 1),
        cycles_per_s_two_processes=round(two_rate, 1),
        ratio_cycles_two_to_one=round(two_rate / one_rate, 2),
        gateway_cpu_ms_per_cycle_one=round(one_cpu * 1000, 3),
        gateway_cpu_ms_per_cycle_two=round(two_cpu * 1000, 3),
        server_cpu_ms_per_cycle_one=round(one_server * 1000, 3),
        server_cpu_ms_per_cycle_two=round(two_server * 1000, 3),
        baseline_health_one=percentiles(health),
        baseline_health_two=percentiles(health_two),
        answer_to_agent_same_process=one,
        answer_to_agent_other_process=two,
        ratio_p50_answer_to_agent_other_to_same=round(two["p50_ms"] / one["p50_ms"], 2),
        target="answer through one process wakes the agent on the other within 100 ms (p50)",
    )
