"""A device's long-poll inside the gateway, stage by stage, with no sockets (#16).

1,000 connections (the gateway's own protocol, on a transport that only keeps what is written)
take a device's poll each; reported is the cost per device per event of each stage:

- parse: httptools and the protocol's callbacks, nothing answered (the baseline);
- answered: the same, and the connection answers at once with a fixed response;
- parked: the same through the router (auth, the query, the handler) to a parked poll;
- woken: an event answers every parked poll with its cursor's shared page.

Best of 40 passes each, so the host's noise drops out. Inside the fan-out benchmark the same
code costs about twice as much: there each request is handled between the kernel's work for
its socket, with cold caches. What the kernel and uvloop cost is in `fanout`, not here.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from starlette.responses import Response
from uvicorn.server import ServerState

from app.gateway.api import create_app
from app.gateway.config import GatewayConfig
from app.gateway.http.connections import GuardedHttpProtocol
from app.protocol import DEFAULT_PERSON_ID, CreatePromptRequest
from tests.support import DEVICE_TOKEN, TOKENS

from .harness import PROMPT, emit

CONNECTIONS = 1000
PASSES = 40


class _Transport:
    """Takes writes and counts them; never closes."""

    def __init__(self) -> None:
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _ParseOnly(GuardedHttpProtocol):
    """Headers parsed, nothing answered: the request is dropped where it would be served."""

    def on_headers_complete(self) -> None:
        self._header_bytes = -1
        self._headers_due = None
        self._at_once = True


def _request(cursor: int) -> bytes:
    return (
        f"GET /v1/events?after={cursor}&wait=60 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
        f"Authorization: Bearer {DEVICE_TOKEN}\r\n\r\n"
    ).encode()


def poll_path(connections: int = CONNECTIONS, passes: int = PASSES) -> None:
    """On uvloop, as the gateway runs."""
    uvloop.run(_stages(connections, passes))


async def _stages(connection_count: int, passes: int) -> None:
    app = create_app(
        GatewayConfig(
            data_dir=Path(tempfile.mkdtemp(prefix="ask-user-bench-")),
            tokens=TOKENS,
            host="127.0.0.1",
            port=0,
        )
    )
    config = uvicorn.Config(app.asgi, lifespan="on", log_level="warning")
    config.load()
    lifespan = config.lifespan_class(config)
    await lifespan.startup()
    loop, server_state = asyncio.get_running_loop(), ServerState()
    gateway = app.state.gateway
    serving = GuardedHttpProtocol.serving(app.router.answer_at_once, app.release_parked)
    fixed = Response(b"{}", media_type="application/json")
    answering_fixed = GuardedHttpProtocol.serving(lambda scope: fixed, app.release_parked)

    def connections(kind: type[GuardedHttpProtocol]) -> list[GuardedHttpProtocol]:
        made = []
        for _ in range(connection_count):
            protocol = kind(
                config=config, server_state=server_state, app_state=lifespan.state, _loop=loop
            )
            protocol.connection_made(_Transport())  # type: ignore[arg-type]
            made.append(protocol)
        return made

    def best_pass(protocols: list[GuardedHttpProtocol], after_each: Any = None) -> float:
        """The fastest of `passes` passes of one poll per connection, per connection (µs)."""
        request, best = _request(gateway.feed.head), float("inf")
        for _ in range(passes):
            started = time.perf_counter()
            for protocol in protocols:
                protocol.data_received(request)
            best = min(best, time.perf_counter() - started)
            if after_each is not None:
                after_each(protocols)
        return best / len(protocols) * 1e6

    def let_go(protocols: list[GuardedHttpProtocol]) -> None:
        for protocol in protocols:
            if protocol._later is not None:
                protocol._later.detach()
                protocol._later = None

    stages: dict[str, float] = {"parse": best_pass(connections(_ParseOnly))}
    stages["answered"] = best_pass(connections(answering_fixed))
    stages["parked"] = best_pass(connections(serving), after_each=let_go)

    protocols, woken = connections(serving), float("inf")
    for i in range(passes):
        poll = _request(gateway.feed.head)
        for protocol in protocols:
            protocol.data_received(poll)
        written = [protocol.transport.writes for protocol in protocols]
        started = time.perf_counter()
        request = CreatePromptRequest.model_validate({**PROMPT, "sessionKey": f"p{i}"})
        await gateway.create("bench", DEFAULT_PERSON_ID, request)
        while any(p.transport.writes == n for p, n in zip(protocols, written, strict=True)):
            await asyncio.sleep(0)
        woken = min(woken, time.perf_counter() - started)
    stages["woken"] = woken / len(protocols) * 1e6
    await lifespan.shutdown()

    emit(
        "poll_path",
        connections=connection_count,
        us_per_device_per_event={name: round(us, 2) for name, us in stages.items()},
        ratio_to_parse={name: round(us / stages["parse"], 2) for name, us in stages.items()},
        repoll_and_wake_us=round(stages["parked"] + stages["woken"], 2),
    )
