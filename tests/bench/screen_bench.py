"""The question on the person's screen (#43): from the agent's create request to its text in the
real Flet web client (headless Chromium), with 0 and 1,000 summaries in the timeline's history.

An in-page detector is installed before the app's own scripts:

- **wire**: the WebSocket message that carries the question's text reaches the page (a
  listener the page's own socket gets first);
- **text**: the text appears in Flutter's semantics tree (a MutationObserver), what a screen
  reader reads and what is drawn in the same frame;
- **frame**: the frame that shows it is done (requestAnimationFrame, then a MessageChannel
  task: the first moment after that frame's work);
- **canvas**: its pixels reach the canvas (#53). The skwasm renderer records the frame's
  pictures on the page and posts them to its worker (`renderPictures`, with a callback id);
  the worker rasterizes them and answers `onRenderComplete` with the same id, whose bitmaps the
  page then puts on the canvas (`transferFromImageBitmap`). The frame that shows the text posts
  the last `renderPictures` by its end; the transfer after its pair is the moment.

The page's `performance.now()` is put on this process's monotonic clock by the fastest of many
round trips (its half is the error, reported). The create is written on an open keep-alive
connection just after t0. The detector's own floor (a mutation made by the page to the
observer seeing it, and to its frame done) is measured too.

`ASK_USER_BENCH_BASELINE_TREE=/path/to/old/checkout` runs that checkout's app beside this
one, alternating question by question, and reports each figure as a ratio to it.
`OPENCLAW_URL=ws://127.0.0.1:18789 OPENCLAW_TOKEN=…` does the same with OpenClaw's Control UI
(served by its running gateway), asked OpenClaw's own `question.request`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeout

from app.device import LocalStore
from app.device.environment import STORE_FILE
from app.device.preferences import CARDS, STEPPER, Preferences
from app.protocol import PromptRecord
from tests.browser import CHROMIUM_FLAGS, DEVICES, AppProcess, chromium_path

from .harness import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, RawHttp, emit

DETECTOR = """
(() => {
  const d = (window.__askBench = {
    marker: null, wire: null, text: null, frame: null, canvas: null });
  const has = (text) => d.marker !== null && !!text && text.indexOf(d.marker) >= 0;
  // Flutter updates its semantics inside the frame's own requestAnimationFrame callback: a
  // MessageChannel task posted then runs once that frame's work (layout, paint, its commit to
  // the compositor) is done. Found outside a frame, the next frame is the one that shows it.
  // (The observer's callback runs as a microtask after the rAF callback that made the change
  // has returned, so "in a frame" lasts until a task posted from the frame's first callback.)
  let inFrame = false;
  const nativeRaf = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => nativeRaf((t) => {
    if (!inFrame) {
      inFrame = true;
      const channel = new MessageChannel();
      channel.port1.onmessage = () => { inFrame = false; };
      channel.port2.postMessage(0);
    }
    return callback(t);
  });
  const afterTask = () => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { d.frame = performance.now(); textFrameDone(); };
    channel.port2.postMessage(0);
  };
  const frameDone = () => (inFrame ? afterTask() : nativeRaf(afterTask));
  // Whether the text is anywhere in the semantics tree (the card has left when it is not).
  d.present = (m) => [...document.querySelectorAll("flt-semantics")].some(
    (n) => (n.getAttribute("aria-label") || "").includes(m) || n.textContent.includes(m));
  // skwasm's messages with its worker (keys as the pinned Flutter build minifies them: `l` the
  // message's name, `h` its callback id). The text's frame is the last render posted by the
  // end of that frame (it may be posted after the semantics change, from a microtask); its
  // bitmaps reach the canvas in the first transfer after its onRenderComplete.
  let lastRender = null, textRender = null, completed = null;
  const shown = new Map();  // render id → when its bitmaps reached the canvas
  const nativePost = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message && message.l === "renderPictures") lastRender = message.h;
    return nativePost.call(this, message, ...rest);
  };
  const NativeWorker = window.Worker;
  window.Worker = class extends NativeWorker {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const message = event.data;
        if (message && message.l === "onRenderComplete") completed = message.h;
      });
    }
  };
  if (window.ImageBitmapRenderingContext) {
    const proto = ImageBitmapRenderingContext.prototype;
    const nativeTransfer = proto.transferFromImageBitmap;
    proto.transferFromImageBitmap = function (bitmap) {
      const result = nativeTransfer.call(this, bitmap);
      if (completed !== null) {
        shown.set(completed, performance.now());
        if (shown.size > 64) shown.delete(shown.keys().next().value);
        if (completed === textRender && d.canvas === null) d.canvas = shown.get(completed);
        completed = null;
      }
      return result;
    };
  }
  const textFrameDone = () => {
    textRender = lastRender;
    if (shown.has(textRender)) d.canvas = shown.get(textRender);
  };
  d.arm = () => { textRender = null; };
  d.found = () => { d.text = performance.now(); frameDone(); };
  const look = (node) => {
    if (node.nodeType === 1) {
      return has(node.getAttribute("aria-label")) || has(node.textContent);
    }
    return has(node.textContent);
  };
  const observer = new MutationObserver((records) => {
    if (d.marker === null || d.text !== null) return;
    for (const record of records) {
      const nodes = record.type === "childList" ? record.addedNodes : [record.target];
      for (const node of nodes) if (look(node)) { d.found(); return; }
    }
  });
  const watch = () => observer.observe(document.documentElement, {
    subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ["aria-label"],
  });
  if (document.documentElement) watch();
  else document.addEventListener("readystatechange", watch, { once: true });
  const latin1 = new TextDecoder("latin1");
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        if (d.marker === null || d.wire !== null) return;
        const at = performance.now();
        const data = event.data;
        const seen = (text) => { if (d.wire === null && has(text)) d.wire = at; };
        if (typeof data === "string") seen(data);
        else if (data instanceof ArrayBuffer) seen(latin1.decode(data));
        else if (data instanceof Blob) data.arrayBuffer().then((b) => seen(latin1.decode(b)));
      });
    }
  };
})();
"""

ARM = """m => { const d = window.__askBench; d.marker = m; d.arm();
  d.wire = d.text = d.frame = d.canvas = null; }"""
READ = "() => { const d = window.__askBench; return [d.wire, d.text, d.frame, d.canvas]; }"
CANVAS_WAIT_MS = 2000  # a renderer without a worker (CanvasKit, say) puts nothing to pair
# The detector's floor: the page itself adds a node with the marker in a frame, as Flutter
# does; the observer's delay, and to that frame's end.
FLOOR = """m => new Promise((done) => {
  const d = window.__askBench; d.marker = m; d.wire = d.text = d.frame = null;
  const node = document.createElement("span");
  node.textContent = m; node.style.position = "absolute"; node.style.opacity = "0";
  let made = 0;
  requestAnimationFrame(() => { made = performance.now(); document.body.appendChild(node); });
  const wait = () => d.frame === null ? setTimeout(wait, 5)
    : (node.remove(), done([d.text - made, d.frame - made]));
  wait();
})"""


def _history(count: int) -> list[PromptRecord]:
    """Summaries answered over the last days, newest last."""
    now = datetime.now(UTC)
    records = []
    for i in range(count):
        created = now - timedelta(minutes=3 * (count - i))
        records.append(
            PromptRecord.model_validate(
                {
                    "id": f"pr_history_{i:06d}",
                    "sessionKey": "Claude Code:~/shop-api",
                    "status": "answered" if i % 3 else "dismissed",
                    "answers": {"q": ["Postgres"]} if i % 3 else None,
                    "resolvedBy": {"kind": "device", "deviceId": "other"},
                    "questions": [
                        {
                            "id": "q",
                            "header": "Database",
                            "question": f"Which database for the orders service ({i})?",
                            "options": [{"label": "Postgres"}, {"label": "SQLite"}],
                        }
                    ],
                    "createdAt": created.isoformat(),
                    "expiresAt": (created + timedelta(minutes=15)).isoformat(),
                    "resolvedAt": (created + timedelta(seconds=40)).isoformat(),
                    "version": 2,
                }
            )
        )
    return records


def _prompt(marker: str) -> dict[str, Any]:
    return {
        "sessionKey": "bench:~/screen",
        "timeoutSeconds": 600,
        "questions": [
            {
                "id": "q",
                "header": "Deploy",
                # Past the 60 characters a summary keeps: only the card shows the marker.
                "question": "Ship the new checkout flow to staging now, before the review "
                f"of the payment changes ends? {marker}",
                "options": [{"label": "Ship it"}, {"label": "Wait"}],
            }
        ],
    }


class _Screen:
    """One system's page in the browser, with its clock offset and what it measured."""

    name = ""

    def __init__(self) -> None:
        self.page: Page | None = None
        self.offset = 0.0  # monotonic s = performance.now() / 1000 + offset
        self.error_ms = 0.0
        self.samples: dict[str, list[float]] = {"wire": [], "text": [], "frame": [], "canvas": []}

    async def _load(self, browser: Browser, device: str, url: str) -> Page:
        context = await browser.new_context(**DEVICES[device])
        await context.add_init_script(DETECTOR)
        page = self.page = await context.new_page()
        await page.goto(url)
        return page

    async def synchronise(self, rounds: int = 60) -> None:
        """The page's clock on ours, by the fastest round trip of many."""
        assert self.page is not None
        best = (float("inf"), 0.0)
        for _ in range(rounds):
            before = time.monotonic()
            now = await self.page.evaluate("performance.now()")
            after = time.monotonic()
            if after - before < best[0]:
                best = (after - before, (before + after) / 2 - now / 1000)
        self.error_ms = best[0] / 2 * 1000
        self.offset = best[1]

    async def floor(self, rounds: int = 20) -> tuple[list[float], list[float]]:
        assert self.page is not None
        texts, frames = [], []
        for i in range(rounds):
            text, frame = await self.page.evaluate(FLOOR, f"floor-{i}-marker")
            texts.append(text / 1000)
            frames.append(frame / 1000)
        return texts, frames

    async def ask(self, marker: str) -> None:
        """One question: created just after t0, its frame waited for, then answered (so the
        next starts clean)."""
        assert self.page is not None
        await self.page.evaluate(ARM, marker)
        t0 = time.monotonic()
        asked = await self._create(marker)
        await self.page.wait_for_function(
            "() => window.__askBench.frame !== null", timeout=30_000, polling=20
        )
        with contextlib.suppress(PlaywrightTimeout):  # not every renderer has a worker
            await self.page.wait_for_function(
                "() => window.__askBench.canvas !== null", timeout=CANVAS_WAIT_MS, polling=10
            )
        wire, text, frame, canvas = await self.page.evaluate(READ)
        for name, at in (("wire", wire), ("text", text), ("frame", frame), ("canvas", canvas)):
            if at is not None:
                self.samples[name].append(at / 1000 + self.offset - t0)
        await self._answer(asked, marker)

    async def open(self, browser: Browser, device: str) -> None:
        raise NotImplementedError

    async def _create(self, marker: str) -> str:
        raise NotImplementedError

    async def _answer(self, asked: str, marker: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _AppScreen(_Screen):
    """Our app (this tree's or a baseline checkout's) against the benchmark's gateway."""

    def __init__(self, name: str, app: AppProcess) -> None:
        super().__init__()
        self.name, self.app = name, app
        self.agent: RawHttp | None = None  # open keep-alive connections, once the pages are up
        self.device: RawHttp | None = None

    async def open(self, browser: Browser, device: str) -> None:
        page = await self._load(browser, device, self.app.url)
        await page.wait_for_selector("flutter-view", timeout=60_000)
        placeholder = page.locator("flt-semantics-placeholder")
        await placeholder.wait_for(state="attached", timeout=60_000)
        await placeholder.dispatch_event("click")
        await page.wait_for_selector("flt-semantics", state="attached", timeout=30_000)
        await self.synchronise()

    async def _create(self, marker: str) -> str:
        assert self.agent is not None
        status, record = await self.agent.request("POST", "/v1/prompts", _prompt(marker))
        assert status == 201, record
        return str(record["id"])

    async def _answer(self, asked: str, marker: str) -> None:
        assert self.page is not None and self.device is not None
        status, body = await self.device.request(
            "POST",
            f"/v1/prompts/{asked}/answer",
            {"answers": {"q": ["Ship it"]}, "deviceId": "bench-other"},
        )
        assert status == 200, body
        # The card leaves (the answer reached the page): the next question starts clean.
        # (The summary it leaves shortens the question before the marker.)
        await self.page.wait_for_function(
            "m => !window.__askBench.present(m)", arg=marker, timeout=30_000, polling=20
        )

    def close(self) -> None:
        self.app.stop()


class _OpenClawScreen(_Screen):
    """OpenClaw's Control UI (served by its gateway, logged in by `#token=` on loopback), its
    docked question panel showing OpenClaw's own `question.request`."""

    name = "openclaw"

    def __init__(self, url: str, token: str) -> None:
        super().__init__()
        self.url, self.token = url, token
        self.agent: Any = None
        self.answerer: Any = None

    async def open(self, browser: Browser, device: str) -> None:
        from .openclaw_bench import _Socket

        self.agent = await _Socket.open(self.url, self.token, device=False)
        self.answerer = await _Socket.open(self.url, self.token, device=False)
        # Its questions are durable and its panel shows the oldest first: none left waiting.
        listed = await self.answerer.call("question.list", {})
        for left in listed.get("questions", []):
            if left.get("status") == "pending":
                await self.answerer.call("question.resolve", {"id": left["id"], **_OC_ANSWER})
        parts = urlsplit(self.url)
        page = await self._load(browser, device, f"http://{parts.netloc}/#token={self.token}")
        await page.wait_for_selector("openclaw-app, body", timeout=60_000)
        # Ready once its socket is up: a question asked now is shown.
        await self.ask("zqwarmupopenclawx")
        self.samples = {name: [] for name in self.samples}
        await self.synchronise()

    async def _create(self, marker: str) -> str:
        created = await self.agent.call("question.request", _openclaw_question(marker))
        return str(created["id"])

    async def _answer(self, asked: str, marker: str) -> None:
        assert self.page is not None
        await self.answerer.call("question.resolve", {"id": asked, **_OC_ANSWER})
        await self.page.wait_for_function(
            "m => ![...document.querySelectorAll('.chat-question-panel')]"
            ".some((panel) => panel.textContent.includes(m))",
            arg=marker,
            timeout=30_000,
            polling=20,
        )

    def close(self) -> None:
        for socket in (self.agent, self.answerer):
            if socket is not None:
                socket.writer.close()


OPENCLAW_SESSION = "agent:main:main"  # the Control UI's "Main Session"
_OC_ANSWER = {"answers": {"answers": {"q": ["Ship it"]}}}


def _openclaw_question(marker: str) -> dict[str, Any]:
    """Our benchmark question in OpenClaw's shape (a question's id is `questionId`), in the
    session its Control UI opens on (its chat shows the questions of the session it shows)."""
    ours = _prompt(marker)
    return {
        "sessionKey": OPENCLAW_SESSION,
        "questions": [
            {("questionId" if key == "id" else key): value for key, value in question.items()}
            for question in ours["questions"]
        ],
        "timeoutMs": 600_000,
    }


def _stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    if not ms:
        return {}

    def pick(q: float) -> float:
        return round(ms[min(len(ms) - 1, int(q * len(ms)))], 1)

    return {"n": len(ms), "p50": pick(0.5), "p90": pick(0.9), "max": round(ms[-1], 1)}


def _seed(data_dir: Path, history: int, layout: str) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    store = LocalStore(data_dir / STORE_FILE)
    chosen = replace(Preferences.load(store), web_layout=CARDS if layout == CARDS else STEPPER)
    chosen.save(store)
    store.apply_many(_history(history))
    store.close()


async def _run(
    gateway: GatewayProcess,
    browser: Browser,
    tmp: Path,
    history: int,
    layout: str,
    questions: int,
    device: str,
) -> dict[str, Any]:
    trees: list[tuple[str, Path | None]] = [("ours", None)]
    if baseline := os.environ.get("ASK_USER_BENCH_BASELINE_TREE"):
        trees.append(("baseline", Path(baseline)))
    screens: list[_Screen] = []
    connections: list[RawHttp] = []
    try:
        for name, tree in trees:
            data = tmp / f"{name}-{layout}-{history}"
            _seed(data, history, layout)
            app = AppProcess(data, gateway.url, layout=layout, tree=tree).start()
            screens.append(_AppScreen(name, app))
        if openclaw := os.environ.get("OPENCLAW_URL"):
            screens.append(_OpenClawScreen(openclaw, os.environ.get("OPENCLAW_TOKEN", "")))
        for screen in screens:
            await screen.open(browser, device)
        # Opened now, not before the pages: the gateway closes a keep-alive connection idle
        # for long, and the pages may take a while to come up.
        agent = await RawHttp.open(gateway.url, AGENT_TOKEN)
        device_conn = await RawHttp.open(gateway.url, DEVICE_TOKEN)
        connections += [agent, device_conn]
        for screen in screens:
            if isinstance(screen, _AppScreen):
                screen.agent, screen.device = agent, device_conn
        assert screens[0].page is not None
        floor_text, floor_frame = await screens[0].floor()
        for i in range(questions):
            for screen in screens:  # alternating, question by question
                await screen.ask(f"zq{i:03d}{screen.name}x")
        result: dict[str, Any] = {
            "history": history,
            "layout": layout,
            "device": device,
            "detector_floor_ms": {
                "text": _stats(floor_text),
                "frame": _stats(floor_frame),
            },
        }
        for screen in screens:
            result[screen.name] = {
                "clock_error_ms": round(screen.error_ms, 3),
                "create_to_wire_ms": _stats(screen.samples["wire"]),
                "create_to_text_ms": _stats(screen.samples["text"]),
                "create_to_frame_ms": _stats(screen.samples["frame"]),
                "create_to_canvas_ms": _stats(screen.samples["canvas"]),
            }
        ours = screens[0]
        for other in screens[1:]:  # ours / theirs, each figure's p50 and p90
            result[f"ratio_to_{other.name}"] = {
                f"{name}_{q}": round(_quantile(ours.samples[name], q) / _quantile(theirs, q), 2)
                for name, theirs in other.samples.items()
                if ours.samples[name] and theirs
                for q in ("p50", "p90")
            }
        return result
    finally:
        for connection in connections:
            connection.close()
        for screen in screens:
            if screen.page is not None:
                await screen.page.context.close()
            screen.close()


def _quantile(samples: list[float], q: str) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int({"p50": 0.5, "p90": 0.9}[q] * len(ordered)))]


async def screen(
    histories: tuple[int, ...] = (0, 1000),
    layouts: tuple[str, ...] = ("stepper", CARDS),
    questions: int = 40,
    device: str = "iphone-se",
) -> None:
    gateway = GatewayProcess()
    try:
        with tempfile.TemporaryDirectory(prefix="ask-user-screen-") as tmp:
            async with async_playwright() as p:
                browser = await p.chromium.launch(
                    executable_path=chromium_path(), args=CHROMIUM_FLAGS
                )
                try:
                    for layout in layouts:
                        runs = {}
                        for history in histories:
                            runs[history] = await _run(
                                gateway, browser, Path(tmp), history, layout, questions, device
                            )
                            emit("screen", **runs[history])
                        if len(runs) == 2:
                            few, many = (runs[h]["ours"] for h in histories)
                            emit(
                                "screen_history",
                                layout=layout,
                                histories=list(histories),
                                text_p50_ratio=round(
                                    many["create_to_text_ms"]["p50"]
                                    / few["create_to_text_ms"]["p50"],
                                    2,
                                ),
                                target="p50 with 1,000 summaries within 1.15x of none",
                            )
                finally:
                    await browser.close()
    finally:
        gateway.stop()
