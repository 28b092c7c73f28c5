"""`python -m tests.bench [latency|capacity|throughput|fanout|pollpath|device|versus]` (all
but versus, which needs a running OpenClaw gateway, when no name is given)."""

from __future__ import annotations

import asyncio
import sys

from . import device_bench, fanout_bench, gateway_bench, openclaw_bench, poll_path_bench

BENCHMARKS = {
    "latency": lambda: asyncio.run(gateway_bench.latency()),
    "capacity": lambda: asyncio.run(gateway_bench.capacity()),
    "throughput": lambda: asyncio.run(gateway_bench.throughput()),
    "fanout": lambda: asyncio.run(fanout_bench.fanout()),
    "pollpath": poll_path_bench.poll_path,
    "device": device_bench.timeline,
    "versus": lambda: asyncio.run(openclaw_bench.versus()),
}
BY_DEFAULT = [name for name in BENCHMARKS if name != "versus"]


def main(argv: list[str]) -> int:
    names = argv or BY_DEFAULT
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}",
            file=sys.stderr,
        )
        return 2
    for name in names:
        BENCHMARKS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
