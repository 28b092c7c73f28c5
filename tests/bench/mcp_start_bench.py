"""How soon `ask-user mcp` answers `initialize` (#40): Codex sends its first model request ~1.3 s
after it starts, without waiting for MCP servers unless told to, and the server needed 1.4-2.4 s
here. Measured from spawning the process to the answer's line on stdout, alternating with the
two baselines in the same run: a Python that only starts (`python -c pass`), and one that only
imports the MCP SDK (`python -c "import mcp"`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.support import MCP_INITIALIZE

from .harness import emit, percentiles


def _spawned_until_answer() -> float:
    env = {**os.environ, "ASK_USER_AGENT_TOKEN": "agent-token-for-the-bench"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(MCP_INITIALIZE).encode() + b"\n")
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    assert b'"serverInfo"' in line, line
    process.stdin.close()
    process.wait(10)
    return elapsed


def _spawned_until_exit(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def mcp_start(runs: int = 20) -> None:
    samples: dict[str, list[float]] = {"ask-user mcp": [], "import mcp": [], "python": []}
    for _ in range(runs):  # interleaved: a slow moment of the host falls on all three
        samples["ask-user mcp"].append(_spawned_until_answer())
        samples["import mcp"].append(_spawned_until_exit("import mcp"))
        samples["python"].append(_spawned_until_exit("pass"))
    stats = {name: percentiles(values) for name, values in samples.items()}
    emit(
        "mcp_start",
        runs=runs,
        stats=stats,
        ratio_to_import_mcp_p50=round(
            stats["ask-user mcp"]["p50_ms"] / stats["import mcp"]["p50_ms"], 2
        ),
    )
