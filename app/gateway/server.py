"""Running the gateway: uvicorn in the foreground, or embedded in a background thread."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import threading
import time
from dataclasses import dataclass

import uvicorn

from .api import GatewayApp, create_app
from .config import GatewayConfig
from .core.clock import Clock
from .http.connections import GuardedHttpProtocol, connection_limit

SHUTDOWN_GRACE_SECONDS = 2
YOUNG_GENERATION_THRESHOLD = 20_000  # allocations between young collections (Python: 700)


def _server(app: GatewayApp, log_level: str) -> uvicorn.Server:
    return uvicorn.Server(
        uvicorn.Config(
            app.asgi,
            log_level=log_level,
            access_log=False,  # RequestLog writes one line per request, never a header
            timeout_keep_alive=75,  # longer than the longest wait, so polls reuse connections
            # On SIGTERM parked long-polls are not waited for (they could take 60 s): after this
            # they are cut and devices reconnect to whatever serves next (#16).
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
            backlog=4096,
            lifespan="on",
            proxy_headers=False,  # the pairing rate limit keys on the peer address itself
            # 431 past 32 KiB of headers, 10 s to send them; the cheap GETs answered at once
            http=GuardedHttpProtocol.serving(app.router.answer_at_once, app.release_parked),
            # No WebSocket here: an `Upgrade: websocket` GET is an ordinary request (it was
            # handed to a WebSocket protocol the router does not speak, and answered 500).
            ws="none",
            limit_concurrency=connection_limit(),  # past it: 503 and a warning, not silence
        )
    )


def bind(host: str, port: int) -> socket.socket:
    """The listening address, taken before anything is said about it (OSError if in use)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def serve(
    config: GatewayConfig, log_level: str = "info", sock: socket.socket | None = None
) -> None:
    """Serve in the foreground until interrupted, on `sock` when already bound."""
    server = _server(create_app(config), log_level)
    sock = sock or bind(config.host, config.port)
    # What start-up loaded (the framework, the models' schemas) lives as long as the process:
    # freezing it keeps the collector from walking it on every full collection (#8, tail
    # latency with thousands of parked polls).
    gc.collect()
    gc.freeze()
    # A parked poll's few objects live until the next event, so with the default threshold
    # (700) every event's wake-up and re-polls filled the young generation with live objects
    # and the collector walked them again and again: ~6 % of the gateway's CPU with 1,000
    # devices. Collections now wait for real growth; reference counting frees the rest (#16).
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])
    server.run(sockets=[sock])


@dataclass
class EmbeddedGateway:
    """A gateway on its own thread and loop: for the app's no-config mode and for tests."""

    config: GatewayConfig
    clock: Clock | None = None
    log_level: str = "warning"

    def __post_init__(self) -> None:
        self.app = create_app(self.config, self.clock)
        self._server = _server(self.app, self.log_level)
        self._sock = bind(self.config.host, self.config.port)
        self.port = self._sock.getsockname()[1]
        self.app.own_url = self.url  # answer links name the port it really got
        self._thread = threading.Thread(target=self._run, name="ask-user-gateway", daemon=True)

    @property
    def url(self) -> str:
        host = self.config.host if ":" not in self.config.host else f"[{self.config.host}]"
        return f"http://{host}:{self.port}"

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def start(self, timeout: float = 10.0) -> EmbeddedGateway:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded gateway did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()

    def __enter__(self) -> EmbeddedGateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


logging.getLogger("ask_user").addHandler(logging.NullHandler())
