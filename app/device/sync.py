"""The sync loop: keep the local store in step with the gateway, and deliver the outbox.

One poller (snapshot, then long-poll events from the cursor; 410 → re-sync) and one sender
(outbox entries, retried until a 200 or a 409 settles them) run on the app's event loop.
Network errors back off exponentially with jitter (0.5 s to 30 s) and reset on success.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from pydantic import ValidationError

from app.protocol import (
    ErrorCode,
    PromptRecord,
    ProtocolError,
    canonicalize_answers,
    limits,
)
from app.protocol.backoff import Backoff

from .client import (
    AlreadyResolved,
    CursorExpired,
    GatewayClient,
    GatewayError,
    NotFound,
    Unauthorized,
    pair_device,
)
from .environment import DeviceEnvironment
from .state import (
    EVERYTHING,
    Change,
    Connection,
    ConnectionState,
    DisplayStatus,
    ServerClock,
    SharedDraft,
    TimelineItem,
    display_status,
)
from .store import LocalStore

log = logging.getLogger("ask_user.device")

BACKOFF_START = 0.5
BACKOFF_CAP = 30.0
POLL_WAIT = limits.DEFAULT_EVENTS_WAIT_SECONDS
OFFSET_SAVE_MS = 1000  # the gateway's clock offset is saved when it moved this much
DRAFT_DELAY = 0.25  # a draft goes to the gateway this long after the last change (typing)


@dataclass(frozen=True)
class Settings:
    gateway_url: str = ""
    token: str = ""
    device_name: str = ""

    @property
    def configured(self) -> bool:
        return bool(self.gateway_url and self.token)

    @classmethod
    def load(cls, store: LocalStore) -> Settings:
        """The settings kept in the local store (empty ones before the first configuration)."""
        return cls(**(store.get_json("settings") or {}))

    def save(self, store: LocalStore) -> None:
        store.set_json("settings", self.__dict__)

    @classmethod
    def from_environment(cls, saved: Settings, env: DeviceEnvironment) -> Settings | None:
        """A gateway named by the environment (`ASK_USER_GATEWAY_URL` and
        `ASK_USER_DEVICE_TOKEN`), keeping the saved device name; it wins over what is saved:
        what is set explicitly for this run beats what was remembered. None when unnamed."""
        url, token = env.gateway_url, env.device_token
        if not (url and token):
            return None
        return cls(gateway_url=url, token=token, device_name=saved.device_name)


class PairingError(Exception):
    """Pairing failed; `kind` is "input", "code" (unknown, used or expired), "limit" (too many
    wrong codes), "network" or "gateway"."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class DeviceCore:
    """The app without its widgets: store + sync + outbox, one observable state for the UI."""

    def __init__(
        self, store: LocalStore, *, poll_wait: float = POLL_WAIT, clock: ServerClock | None = None
    ) -> None:
        self.store = store
        self.device_id = store.device_id
        self._saved_offset_ms = int(store.get_meta("clock_offset_ms", "0") or 0)
        self.clock = clock or ServerClock(offset_ms=self._saved_offset_ms)
        self.poll_wait = poll_wait
        self.connection = ConnectionState(Connection.CONNECTING)
        self._listeners: list[tuple[Callable[[Change], None], object | None]] = []
        self._client: GatewayClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox_ready = asyncio.Event()
        self._settings_changed = asyncio.Event()
        self.settings = Settings.load(store)
        self._loop: asyncio.AbstractEventLoop | None = None  # the sync loop's, once started
        self._engaged_at: dict[str, float] = {}  # prompt id → when the gateway was told
        # Answers in progress (v1.4): the newest of each waiting prompt, from this app's
        # windows or the person's other devices; and what is still to go to the gateway.
        self._drafts: dict[str, SharedDraft] = {}
        self._draft_serial = 0
        self._drafts_out: dict[str, dict[str, list[str]]] = {}  # the loop's, newest only
        # Prompts whose drafts are on their way, with their sender (held: a task nobody
        # holds may be collected mid-way). The loop's.
        self._draft_senders: dict[str, asyncio.Task[None]] = {}

    # ---- observing ---------------------------------------------------------------------

    def subscribe(
        self, listener: Callable[[Change], None], owner: object | None = None
    ) -> Callable[[], None]:
        """`listener(change)` after each change: the prompts that changed, or EVERYTHING.
        `owner`: the window it belongs to, not told of the drafts it shares itself."""
        entry = (listener, owner)
        self._listeners.append(entry)
        return lambda: self._listeners.remove(entry)

    def _changed(self, change: Change = EVERYTHING, *, not_to: object | None = None) -> None:
        for listener, owner in list(self._listeners):
            if not_to is not None and owner is not_to:
                continue
            try:
                listener(change)
            except Exception:  # a broken view must not stop the sync loop
                log.exception("timeline listener failed")

    def _set_connection(
        self, kind: Connection, next_try: float | None = None, detail: str = ""
    ) -> None:
        state = ConnectionState(kind, next_try, detail)
        if state != self.connection:
            self.connection = state
            self._changed(frozenset())  # no prompt changed

    def timeline(
        self, session_key: str | None = None, limit: int = 50, before: str | None = None
    ) -> list[TimelineItem]:
        """A page of the timeline, oldest first, each item with its display status now."""
        return [
            display_status(p, self.device_id, self.clock)
            for p in self.store.page(session_key=session_key, limit=limit, before=before)
        ]

    def waiting(self, session_key: str | None = None) -> list[TimelineItem]:
        """Every prompt still pending in the store, oldest first (no page limit)."""
        return [
            display_status(p, self.device_id, self.clock)
            for p in self.store.waiting(session_key=session_key)
        ]

    def item(self, prompt_id: str) -> TimelineItem | None:
        stored = self.store.get(prompt_id)
        return display_status(stored, self.device_id, self.clock) if stored else None

    # ---- what the person does ----------------------------------------------------------

    def answer(self, prompt_id: str, answers: dict[str, list[str]]) -> TimelineItem:
        """Validate, then keep the answer in the outbox before it goes anywhere."""
        item = self._open_item(prompt_id)
        canonical = canonicalize_answers(item.record.questions, answers)
        self.store.enqueue(prompt_id, "answer", canonical)
        return self._queued(prompt_id)

    def engaged(self, record: PromptRecord) -> bool:
        """The person chose or typed on this pending prompt (the record the screen shows):
        with little time left, the gateway is told (at most once per ENGAGED_EVERY_SECONDS a
        prompt), so its deadline moves (docs/PROTOCOL.md v1.4). Called on every keystroke, so
        it reads nothing from the store; best effort, off the caller's path. True when told."""
        client, loop = self._client, self._loop
        if not record.is_pending or client is None or loop is None:
            return False
        if self.clock.seconds_left(record) >= limits.ENGAGED_GRACE_SECONDS:
            return False
        now = time.monotonic()
        if now - self._engaged_at.get(record.id, -math.inf) < limits.ENGAGED_EVERY_SECONDS:
            return False
        self._engaged_at[record.id] = now
        asyncio.run_coroutine_threadsafe(self._tell_engaged(client, record.id), loop)
        return True

    async def _tell_engaged(self, client: GatewayClient, prompt_id: str) -> None:
        try:
            await client.engaged(prompt_id, self.device_id)
        except (GatewayError, httpx.TransportError) as exc:  # the deadline stays: no harm
            log.debug("could not say the person is answering %s: %s", prompt_id, exc)

    # ---- drafts (v1.4) ---------------------------------------------------------------------

    def draft_of(self, prompt_id: str) -> SharedDraft | None:
        """The newest answer in progress of a waiting prompt, from anywhere but nothing sent."""
        return self._drafts.get(prompt_id)

    def share_draft(self, prompt_id: str, answers: dict[str, list[str]], source: object) -> None:
        """The person chose or typed in one window: the app's other windows show it at once,
        and the person's other devices shortly after (one request per pause in typing)."""
        self._keep_draft(prompt_id, answers, source)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._queue_draft, prompt_id, answers)

    def _keep_draft(
        self,
        prompt_id: str,
        answers: dict[str, list[str]],
        source: object,
    ) -> None:
        self._draft_serial += 1
        self._drafts[prompt_id] = SharedDraft(self._draft_serial, answers, source)
        # Not to the window it came from: drawn again while the person types, its text field
        # was sent a value a keystroke behind and lost letters on a loaded machine.
        self._changed(frozenset({prompt_id}), not_to=source)

    def _queue_draft(self, prompt_id: str, answers: dict[str, list[str]]) -> None:
        """On the loop: keep the newest; one sender per prompt, so the drafts of a prompt
        reach the gateway in the order they were made (two requests in flight at once could
        arrive the other way round, and the older would win)."""
        self._drafts_out[prompt_id] = answers
        if prompt_id not in self._draft_senders:
            sender = asyncio.get_running_loop().create_task(self._send_drafts(prompt_id))
            self._draft_senders[prompt_id] = sender

    async def _send_drafts(self, prompt_id: str) -> None:
        """Each pause in the person's changes, the newest draft, one request at a time."""
        try:
            while True:
                await asyncio.sleep(DRAFT_DELAY)
                answers, client = self._drafts_out.pop(prompt_id, None), self._client
                if answers is None or client is None:
                    return
                try:
                    await client.draft(
                        prompt_id, answers, self.device_id, self.settings.device_name
                    )
                except GatewayError as exc:
                    if exc.code != ErrorCode.TOO_MANY_DRAFTS:  # answered, or not theirs
                        log.debug("could not share the draft of %s: %s", prompt_id, exc)
                        continue
                    # Typed faster than the gateway takes drafts: the newest goes after a
                    # pause, so the other devices end on what the person typed last.
                    self._drafts_out.setdefault(prompt_id, answers)
                    await asyncio.sleep(min(5.0, float(exc.body.get("retryAfter") or 1)))
                except httpx.TransportError as exc:  # offline
                    log.debug("could not share the draft of %s: %s", prompt_id, exc)
        finally:
            self._draft_senders.pop(prompt_id, None)

    def _heard_drafts(self, records: list[PromptRecord]) -> frozenset[str]:
        """Drafts of the person's other devices, from a page of events; a prompt that ended
        takes its draft with it."""
        changed: set[str] = set()
        for record in records:
            draft = record.draft
            if not record.is_pending:
                self._drafts_out.pop(record.id, None)
                if self._drafts.pop(record.id, None) is not None:
                    changed.add(record.id)
            elif draft is not None and draft.device_id != self.device_id:
                self._draft_serial += 1
                self._drafts[record.id] = SharedDraft(
                    self._draft_serial, draft.answers, None, draft.device_name
                )
                changed.add(record.id)
        return frozenset(changed)

    def answer_late(self, prompt_id: str, answers: dict[str, list[str]]) -> TimelineItem:
        """Answer anyway (v1.4): an expired or run-stopped prompt, within the day it takes a
        late answer; validated, then kept in the outbox before it goes anywhere."""
        item = self.item(prompt_id)
        if item is None or not item.late_answer_offered(self.clock.now_ms()):
            raise ProtocolError(
                ErrorCode.ALREADY_RESOLVED, "this prompt takes no late answer (any more)"
            )
        canonical = canonicalize_answers(item.record.questions, answers)
        self.store.enqueue(prompt_id, "late", canonical)
        return self._queued(prompt_id)

    def dismiss(self, prompt_id: str) -> TimelineItem:
        self._open_item(prompt_id)
        self.store.enqueue(prompt_id, "dismiss", None)
        return self._queued(prompt_id)

    def clear_history(self, session_key: str | None = None) -> int:
        removed = self.store.clear_history(session_key)
        self._changed()
        return removed

    def _open_item(self, prompt_id: str) -> TimelineItem:
        item = self.item(prompt_id)
        if item is None or item.status != DisplayStatus.PENDING:
            status = item.status.value if item else "unknown"
            raise ProtocolError(
                ErrorCode.ALREADY_RESOLVED, f"this prompt no longer takes answers ({status})"
            )
        return item

    def _queued(self, prompt_id: str) -> TimelineItem:
        self._outbox_ready.set()
        self._changed(frozenset({prompt_id}))
        item = self.item(prompt_id)
        assert item is not None
        return item

    # ---- settings ----------------------------------------------------------------------

    def configure(self, settings: Settings) -> None:
        """New gateway URL / token / name: saved, and the loop reconnects with them. Another
        gateway's cursor means nothing here: the loop starts from its prompt list."""
        if settings.gateway_url.rstrip("/") != self.settings.gateway_url.rstrip("/"):
            self.store.forget_cursor()
        self.settings = settings
        settings.save(self.store)
        self._settings_changed.set()
        self._changed()

    async def pair(self, gateway_url: str, code: str) -> Settings:
        """Pair with a gateway by its code, then use the token it gave this device. Raises
        `PairingError` and changes nothing when that fails."""
        url = gateway_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")) or not code.strip():
            raise PairingError("input", "a gateway URL (http:// or https://) and a code")
        try:
            paired = await pair_device(url, code, self.settings.device_name)
        except GatewayError as exc:
            kind = {
                ErrorCode.PAIRING_INVALID: "code",
                ErrorCode.TOO_MANY_ATTEMPTS: "limit",
            }.get(exc.code, "input" if exc.status == 422 else "gateway")
            raise PairingError(kind, exc.message) from exc
        except ValidationError as exc:
            raise PairingError("input", str(exc)) from exc
        except (httpx.TransportError, httpx.InvalidURL, ValueError) as exc:
            raise PairingError("network", str(exc) or type(exc).__name__) from exc
        self.configure(Settings(url, paired.token, paired.name))
        return self.settings

    # ---- running -----------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tasks = [asyncio.create_task(self._run(), name="ask-user-sync")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        await self._close_client()

    async def _close_client(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _run(self) -> None:
        """Per settings: connect, sync and send until the settings change."""
        while True:
            self._settings_changed.clear()
            if not self.settings.configured:
                self._set_connection(Connection.UNCONFIGURED)
                await self._settings_changed.wait()
                continue
            self._client = GatewayClient(self.settings.gateway_url, self.settings.token)
            workers = [
                asyncio.create_task(self._poll(self._client)),
                asyncio.create_task(self._send(self._client)),
            ]
            changed = asyncio.create_task(self._settings_changed.wait())
            try:
                await asyncio.wait([*workers, changed], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in [*workers, changed]:
                    task.cancel()
                for task in workers:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
                await self._close_client()

    async def _poll(self, client: GatewayClient) -> None:
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        needs_resync = self.store.cursor is None
        self._set_connection(Connection.CONNECTING)
        while True:
            try:
                if needs_resync:
                    await self._resync(client)
                    needs_resync = False
                connected = self.connection.kind == Connection.CONNECTED
                # The first poll after (re)connecting returns at once, so the state shows it.
                page = await client.events(
                    self.store.cursor, wait=self.poll_wait if connected else 0
                )
                self._observe_time(page.server_time.timestamp())
                records = [e.prompt for e in page.events]
                changed = self.store.apply_many(records, page.cursor)
                changed |= self._heard_drafts(records)
                backoff.reset()
                self._set_connection(Connection.CONNECTED)
                if changed:
                    self._changed(changed)
            except CursorExpired:
                needs_resync = True
            except Unauthorized as exc:
                self._set_connection(Connection.UNAUTHORIZED, detail=exc.message)
                await asyncio.Event().wait()  # until the settings change (this task is cancelled)
            except (httpx.TransportError, GatewayError) as exc:
                if isinstance(exc, GatewayError) and exc.status == 422:
                    needs_resync = True  # a cursor this gateway does not know: start again
                    continue
                delay = backoff.next_delay()
                log.info("gateway unreachable (%s); next try in %.1fs", exc, delay)
                self._set_connection(
                    Connection.RECONNECTING, time.monotonic() + delay, detail=str(exc)
                )
                await asyncio.sleep(delay)

    async def _resync(self, client: GatewayClient) -> None:
        """Pending prompts from the gateway, and the fate of ones we held as pending."""
        snapshot = await client.pending()
        self._observe_time(snapshot.server_time_ms / 1000)
        fresh = {p.id for p in snapshot.prompts}
        self.store.apply_many(snapshot.prompts)
        for prompt_id in self.store.pending_ids():
            if prompt_id in fresh:
                continue
            try:
                self.store.apply(await client.prompt(prompt_id))
            except NotFound:
                self.store.mark_gone(prompt_id)
        self.store.set_meta("cursor", snapshot.cursor)
        self._changed()

    def _observe_time(self, server_seconds: float) -> None:
        """The gateway's clock, from a response; the offset is kept for the next start only
        when it moved by a second or more (not a write on every event's way to the screen)."""
        self.clock.observe(int(server_seconds * 1000))
        if abs(self.clock.offset_ms - self._saved_offset_ms) >= OFFSET_SAVE_MS:
            self.store.set_meta("clock_offset_ms", str(self.clock.offset_ms))
            self._saved_offset_ms = self.clock.offset_ms

    async def _send(self, client: GatewayClient) -> None:
        backoff = Backoff(BACKOFF_START, BACKOFF_CAP)
        while True:
            self._outbox_ready.clear()
            entries = self.store.outbox()
            if not entries:
                await self._outbox_ready.wait()
                continue
            for entry in entries:
                try:
                    if entry.kind == "answer":
                        record = await client.answer(
                            entry.prompt_id, entry.answers or {}, self.device_id, entry.key
                        )
                    elif entry.kind == "late":
                        record = await client.late_answer(
                            entry.prompt_id, entry.answers or {}, self.device_id, entry.key
                        )
                    else:
                        record = await client.dismiss(entry.prompt_id, self.device_id, entry.key)
                    self.store.acknowledge(entry.key, record)
                except AlreadyResolved as exc:
                    self.store.acknowledge(entry.key, exc.record)
                except NotFound:
                    self.store.acknowledge(entry.key, None)
                    self.store.mark_gone(entry.prompt_id)
                except Unauthorized as exc:
                    self._set_connection(Connection.UNAUTHORIZED, detail=exc.message)
                    await asyncio.Event().wait()
                except GatewayError as exc:
                    if exc.status >= 500:
                        raise _Retry from exc
                    # The gateway refused it for good (e.g. 422): the card opens again.
                    log.warning("gateway refused %s for %s: %s", entry.kind, entry.prompt_id, exc)
                    self.store.acknowledge(entry.key, None, keep_local=False)
                except (httpx.TransportError, _Retry):
                    await asyncio.sleep(backoff.next_delay())
                    break
                else:
                    backoff.reset()
                self._changed(frozenset({entry.prompt_id}))


class _Retry(Exception):
    """A 5xx: try again later, like a network error."""
