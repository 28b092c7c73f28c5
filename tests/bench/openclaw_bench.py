"""Side by side with OpenClaw's gateway (#16): the same rounds as `fanout`, one system at a time
on the same machine, alternating, with the same kind of clients (Python, raw sockets for the
subscribed devices, in their own process).

OpenClaw's nearest loop to ours is an exec approval: the agent asks (`exec.approval.request`,
two-phase) and waits (`exec.approval.waitDecision`); every approval client hears
`exec.approval.requested`; one resolves it (`exec.approval.resolve`); all hear
`exec.approval.resolved`. Its gateway is not started here (it is a Node program, installed
from npm): start it first, then

    OPENCLAW_URL=ws://127.0.0.1:18789 OPENCLAW_TOKEN=... python -m tests.bench versus

(BENCHMARKS.md says how it was installed and started). Its process is found by name for its
CPU time (`OPENCLAW_PID` overrides).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import multiprocessing
import os
import struct
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import fanout_bench
from .harness import GatewayProcess, emit, percentiles, raise_file_limit, serve_devices

_HEARD = ("exec.approval.requested", "exec.approval.resolved")


class _Socket:
    """A WebSocket client on raw asyncio streams (text frames, no extensions): as light as
    the raw HTTP/1.1 client the Ask User devices use, so neither side's client is slower."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self._ids = itertools.count(1)

    @classmethod
    async def open(cls, url: str, token: str, device: bool) -> _Socket:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            f"GET / HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.decode(errors="replace"))
        socket = cls(reader, writer)
        challenge = await socket.receive()
        assert challenge.get("event") == "connect.challenge", challenge
        # Devices are approval clients that see every approval; the agent and the answerer
        # are not approval clients, so they are not among the subscribed devices.
        scopes = ["operator.read", "operator.write", "operator.approvals", "operator.admin"]
        await socket.call(
            "connect",
            {
                "minProtocol": 4,
                "maxProtocol": 4,
                "client": {"id": "cli", "version": "1.0.0", "platform": "linux", "mode": "cli"},
                "role": "operator",
                "scopes": scopes,
                "caps": ["exec-approvals"] if device else [],
                "commands": [],
                "permissions": {},
                "auth": {"token": token},
            },
        )
        return socket

    def send(self, message: dict) -> None:
        data = json.dumps(message).encode()
        mask = os.urandom(4)
        length = len(data)
        if length < 126:
            head = struct.pack("!BB", 0x81, 0x80 | length)
        elif length < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.writer.write(head + mask + masked)

    async def receive(self) -> dict:
        while True:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(length)
            opcode = first & 0x0F
            if opcode == 0x9:  # ping: pong with the same payload
                self.writer.write(struct.pack("!BB", 0x8A, 0x80 | len(payload)) + b"\0" * 4)
                self.writer.write(payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("closed by the gateway")
            return json.loads(payload)

    async def call(self, method: str, params: dict) -> dict:
        """A request and its response (events arriving meanwhile are skipped)."""
        request_id = str(next(self._ids))
        self.send({"type": "req", "id": request_id, "method": method, "params": params})
        while True:
            message = await self.receive()
            if message.get("type") == "res" and message.get("id") == request_id:
                if not message.get("ok"):
                    raise RuntimeError(f"{method}: {message.get('error')}")
                return message["payload"]


async def _device(url: str, token: str, heard: dict, ready) -> None:
    socket = await _Socket.open(url, token, device=True)
    ready()
    while True:
        message = await socket.receive()
        if message.get("type") == "event" and message.get("event") in _HEARD:
            now = time.monotonic()
            heard.setdefault((message["event"], message["payload"]["id"]), []).append(now)


def _device_process(url: str, token: str, count: int, pipe: Any) -> None:
    raise_file_limit()

    def device(heard: dict, ready: Any) -> Any:
        return _device(url, token, heard, ready)

    # Fifty at a time: OpenClaw limits handshakes in progress per address (32 by default).
    asyncio.run(serve_devices(device, count, pipe, burst=50))


def _pid() -> int:
    if "OPENCLAW_PID" in os.environ:
        return int(os.environ["OPENCLAW_PID"])
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "openclaw-gatewa":
                return int(entry.name)
        except OSError:
            continue
    raise RuntimeError("no openclaw-gateway process: start it, or set OPENCLAW_PID")


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def openclaw_rounds(url: str, token: str, devices: int, rounds: int) -> dict:
    """The fan-out rounds against OpenClaw: the same measurements as fanout_bench._rounds."""
    pid = _pid()
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=_device_process, args=(url, token, devices, child)
    )
    process.start()
    assert await asyncio.to_thread(parent.recv) == "ready"
    await asyncio.sleep(0.5 + devices * 0.001)  # every hello and snapshot sent
    agent = await _Socket.open(url, token, device=False)
    answerer = await _Socket.open(url, token, device=False)

    async def all_heard(event: str, approval: str) -> tuple[float, float]:
        parent.send((event, approval))
        heard = await asyncio.to_thread(parent.recv)
        await asyncio.sleep(0.05 + devices * 0.0002)  # as fanout_bench: devices settle
        return heard

    first, median, last, to_agent, creates = [], [], [], [], []
    cpu_before = _cpu_seconds(pid)
    for i in range(rounds):
        started = time.monotonic()
        created = await agent.call(
            "exec.approval.request",
            {
                "command": f"echo round {i}",
                "cwd": "/tmp",
                "host": "gateway",
                "timeoutMs": 60_000,
                "twoPhase": True,
            },
        )
        creates.append(time.monotonic() - started)
        assert created.get("deliveryRoute") == "approval-client", created
        heard = await all_heard("exec.approval.requested", created["id"])
        first.append(heard[0] - started)
        median.append(heard[1] - started)
        last.append(heard[2] - started)
        waiting = asyncio.create_task(
            agent.call("exec.approval.waitDecision", {"id": created["id"]})
        )
        await asyncio.sleep(0.005)  # the agent's wait is in
        started = time.monotonic()
        await answerer.call("exec.approval.resolve", {"id": created["id"], "decision": "deny"})
        decided = await waiting
        to_agent.append(time.monotonic() - started)
        assert decided["decision"] == "deny", decided
        await all_heard("exec.approval.resolved", created["id"])
    cpu = _cpu_seconds(pid) - cpu_before
    rss = _rss_bytes(pid)  # with every device still connected
    parent.send(None)
    process.join(30)
    agent.writer.close()
    answerer.writer.close()
    return {
        "first": first,
        "median": median,
        "last": last,
        "to_agent": to_agent,
        "creates": creates,
        "cpu": cpu,
        "rss": rss,
    }


async def versus(levels=(1, 100, 500, 1000), rounds: int = 60, repeats: int = 2) -> None:
    """Both systems at each level, alternating, `repeats` times. CPU per device per event is
    taken against the same system's 1-device rounds of the same repeat (OpenClaw answers an
    approval nobody can see with no-route, so it has no 0-device figure)."""
    url, token = os.environ.get("OPENCLAW_URL"), os.environ.get("OPENCLAW_TOKEN")
    if not url or not token:
        raise SystemExit("set OPENCLAW_URL and OPENCLAW_TOKEN to a running OpenClaw gateway")
    raise_file_limit()
    gateway = GatewayProcess()
    try:
        await fanout_bench._rounds(gateway, 1, 20, "warm")
        await openclaw_rounds(url, token, 1, 20)
        for repeat in range(repeats):
            one: dict[str, dict] = {}
            for devices in levels:
                measured = {
                    "ask_user": await fanout_bench._rounds(
                        gateway, devices, rounds, f"v{repeat}-{devices}"
                    ),
                    "openclaw": await openclaw_rounds(url, token, devices, rounds),
                }
                if devices == 1:
                    one = measured
                row: dict[str, Any] = {"repeat": repeat, "subscribed_devices": devices}
                for system, m in measured.items():
                    row[system] = {
                        "created_to_first_device": percentiles(m["first"]),
                        "created_to_median_device": percentiles(m["median"]),
                        "created_to_last_device": percentiles(m["last"]),
                        "answer_to_agent": percentiles(m["to_agent"]),
                        "create_round_trip": percentiles(m["creates"]),
                        "gateway_cpu_seconds": round(m["cpu"], 2),
                        "gateway_rss_mb": round(m["rss"] / 1e6, 1),
                    }
                    if devices > 1 and one:
                        row[system]["gateway_cpu_per_device_per_event_us"] = round(
                            (m["cpu"] - one[system]["cpu"]) / (2 * rounds * (devices - 1)) * 1e6,
                            1,
                        )
                emit("versus", **row)
    finally:
        gateway.stop()
