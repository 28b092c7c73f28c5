"""The gateway app, assembled: the store chosen (`open_store`), the core started and stopped
with uvicorn's lifespan, the background jobs (retention, hearing other processes), and the
state the handlers reach (`AppState`). The endpoints are http/endpoints.py's table."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from app.protocol import (
    DEFAULT_PERSON_ID,
    PromptRecord,
    ProtocolError,
)

from .config import GatewayConfig
from .core.auth import Authenticator
from .core.clock import Clock
from .core.devices import DeviceRegistry
from .core.eager import spawn
from .core.notify import Announcer
from .core.people import People
from .core.reminders import Reminders
from .core.service import Gateway
from .http.endpoints import ENDPOINTS, openapi_json
from .http.remote_mcp import RemoteMcp
from .http.request_log import RequestLog
from .http.routing import Router
from .http.state import AppState
from .store.storage import PRUNE_BATCH, Store

log = logging.getLogger("ask_user.gateway")


# ---- the app ---------------------------------------------------------------------------------


async def open_store(config: GatewayConfig) -> Store:
    """PostgreSQL when a database URL is configured, else the SQLite file in the data folder."""
    if config.database_url:
        from .store.postgres import PostgresStore

        return await PostgresStore.open(config.database_url, config.postgres)
    from .store.sqlite import PromptStore

    return PromptStore(config.db_path, synchronous=config.synchronous)


class GatewayApp:
    """The gateway's parts: `asgi` (the request log around the router) is what uvicorn runs;
    the store opens and the deadlines arm at start-up (lifespan), and close at shut-down."""

    def __init__(self, config: GatewayConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock
        self.state = AppState(auth=Authenticator(config.tokens), public_url=config.public_url)
        self.state.schema = openapi_json()
        self.remote_mcp = self.state.remote_mcp = RemoteMcp(self.state)
        self.router = Router(ENDPOINTS, self.state, lifespan=self._lifespan)
        self.asgi = RequestLog(self.router)  # what uvicorn runs
        self._stop: list[Any] = []
        # Where answer links point without a public URL: this address (the embedded gateway
        # sets the port it really got).
        self.own_url = f"http://{config.host}:{config.port}"

    async def _lifespan(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                    await self.remote_mcp.start()
                except Exception as exc:
                    log.exception("the gateway could not start")
                    await self._shut()
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.remote_mcp.stop()  # its calls cancel their prompts first
                await self._shut()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _start(self) -> None:
        config = self.config
        store = await open_store(config)
        self._stop.append(store.close)
        gateway = Gateway(store, self.clock, config.engaged_grace_seconds)
        expired = await gateway.start()
        if expired:
            log.info(
                "expired %d prompt(s) whose deadline passed while the gateway was down", expired
            )
        self.state.gateway = gateway
        devices, people = DeviceRegistry(store.db), People(store.db)
        await devices.reload()
        await people.reload()
        self.state.auth.attach(devices, people, gateway.clock.now_ms)
        announcer = _announcer(config, self.own_url)
        loop = asyncio.get_running_loop()
        if announcer is not None:
            reminders = Reminders(
                gateway.clock, lambda prompt_id: _pending(gateway, prompt_id), announcer.announce
            )
            reminders.start(loop)
            gateway.on_created = _default_persons(announcer.announce, reminders)
            gateway.on_engaged = reminders.engaged
            self._stop += [announcer.close, reminders.stop]
        retention = loop.create_task(_retain(gateway, config))

        async def reload_registry() -> None:
            await people.reload()
            for device_id in await devices.reload():
                gateway.feed.device_revoked(device_id)

        def registry_changed() -> None:
            spawn(reload_registry(), "reloading devices and people")

        following = loop.create_task(store.follow(gateway.heard_of, registry_changed))
        self._stop += [retention.cancel, following.cancel, gateway.stop]

    def release_parked(self) -> None:
        """The server is stopping: long-polls end with an empty page, result waits pending."""
        gateway = self.state.gateway
        if gateway is not None:
            gateway.feed.release_all()
            gateway.waiters.release_all()

    async def _shut(self) -> None:
        """Everything started, stopped in the reverse order (the store last)."""
        for stop in reversed(self._stop):
            if inspect.isawaitable(stopped := stop()):
                await stopped
        self._stop.clear()


def create_app(config: GatewayConfig, clock: Clock | None = None) -> GatewayApp:
    return GatewayApp(config, clock)


def _announcer(config: GatewayConfig, own_url: str) -> Announcer | None:
    if not config.notify_urls:
        return None
    try:
        announcer = Announcer(config.notify_urls, config.public_url or own_url)
    except ImportError:
        log.error("ASK_USER_NOTIFY is set but Apprise is missing: pip install 'ask-user[notify]'")
        return None
    log.info("announcing new prompts to %d notifier(s)", announcer.targets)
    return announcer


def _default_persons(
    announce: Callable[[PromptRecord, str], None], reminders: Reminders
) -> Callable[..., None]:
    """The notifiers named in the environment are the default person's, like its tokens: a
    colleague's prompt is not announced on them (nor reminded of)."""

    def announced(record: PromptRecord, person: str, link: str) -> None:
        if person == DEFAULT_PERSON_ID:
            announce(record, link)
            reminders.created(record, link)

    return announced


async def _pending(gateway: Gateway, prompt_id: str) -> bool:
    """Still waiting, and its deadline never moved for the person answering it (that may have
    been told to another gateway process)."""
    record = await gateway.get(prompt_id, None)
    return record.is_pending and record.original_expires_at is None


async def _retain(gateway: Gateway, config: GatewayConfig) -> None:
    """Hourly: drop terminal prompts after 30 days, events and keys after 24 h (configurable),
    a batch at a time with the loop free in between, then give the space back."""
    store = gateway.store
    while True:
        now = gateway.clock.now_ms()
        cutoffs = {
            "prompts_before_ms": now - int(config.prompt_retention_days * 86_400_000),
            "events_before_ms": now - int(config.event_retention_hours * 3_600_000),
        }
        removed = 0
        try:
            while (gone := await store.prune_batch(**cutoffs)) >= PRUNE_BATCH:
                removed += gone
                await asyncio.sleep(0)
            removed += gone
            while removed and await store.reclaim_some():
                await asyncio.sleep(0)
        except ProtocolError as exc:  # the store is busy or full: try again next time
            log.warning("retention: %s", exc.message)
        if removed:
            log.info("retention: removed %d old row(s)", removed)
        await asyncio.sleep(3600)
