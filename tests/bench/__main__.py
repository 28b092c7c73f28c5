"""`python -m tests.bench [--quick] [NAME ...]`, NAME one of latency, capacity, throughput,
fanout, pollpath, device, many, pgnet, mcpstart, screen, versus,
everyday; with none, all but versus and
everyday (which need a running OpenClaw gateway).

`--quick` runs each with a few iterations and small sizes: its figures mean nothing, but a
benchmark that no longer runs fails (`.ci/run` does this, so none rots unnoticed).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable

from . import (
    device_bench,
    fanout_bench,
    gateway_bench,
    many_bench,
    mcp_start_bench,
    openclaw_bench,
    pgnet_bench,
    poll_path_bench,
    screen_bench,
)

# name → (the measurement, the same in quick mode)
BENCHMARKS: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
    "latency": (
        lambda: asyncio.run(gateway_bench.latency()),
        lambda: asyncio.run(gateway_bench.latency(iterations=10, idle_levels=(1, 10))),
    ),
    "capacity": (
        lambda: asyncio.run(gateway_bench.capacity()),
        lambda: asyncio.run(gateway_bench.capacity(levels=(50,), iterations=10)),
    ),
    "throughput": (
        lambda: asyncio.run(gateway_bench.throughput()),
        lambda: asyncio.run(gateway_bench.throughput(seconds=0.5, concurrency_levels=(1,))),
    ),
    "fanout": (
        lambda: asyncio.run(fanout_bench.fanout()),
        lambda: asyncio.run(fanout_bench.fanout(levels=(0, 10), rounds=5)),
    ),
    "pollpath": (poll_path_bench.poll_path, lambda: poll_path_bench.poll_path(50, 3)),
    "device": (device_bench.timeline, lambda: device_bench.timeline(count=300, runs=1)),
    "many": (
        lambda: asyncio.run(many_bench.many()),
        lambda: asyncio.run(many_bench.many(seconds=0.5, agents=2, iterations=10)),
    ),
    "pgnet": (
        lambda: asyncio.run(pgnet_bench.pgnet()),
        lambda: asyncio.run(
            pgnet_bench.pgnet(seconds=0.5, delays_ms=(1.0,), agent_levels=(2,), lock_seconds=1.0)
        ),
    ),
    "mcpstart": (mcp_start_bench.mcp_start, lambda: mcp_start_bench.mcp_start(runs=1)),
    "screen": (
        lambda: asyncio.run(screen_bench.screen()),
        lambda: asyncio.run(
            screen_bench.screen(histories=(0, 50), layouts=("stepper",), questions=3)
        ),
    ),
    "versus": (lambda: asyncio.run(openclaw_bench.versus()), lambda: None),
    "everyday": (lambda: asyncio.run(openclaw_bench.everyday()), lambda: None),
}
NEED_OPENCLAW = ("versus", "everyday")
BY_DEFAULT = [name for name in BENCHMARKS if name not in NEED_OPENCLAW]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [a for a in argv if a != "--quick"] or BY_DEFAULT
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        BENCHMARKS[name][1 if quick else 0]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
