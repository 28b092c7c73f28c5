"""Side by side with OpenClaw's gateway (#16): the same rounds as `fanout`, one system at a time
on the same machine, alternating, with the same kind of clients (Python, raw sockets for the
subscribed devices, in their own process).

OpenClaw's nearest loop to ours is an exec approval: the agent asks (`exec.approval.request`,
two-phase) and waits (`exec.approval.waitDecision`); every approval client hears
`exec.approval.requested`; one resolves it (`exec.approval.resolve`); all hear
`exec.approval.resolved`. Its gateway is not started here (it is a Node program, installed
from npm): start it first, then

    OPENCLAW_URL=ws://127.0.0.1:18789 OPENCLAW_TOKEN=... python -m tests.bench versus

(docs/benchmarks.md says how it was installed and started). Its process is found by name for its
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
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from . import fanout_bench, gateway_bench
from .harness import (
    AGENT_TOKEN,
    DEVICE_TOKEN,
    PROMPT,
    GatewayProcess,
    RawHttp,
    emit,
    percentiles,
    raise_file_limit,
    serve_devices,
)

_HEARD = ("exec.approval.requested", "exec.approval.resolved")


class _Socket:
    """A WebSocket client on raw asyncio streams (text frames, no extensions): as light as
    the raw HTTP/1.1 client the Ask User devices use, so neither side's client is slower."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self._ids = itertools.count(1)
        self._pong: asyncio.Future | None = None

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
        scopes = [
            "operator.read",
            "operator.write",
            "operator.approvals",
            "operator.questions",
            "operator.admin",
        ]
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

    def send(self, message: dict, opcode: int = 0x1) -> None:
        data = json.dumps(message).encode() if opcode == 0x1 else b""
        mask = os.urandom(4)
        length = len(data)
        if length < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.writer.write(head + mask + masked)

    async def ping(self) -> None:
        """A WebSocket ping and the gateway's pong: the floor of a round trip on this socket."""
        self.send({}, opcode=0x9)
        self._pong = asyncio.get_running_loop().create_future()
        while not self._pong.done():
            await self.receive()

    async def event(self, name: str) -> dict:
        """The next event called `name` (anything else arriving first is skipped)."""
        while True:
            message = await self.receive()
            if message.get("type") == "event" and message.get("event") == name:
                return message["payload"]

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
            if opcode == 0xA:  # pong
                if self._pong is not None and not self._pong.done():
                    self._pong.set_result(None)
                    return {}
                continue
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


# OpenClaw's own ask-user question, the same shape as ours (1-3 questions of 2-4 options,
# answers as {"answers": {id: [values]}}): question.request, question.resolve and
# question.waitAnswer; subscribed clients hear question.requested and question.resolved.
# Both systems are asked our benchmark prompt (OpenClaw names a question's id `questionId`).
QUESTION = {
    "questions": [
        {("questionId" if key == "id" else key): value for key, value in question.items()}
        for question in PROMPT["questions"]
    ],
    "timeoutMs": 60_000,
}
_ANSWER = {"answers": {"q": ["B"]}}  # both systems' answer body


async def _openclaw_cycles(url: str, token: str, seconds: float) -> int:
    """One agent's loop of question → answered by the answerer → the agent's waitAnswer, as
    fast as it goes, for `seconds` (each agent with its own two connections, as each of ours
    has its own keep-alive connections); returns the count."""
    agent = await _Socket.open(url, token, device=False)
    answerer = await _Socket.open(url, token, device=False)
    done = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        created = await agent.call("question.request", QUESTION)
        await answerer.call("question.resolve", {"id": created["id"], "answers": _ANSWER})
        result = await agent.call("question.waitAnswer", {"id": created["id"]})
        assert result["status"] == "answered", result
        done += 1
    agent.writer.close()
    answerer.writer.close()
    return done


# Before each system's question and before its answer, both delivery loops wait this long: our
# phone's poll and our agent's wait park in it, and in life a question comes to a gateway that
# has been idle, so both systems meet each step alike.
QUIET_SECONDS = 0.002

Deliveries = AsyncGenerator[tuple[float, float, float], None]  # floor, to device, to agent
Series = tuple[list[float], list[float], list[float]]  # the same three, iteration after iteration


async def _openclaw_delivery(url: str, token: str) -> Deliveries:
    """As gateway_bench._delivery, against OpenClaw's questions, one iteration per step: the
    floor, a WebSocket ping answered by a pong on a third connection; created → the subscribed
    device hears it; the device answers → the agent's waiting waitAnswer returns."""
    agent = await _Socket.open(url, token, device=False)
    device = await _Socket.open(url, token, device=True)
    bare = await _Socket.open(url, token, device=False)
    try:
        while True:
            started = time.monotonic()
            await bare.ping()
            floor = time.monotonic() - started
            heard = asyncio.create_task(fanout_bench._arrival(device.event("question.requested")))
            await asyncio.sleep(QUIET_SECONDS)  # as ours, whose phone parks its poll first
            started = time.monotonic()
            created = await agent.call("question.request", QUESTION)
            _, received = await heard
            to_device = received - started
            waiting = asyncio.create_task(
                fanout_bench._arrival(agent.call("question.waitAnswer", {"id": created["id"]}))
            )
            await asyncio.sleep(QUIET_SECONDS)  # the agent's wait is in
            started = time.monotonic()
            await device.call("question.resolve", {"id": created["id"], "answers": _ANSWER})
            result, received = await waiting
            assert result["status"] == "answered", result
            yield floor, to_device, received - started
    finally:
        for socket in (agent, device, bare):
            socket.writer.close()


def _openclaw_load_process(url: str, token: str, agents: int, seconds: float) -> float:
    return _load_process(_openclaw_cycles(url, token, seconds) for _ in range(agents))


def _load_process(loops: Any) -> float:
    """In a load process: the agents' loops at once; their combined cycles per second."""

    async def load() -> float:
        started = time.perf_counter()
        counts = await asyncio.gather(*loops)
        return sum(counts) / (time.perf_counter() - started)

    return asyncio.run(load())


async def _ask_user_cycles(url: str, seconds: float) -> int:
    """`_openclaw_cycles` against ours: create → answered by the phone → the agent's result
    (its wait returns at once, the answer being in), on raw keep-alive connections."""
    agent, answerer = await RawHttp.open(url, AGENT_TOKEN), await RawHttp.open(url, DEVICE_TOKEN)
    prompt = {**PROMPT, "sessionKey": os.urandom(8).hex()}  # each agent its own session
    done = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        _, created = await agent.request("POST", "/v1/prompts", prompt)
        await answerer.request("POST", f"/v1/prompts/{created['id']}/answer", _ANSWER)
        _, result = await agent.request("GET", f"/v1/prompts/{created['id']}/result?wait=30")
        assert result["status"] == "answered", result
        done += 1
    agent.close()
    answerer.close()
    return done


def _ask_user_load_process(url: str, agents: int, seconds: float) -> float:
    return _load_process(_ask_user_cycles(url, seconds) for _ in range(agents))


async def _ask_user_delivery(url: str) -> Deliveries:
    """`_openclaw_delivery` against ours: the floor, a health round trip on a third
    connection; created → the phone's parked event poll returns; the phone answers → the
    agent's parked result wait returns. The phone polls on one connection and answers on
    another, as its client's pool would."""
    agent = await RawHttp.open(url, AGENT_TOKEN)
    device, answerer = await RawHttp.open(url, DEVICE_TOKEN), await RawHttp.open(url, DEVICE_TOKEN)
    bare = await RawHttp.open(url, DEVICE_TOKEN)
    cursor = (await device.request("GET", "/v1/prompts"))[1]["cursor"]
    try:
        for i in itertools.count():
            started = time.monotonic()
            await bare.request("GET", "/v1/health")
            floor = time.monotonic() - started
            heard = asyncio.create_task(
                fanout_bench._arrival(device.request("GET", f"/v1/events?after={cursor}&wait=30"))
            )
            await asyncio.sleep(QUIET_SECONDS)  # the phone's poll is parked
            started = time.monotonic()
            _, created = await agent.request(
                "POST", "/v1/prompts", {**PROMPT, "sessionKey": f"d{i}"}
            )
            (_, page), received = await heard
            to_device = received - started
            waiting = asyncio.create_task(
                fanout_bench._arrival(
                    agent.request("GET", f"/v1/prompts/{created['id']}/result?wait=30")
                )
            )
            await asyncio.sleep(QUIET_SECONDS)  # the agent's wait is in
            started = time.monotonic()
            await answerer.request("POST", f"/v1/prompts/{created['id']}/answer", _ANSWER)
            (_, result), received = await waiting
            assert result["status"] == "answered", result
            to_agent = received - started
            cursor = (await device.request("GET", f"/v1/events?after={page['cursor']}&wait=0"))[1][
                "cursor"
            ]
            yield floor, to_device, to_agent
    finally:
        for connection in (agent, device, answerer, bare):
            connection.close()


async def _side_by_side(iterations: int, **deliveries: Deliveries) -> dict[str, Series]:
    """Each system's delivery loop one iteration at a time, in turn (the first alternating),
    so a slow moment of this shared host falls on both alike rather than on one system's
    whole block of iterations."""
    measured: dict[str, Series] = {name: ([], [], []) for name in deliveries}
    names = list(deliveries)
    for i in range(iterations):
        for name in names if i % 2 == 0 else reversed(names):
            for series, value in zip(measured[name], await anext(deliveries[name]), strict=True):
                series.append(value)
    for delivery in deliveries.values():
        await delivery.aclose()
    return measured


async def _follow(url: str) -> None:
    """One phone following our events: every page it is woken with, it polls again after."""
    device = await RawHttp.open(url, DEVICE_TOKEN)
    cursor = (await device.request("GET", "/v1/prompts"))[1]["cursor"]
    while True:
        cursor = (await device.request("GET", f"/v1/events?after={cursor}&wait=30"))[1]["cursor"]


async def _listen(url: str, token: str) -> None:
    """One phone subscribed to OpenClaw's approvals (an approval client), reading every frame."""
    socket = await _Socket.open(url, token, device=True)
    while True:
        await socket.receive()


class _Phone:
    """One subscribed device in a process of its own for the length of a `with`: during the
    cycles each system pushes every question and its resolution to one phone, as in daily use
    (and OpenClaw answers an approval nobody can see with no-route)."""

    def __init__(self, follow: Any, *args: str) -> None:
        self.process = multiprocessing.get_context("spawn").Process(
            target=_run_forever, args=(follow, *args), daemon=True
        )

    def __enter__(self) -> _Phone:
        self.process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.join(10)


def _run_forever(follow: Any, *args: str) -> None:
    asyncio.run(follow(*args))


async def everyday(
    agent_levels=(1, 8),
    seconds: float = 5.0,
    iterations: int = 1000,  # p99 the 10th slowest, not the 3rd
    repeats: int = 3,
    load_processes: int = 2,
) -> None:
    """The everyday path side by side (#27), against OpenClaw's own ask-user questions, both
    systems alternating in each repeat: with one phone, created → device and answer → agent
    beside each one's floor (our health round trip; a WebSocket ping there); then create →
    answer → result cycles per second with 1 and 8 agents and one subscribed phone, driven by
    the same kind of load processes, with each gateway's CPU per cycle."""
    url, token = _openclaw_address()
    pid = _pid()
    gateway = GatewayProcess()
    everything: dict[str, Series] = {"ask_user": ([], [], []), "openclaw": ([], [], [])}
    try:
        for repeat in range(-1, repeats):  # -1: both warm, not reported
            measured = await _side_by_side(
                20 if repeat < 0 else iterations,
                ask_user=_ask_user_delivery(gateway.url),
                openclaw=_openclaw_delivery(url, token),
            )
            if repeat < 0:
                continue
            _emit_latency(measured, repeat=repeat)
            for system, series in measured.items():
                for pooled, samples in zip(everything[system], series, strict=True):
                    pooled.extend(samples)
            with _Phone(_follow, gateway.url), _Phone(_listen, url, token):
                await asyncio.sleep(1)  # both phones connected
                for agents in agent_levels:
                    processes = min(agents, load_processes)
                    ours = gateway_bench.run_in_processes(
                        _ask_user_load_process,
                        [
                            (gateway.url, n, seconds)
                            for n in gateway_bench.spread(agents, processes)
                        ],
                        seconds,
                        gateway.cpu_seconds,
                    )
                    theirs = gateway_bench.run_in_processes(
                        _openclaw_load_process,
                        [(url, token, n, seconds) for n in gateway_bench.spread(agents, processes)],
                        seconds,
                        lambda: _cpu_seconds(pid),
                    )
                    emit(
                        "versus_everyday_cycles",
                        repeat=repeat,
                        agents=agents,
                        load_processes=processes,
                        ask_user={
                            "cycles_per_s": round(ours[0], 1),
                            "gateway_cpu_ms_per_cycle": round(ours[1] * 1000, 3),
                        },
                        openclaw={
                            "cycles_per_s": round(theirs[0], 1),
                            "gateway_cpu_ms_per_cycle": round(theirs[1] * 1000, 3),
                        },
                        ratio_cycles_per_s=round(ours[0] / theirs[0], 2),
                        ratio_cpu_per_cycle=round(ours[1] / theirs[1], 2),
                        target="cycles/s ratio >= 1",
                    )
        # One repeat's p99 is its 10th slowest iteration, and one stall of this shared host
        # moves it 1.5-2x either way; all repeats' iterations together make the p99 a
        # comparison of the two systems more than of the host's moments.
        _emit_latency(everything, repeat="all")
    finally:
        gateway.stop()


def _emit_latency(measured: dict[str, Series], repeat: int | str) -> None:
    """One row of the everyday latencies: each system's percentiles, and ours / OpenClaw's."""
    row: dict[str, Any] = {"repeat": repeat, "devices": 1, "agents": 1}
    for system, (floor, to_device, to_agent) in measured.items():
        row[system] = {
            "floor": percentiles(floor),
            "created_to_device": percentiles(to_device),
            "answer_to_agent": percentiles(to_agent),
        }
    for key in ("created_to_device", "answer_to_agent"):
        for mark in ("p50_ms", "p99_ms"):
            row[f"ratio_{key}_{mark[:3]}"] = round(
                row["ask_user"][key][mark] / row["openclaw"][key][mark], 2
            )
    emit("versus_everyday_latency", **row, target="ratios <= 1")


def _openclaw_address() -> tuple[str, str]:
    url, token = os.environ.get("OPENCLAW_URL"), os.environ.get("OPENCLAW_TOKEN")
    if not url or not token:
        raise SystemExit("set OPENCLAW_URL and OPENCLAW_TOKEN to a running OpenClaw gateway")
    return url, token


async def versus(levels=(1, 100, 500, 1000), rounds: int = 60, repeats: int = 2) -> None:
    """Both systems at each level, alternating, `repeats` times. CPU per device per event is
    taken against the same system's 1-device rounds of the same repeat (OpenClaw answers an
    approval nobody can see with no-route, so it has no 0-device figure)."""
    url, token = _openclaw_address()
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
