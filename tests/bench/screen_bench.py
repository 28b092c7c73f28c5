"""The question on the person's screen (#43): from the agent's create request to its text in the
real Flet web client (headless Chromium), with 0 and 1,000 summaries in the timeline's history.

An in-page detector is installed before the app's own scripts:

- **wire**: the WebSocket message that carries the question's text reaches the page (a
  listener the page's own socket gets first);
- **text**: the text appears in Flutter's semantics tree (a MutationObserver), what a screen
  reader reads and what is drawn in the same frame;
- **frame**: the frame that shows it is done (requestAnimationFrame, then a MessageChannel
  task: the first moment after that frame's work).

The page's `performance.now()` is put on this process's monotonic clock by the fastest of many
round trips (its half is the error, reported). The create is written on an open keep-alive
connection just after t0. The detector's own floor (a mutation made by the page to the
observer seeing it, and to its frame done) is measured too.

`ASK_USER_BENCH_BASELINE_TREE=/path/to/old/checkout` runs that checkout's app beside this
one, alternating question by question, and reports each figure as a ratio to it.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, async_playwright

from app.device import LocalStore
from app.device.paths import STORE_FILE
from app.protocol import PromptRecord
from app.ui.screen import CARDS, WEB_LAYOUT
from tests.browser import CHROMIUM_FLAGS, DEVICES, AppProcess, chromium_path

from .harness import AGENT_TOKEN, DEVICE_TOKEN, GatewayProcess, RawHttp, emit

DETECTOR = """
(() => {
  const d = (window.__askBench = { marker: null, wire: null, text: null, frame: null });
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
    channel.port1.onmessage = () => { d.frame = performance.now(); };
    channel.port2.postMessage(0);
  };
  const frameDone = () => (inFrame ? afterTask() : nativeRaf(afterTask));
  // Whether the text is anywhere in the semantics tree (the card has left when it is not).
  d.present = (m) => [...document.querySelectorAll("flt-semantics")].some(
    (n) => (n.getAttribute("aria-label") || "").includes(m) || n.textContent.includes(m));
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

ARM = "m => { const d = window.__askBench; d.marker = m; d.wire = d.text = d.frame = null; }"
READ = "() => { const d = window.__askBench; return [d.wire, d.text, d.frame]; }"
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
    """One app (this tree's or the baseline's) in one browser page, with its clock offset."""

    def __init__(self, name: str, app: AppProcess) -> None:
        self.name, self.app = name, app
        self.page: Page | None = None
        self.offset = 0.0  # monotonic s = performance.now() / 1000 + offset
        self.error_ms = 0.0
        self.samples: dict[str, list[float]] = {"wire": [], "text": [], "frame": []}

    async def open(self, browser: Browser, device: str) -> None:
        context = await browser.new_context(**DEVICES[device])
        await context.add_init_script(DETECTOR)
        page = self.page = await context.new_page()
        await page.goto(self.app.url)
        await page.wait_for_selector("flutter-view", timeout=60_000)
        placeholder = page.locator("flt-semantics-placeholder")
        await placeholder.wait_for(state="attached", timeout=60_000)
        await placeholder.dispatch_event("click")
        await page.wait_for_selector("flt-semantics", state="attached", timeout=30_000)
        await self.synchronise()

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

    async def ask(self, agent: RawHttp, device: RawHttp, marker: str) -> None:
        """One question: create, wait for its frame, answer it (it joins the history)."""
        assert self.page is not None
        await self.page.evaluate(ARM, marker)
        t0 = time.monotonic()
        status, record = await agent.request("POST", "/v1/prompts", _prompt(marker))
        assert status == 201, record
        await self.page.wait_for_function(
            "() => window.__askBench.frame !== null", timeout=30_000, polling=20
        )
        wire, text, frame = await self.page.evaluate(READ)
        for name, at in (("wire", wire), ("text", text), ("frame", frame)):
            if at is not None:
                self.samples[name].append(at / 1000 + self.offset - t0)
        status, body = await device.request(
            "POST",
            f"/v1/prompts/{record['id']}/answer",
            {"answers": {"q": ["Ship it"]}, "deviceId": "bench-other"},
        )
        assert status == 200, body
        # The card leaves (the answer reached the page): the next question starts clean.
        # (The summary it leaves shortens the question before the marker.)
        await self.page.wait_for_function(
            "m => !window.__askBench.present(m)", arg=marker, timeout=30_000, polling=20
        )


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
    store.set_meta(WEB_LAYOUT, layout)
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
    screens = []
    for name, tree in trees:
        data = tmp / f"{name}-{layout}-{history}"
        _seed(data, history, layout)
        app = AppProcess(data, gateway.url, layout=layout, tree=tree).start()
        screens.append(_Screen(name, app))
    agent = await RawHttp.open(gateway.url, AGENT_TOKEN)
    device_conn = await RawHttp.open(gateway.url, DEVICE_TOKEN)
    try:
        for screen in screens:
            await screen.open(browser, device)
        floor_text, floor_frame = await screens[0].floor()
        for i in range(questions):
            for screen in screens:  # alternating, question by question
                await screen.ask(agent, device_conn, f"zq{i:03d}{screen.name}x")
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
            }
        if len(screens) == 2:
            ours, base = screens
            result["ratio_p50"] = {
                name: round(
                    statistics.median(ours.samples[name]) / statistics.median(base.samples[name]),
                    2,
                )
                for name in ("wire", "text", "frame")
                if ours.samples[name] and base.samples[name]
            }
        return result
    finally:
        agent.close()
        device_conn.close()
        for screen in screens:
            if screen.page is not None:
                await screen.page.context.close()
            screen.app.stop()


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
