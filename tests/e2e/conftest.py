"""The real Flet web client in headless Chromium (Playwright, the system browser), driving the
app served by `python -m app --web` against a real gateway."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, sync_playwright

from app.device import LocalStore
from app.device.paths import STORE_FILE
from app.ui.screen import CARDS, WEB_LAYOUT
from tests.support import DEVICE_TOKEN, free_port, start_gateway, wait_until

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise RuntimeError("browser tests need Debian's chromium: apt-get install -y chromium")


@pytest.fixture(scope="package")
def browser():
    """One browser for the browser tests, closed when they end: Playwright's sync API keeps an
    event loop running in this thread while open, and `asyncio.run` in later tests refuses to
    start inside it."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def _close_pages(request):
    """Each test's pages close when it ends: a Flet page left open keeps rendering (its clock
    ticks every second), and a dozen of them slowed later tests to a crawl on two cores."""
    yield
    if "browser" in request.fixturenames:
        for context in request.getfixturevalue("browser").contexts:
            context.close()


class AppProcess:
    """`python -m app --web` on a free port, with its own data directory.

    `layout="cards"` (the default here) sets the browser to stack questions in cards, as the
    phone and desktop apps always do: most browser tests stand in for those apps. `"stepper"`
    leaves a new browser's own default, the docked stepper."""

    def __init__(self, data_dir: Path, gateway_url: str | None, layout: str = CARDS) -> None:
        self.data_dir = data_dir
        self.gateway_url = gateway_url  # None: the app starts unconfigured (to be paired)
        self.layout = layout
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log = data_dir / f"app-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AppProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_USER_")}
        env.update(ASK_USER_APP_DATA=str(self.data_dir), FLET_LOG_LEVEL="warning")
        if self.gateway_url is not None:
            env.update(ASK_USER_GATEWAY_URL=self.gateway_url, ASK_USER_DEVICE_TOKEN=DEVICE_TOKEN)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.layout == CARDS:
            store = LocalStore(self.data_dir / STORE_FILE)
            store.set_meta(WEB_LAYOUT, CARDS)
            store.close()
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app",
                    "--web",
                    "--port",
                    str(self.port),
                    *([] if self.gateway_url else ["--no-gateway"]),
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_until(self._up, timeout=60, interval=0.2)
        return self

    def _up(self) -> bool:
        assert self.process.poll() is None, self.log.read_text()
        try:
            return httpx.get(self.url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


@pytest.fixture
def stack(tmp_path):
    """A real gateway (with a clock the test moves) and the app pointed at it, stacking
    questions in cards as the phone and desktop apps do."""
    gateway = start_gateway(tmp_path / "gateway")
    app = AppProcess(tmp_path / "app", gateway.url).start()
    yield gateway, app
    app.stop()
    gateway.stop()


@pytest.fixture
def web_stack(tmp_path):
    """The same, with the browser's own default: the docked stepper."""
    gateway = start_gateway(tmp_path / "gateway")
    app = AppProcess(tmp_path / "app", gateway.url, layout="stepper").start()
    yield gateway, app
    app.stop()
    gateway.stop()


class Agent:
    """A real agent: ask_user() calls on threads, stopped (prompt cancelled) at teardown."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(6)
        self.stop = threading.Event()

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown(wait=True)


@pytest.fixture
def agent():
    running = Agent()
    yield running
    running.close()


ANDROID_UA = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"
)
IPHONE_UA = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
)
# The screens a person answers on: the smallest phone, an iPhone SE, a Pixel 7, desktops.
DEVICES = {
    "phone-320": dict(
        viewport={"width": 320, "height": 568},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        user_agent=IPHONE_UA,
    ),
    "iphone-se": dict(
        viewport={"width": 375, "height": 667},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
        user_agent=IPHONE_UA,
    ),
    "pixel-7": dict(
        viewport={"width": 412, "height": 915},
        device_scale_factor=2.625,
        is_mobile=True,
        has_touch=True,
        user_agent=ANDROID_UA,
    ),
    "desktop": dict(viewport={"width": 900, "height": 1400}),
    "wide": dict(viewport={"width": 1440, "height": 900}),
}


def open_app(browser, url: str, device: str = "desktop") -> Page:
    settings = DEVICES[device]
    context = browser.new_context(**settings)
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("flutter-view", timeout=60_000)
    placeholder = page.locator("flt-semantics-placeholder")
    placeholder.wait_for(state="attached", timeout=60_000)
    if "Android" in settings.get("user_agent", ""):  # Flutter's Android enabler wants a tap
        placeholder.tap(force=True)
    else:
        placeholder.dispatch_event("click")
    page.wait_for_selector("flt-semantics", state="attached", timeout=30_000)
    return page


def on_screen(page: Page, locator) -> bool:
    """Wholly inside the viewport (a person sees it without scrolling)."""
    box = locator.bounding_box()
    size = page.viewport_size
    return bool(
        box
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= size["width"] + 0.5
        and box["y"] + box["height"] <= size["height"] + 0.5
    )


def shot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    time.sleep(0.3)  # let the last frame paint
    page.screenshot(path=str(path))
    return path
