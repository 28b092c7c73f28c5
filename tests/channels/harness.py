"""What the channel tests share: a local HTTP server on a thread (the platforms' stand-ins), an
adapter's `serve()` on its own loop, and an agent asking through `ask_user` meanwhile."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar

import uvicorn

from app.agent import ask_user
from tests.support import AGENT_TOKEN, prompt_body

SINGLE = prompt_body()["questions"]
SEVERAL = [
    SINGLE[0],
    {
        "id": "features",
        "header": "Features",
        "question": "Which ones?",
        "multiSelect": True,
        "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Dark mode"}],
    },
]


class LocalServer:
    """An ASGI app served on 127.0.0.1 from a thread, for as long as a test needs it."""

    def __init__(self, app: Any) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[sock])), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Any:
        self._thread.start()
        while not self._server.started:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()


Serve = Callable[[asyncio.Event, Callable[[Any], None]], Coroutine[Any, Any, None]]


class RunningChannel:
    """A channel's `serve(stop=..., started=...)` on its own thread and loop, stopped on request
    (as a process would be); waits until it listens when it takes `started`."""

    def __init__(self, serve: Serve, waits_for_start: bool = True) -> None:
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        ready = threading.Event()
        coroutine = serve(self._stop, lambda _server: ready.set())
        self._thread = threading.Thread(
            target=self._loop.run_until_complete, args=(coroutine,), daemon=True
        )
        self._thread.start()
        assert not waits_for_start or ready.wait(20)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(20)
        assert not self._thread.is_alive()


class Agent:
    """`ask_user` on a thread; stopped when its test ends (an agent left asking would go on
    polling, with jittered backoff, into later tests)."""

    running: ClassVar[list[Agent]] = []

    def __init__(self, gateway, questions: list[dict], session: str = "tg") -> None:
        self.result: dict[str, Any] | None = None
        self._abort = threading.Event()

        def ask() -> None:
            self.result = ask_user(
                questions,
                session_key=session,
                gateway_url=gateway.url,
                token=AGENT_TOKEN,
                abort=self._abort,
            )

        self._thread = threading.Thread(target=ask, daemon=True)
        self._thread.start()
        Agent.running.append(self)

    def wait(self) -> dict[str, Any]:
        self._thread.join(30)
        assert self.result is not None
        return self.result

    def stop(self) -> None:
        self._abort.set()
        self._thread.join(30)


def stalled_bodies_are_cut(port: int, path: str, signature_headers: dict[str, str]) -> None:
    """Connections that send signed headers and one byte of a 60,000-byte body (#39): each is
    answered 408 and closed once the body deadline passes, not held open for ever."""
    head = "".join(f"{name}: {value}\r\n" for name, value in signature_headers.items())
    request = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: 60000\r\n\r\nx"
    ).encode()
    stalled = []
    for _ in range(20):
        conn = socket.create_connection(("127.0.0.1", port), timeout=15)
        conn.sendall(request)
        stalled.append(conn)
    try:
        for conn in stalled:
            answer = b""
            while chunk := conn.recv(4096):  # until the server closes it (or the 15 s timeout)
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408"), answer
    finally:
        for conn in stalled:
            conn.close()
