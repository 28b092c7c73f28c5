"""Shared pieces: a gateway in its own process, percentiles, file limits, machine facts."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.support import AGENT_TOKEN, DEVICE_TOKEN
from tests.support import GatewayProcess as TestGatewayProcess


def raise_file_limit() -> int:
    """Raise this process's open-file limit to its hard limit (never the machine's)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


async def serve_devices(
    device: Callable[[dict, Callable[[], None]], Awaitable[None]],
    count: int,
    pipe: Any,
    burst: int,
    settle: float = 0.0,
) -> None:
    """In a devices' process: start `count` devices, `burst` at a time (`device(heard, ready)`
    records when it heard each key and calls `ready` once connected); once all are in (and
    `settle` seconds later) say "ready", then answer each key the measuring process sends with
    when the first, the median and the last device heard it; None ends it."""
    heard: dict[Any, list[float]] = {}
    connected = 0

    def ready() -> None:
        nonlocal connected
        connected += 1

    tasks = []
    for i in range(count):
        tasks.append(asyncio.create_task(device(heard, ready)))
        if i % burst == burst - 1:
            await asyncio.sleep(0.05)
    while connected < count:
        await asyncio.sleep(0.01)
        for task in tasks:
            if task.done() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    await asyncio.sleep(settle)
    pipe.send("ready")
    while (key := await asyncio.to_thread(pipe.recv)) is not None:
        while len(heard.get(key, ())) < count:
            await asyncio.sleep(0.0005)
        times = sorted(heard.pop(key))
        pipe.send((times[0], times[len(times) // 2], times[-1]))  # first, median, last
    for task in tasks:
        task.cancel()


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)

    def pick(q: float) -> float:
        return round(ms[min(len(ms) - 1, int(q * len(ms)))], 3)

    return {
        "n": len(ms),
        "p50_ms": pick(0.50),
        "p95_ms": pick(0.95),
        "p99_ms": pick(0.99),
        "mean_ms": round(statistics.fmean(ms), 3),
    }


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def emit(name: str, **data: Any) -> None:
    print(json.dumps({"benchmark": name, "machine": machine(), **data}), flush=True)


class GatewayProcess(TestGatewayProcess):
    """`python -m app gateway` in its own process (its own core and GIL), fresh data dir,
    with the file limit raised for thousands of connections, at the gateway's default log
    level: what a person runs, and what an outside client measures (#23: with warnings only,
    the benchmark read half the CPU per device per event an outside check did)."""

    def __init__(self, database_url: str | None = None) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="ask-user-bench-")
        super().__init__(
            Path(self.tmp.name) / "data",
            log_level="info",
            preexec_fn=raise_file_limit,
            extra_args=["--database-url", database_url] if database_url else [],
        )
        self.start()

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time the gateway process has used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        try:
            self.terminate()
        except subprocess.TimeoutExpired:  # open long-polls can hold a graceful shutdown
            self.kill()
        self.tmp.cleanup()


def _client(url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=90,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=None),
    )


class RawHttp:
    """A keep-alive HTTP/1.1 connection on raw asyncio streams, one request at a time, JSON in
    and out: as light as the raw WebSocket client the OpenClaw side of `versus` uses, so the
    same weight of client drives both systems (httpx costs the measuring process more per
    request than either gateway does)."""

    _LENGTH = re.compile(rb"content-length: *(\d+)", re.I)

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: str):
        self.reader, self.writer, self._head = reader, writer, head

    @classmethod
    async def open(cls, url: str, token: str) -> RawHttp:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer, f"Host: {parts.netloc}\r\nAuthorization: Bearer {token}\r\n")

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """The status and the decoded JSON body of one request on this connection."""
        if body is None:
            self.writer.write(f"{method} {path} HTTP/1.1\r\n{self._head}\r\n".encode())
        else:
            data = json.dumps(body).encode()
            self.writer.write(
                f"{method} {path} HTTP/1.1\r\n{self._head}Content-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = self._LENGTH.search(head)
        payload = await self.reader.readexactly(int(length.group(1)) if length else 0)
        return int(head[9:12]), json.loads(payload) if payload else None

    def close(self) -> None:
        self.writer.close()


def agent_client(url: str) -> httpx.AsyncClient:
    return _client(url, AGENT_TOKEN)


def device_client(url: str) -> httpx.AsyncClient:
    return _client(url, DEVICE_TOKEN)


PROMPT = {
    "questions": [
        {
            "id": "q",
            "header": "Bench",
            "question": "Which one?",
            "options": [{"label": "A"}, {"label": "B"}],
        }
    ]
}
