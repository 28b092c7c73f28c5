"""What every channel command shares: joining the gateway as a device, running the adapter on the
device core, serving a platform's signed HTTP callbacks, and the command line around it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.device import DeviceCore, DeviceEnvironment, LocalStore, PairingError, Settings
from app.protocol import PairLink, limits, parse_link
from app.protocol.local_gateway import DEVICE_TOKEN_ENV, GATEWAY_URL_ENV

from .adapter import ChannelAdapter, ChatApi
from .messages import MessageMap


class JoinError(Exception):
    """The channel has no way to reach the gateway; the message says what to give it."""


@dataclass(frozen=True)
class Joining:
    """How a channel becomes a device on the gateway, like a phone: by a pairing link (its own
    token, revocable on its own), by a URL and token, or as it was paired before."""

    gateway_url: str | None = None
    device_token: str | None = None
    pair_link: str | None = None


async def joined_device(name: str, data_dir: Path, joining: Joining) -> DeviceCore:
    """The channel's device core, its settings in `data_dir`; JoinError when it cannot join."""
    core = DeviceCore(LocalStore(data_dir / f"{name.lower()}-device.sqlite3"))
    if joining.pair_link:
        link = parse_link(joining.pair_link)
        if not isinstance(link, PairLink):
            raise JoinError(f"not a pairing link: {joining.pair_link!r} (python -m app pair)")
        core.configure(Settings(core.settings.gateway_url, core.settings.token, name))
        try:
            await core.pair(link.gateway_url, link.code)
        except PairingError as exc:
            raise JoinError(f"pairing failed ({exc.kind}): {exc.detail}") from exc
    elif joining.gateway_url and joining.device_token:
        core.configure(Settings(joining.gateway_url, joining.device_token, name))
    elif not core.settings.configured:
        raise JoinError(
            "pair it once with --pair '<link from python -m app pair>', or set "
            f"{GATEWAY_URL_ENV} and {DEVICE_TOKEN_ENV}"
        )
    return core


@contextlib.asynccontextmanager
async def running(
    core: DeviceCore, name: str, data_dir: Path, api: ChatApi, chats: list[str]
) -> AsyncIterator[ChannelAdapter]:
    """The core syncing and the adapter mirroring it, reconciled once; all stopped on exit."""
    messages = MessageMap(data_dir / f"{name.lower()}-messages.sqlite3")
    adapter = ChannelAdapter(core, messages, api, chats)
    unsubscribe = core.subscribe(adapter.changed)
    core.start()
    try:
        await adapter.reconcile()
        yield adapter
    finally:
        unsubscribe()
        await core.stop()
        messages.close()


class JsonEndpoint:
    """An ASGI app for a platform's callbacks: the whole body and the headers go to `handle`,
    whose (status, value) is answered as JSON. A request without the platform's signature
    headers is refused before its body is read, and a body past MAX_BODY_BYTES is not read
    (nothing the platforms send comes near it): no one unsigned can make us buffer much."""

    signature_headers: tuple[str, ...] = ()

    async def handle(
        self, method: str, path: str, headers: dict[str, Any], body: bytes
    ) -> tuple[int, Any]:
        raise NotImplementedError

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["method"] == "POST" and not all(headers.get(h) for h in self.signature_headers):
            await self._answer(send, 401, {"error": "invalid_signature"})
            return
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.MAX_BODY_BYTES:
            await self._answer(send, 413, {"error": "payload_too_large"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > limits.MAX_BODY_BYTES:
                await self._answer(send, 413, {"error": "payload_too_large"})
                return
            if not message.get("more_body"):
                break
        status, answer = await self.handle(scope["method"], scope["path"], headers, body)
        await self._answer(send, status, answer)

    @staticmethod
    async def _answer(send: Any, status: int, answer: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(answer).encode()})


async def serve_http(
    app: JsonEndpoint, host: str, port: int, stop: asyncio.Event, started: Any = None
) -> None:
    """Serve `app` until `stop` is set; `started(server)` once it listens. These endpoints face
    the internet: a request's headers must be in within 10 s and a declared body within 30 s,
    as at the gateway (the same protocol), or the connection is answered 408 and closed."""
    import uvicorn

    from app.http_deadlines import DeadlineHttpProtocol

    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            http=DeadlineHttpProtocol,
            ws="none",
        )
    )
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if serving.done():
                await serving  # it could not start: say why
                return
            await asyncio.sleep(0.01)
        if started is not None:
            started(server)
        await stop.wait()
    finally:
        server.should_exit = True
        await serving


async def serve_callbacks(
    name: str,
    data_dir: Path,
    joining: Joining,
    chats: list[str],
    *,
    authorization: str,
    make_api: Callable[[httpx.AsyncClient], ChatApi],
    make_endpoint: Callable[[ChannelAdapter, Any], JsonEndpoint],
    host: str,
    port: int,
    stop: asyncio.Event | None,
    started: Any,
) -> None:
    """A channel whose platform calls back (Slack, Discord): its device joined and syncing, its
    API through one HTTP client, its endpoint served until `stop`."""
    core = await joined_device(name, data_dir, joining)
    async with httpx.AsyncClient(headers={"Authorization": authorization}, timeout=30) as http:
        api = make_api(http)
        async with running(core, name, data_dir, api, chats) as adapter:
            endpoint = make_endpoint(adapter, api)
            await serve_http(endpoint, host, port, stop or asyncio.Event(), started)


def add_arguments(parser: argparse.ArgumentParser, api_url: str, port: int | None) -> None:
    if port is not None:
        parser.add_argument("--host", default="127.0.0.1", help="where its callbacks arrive")
        parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--api-url", default=api_url, help="the platform's API root")
    parser.add_argument("--data-dir", type=Path, default=None, help="where its two files live")
    parser.add_argument(
        "--pair", metavar="LINK", help="pair with the gateway by a link from python -m app pair"
    )


def run_command(
    name: str,
    required: tuple[str, ...],
    args: argparse.Namespace,
    banner: Callable[[DeviceEnvironment], str],
    serve: Callable[[DeviceEnvironment, Joining, Path], Coroutine[Any, Any, None]],
) -> int:
    """The command around a channel: its environment read once (its own variables too), a
    missing one said plainly; then serve until interrupted."""
    environment = DeviceEnvironment.read(own=required)
    if missing := [env for env in required if env not in environment.own]:
        print(f"error: set {', '.join(missing)}", file=sys.stderr)
        return 2
    joining = Joining(environment.gateway_url, environment.device_token, args.pair)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(banner(environment), flush=True)
    data_dir = args.data_dir or environment.data_dir() / name.lower()
    try:
        asyncio.run(serve(environment, joining, data_dir))
    except JoinError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0
