"""The real Flet web client in headless Chromium (Playwright, the system browser), driving the
app served by `python -m app --web` against a real gateway."""

from __future__ import annotations

import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser import CHROMIUM_FLAGS, DEVICES, AppProcess, chromium_path
from tests.support import start_gateway

__all__ = ["AppProcess"]  # the tests import it from here

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"


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
    """The same, set to the browser's docked stepper (at any width)."""
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
    try:
        page.screenshot(path=str(path))
    except PlaywrightTimeoutError:
        # Once in CI (a loaded machine) Chromium took no screenshot for 30 s while the page
        # kept working. The picture is for a person to look at, not the test's assertion:
        # try once more, then say so instead of failing what the test checks.
        try:
            page.screenshot(path=str(path), timeout=15_000)
        except PlaywrightTimeoutError:
            warnings.warn(f"no screenshot {name}: Chromium did not take it in time", stacklevel=2)
    return path


def type_into(page: Page, field, text: str, shows: str | None = None, delay: float = 30) -> None:
    """Type `text` into a text field as a person would, once: focus it, empty it, type. It
    then holds exactly `text` (or `shows`, for a field that rewrites what is typed); the app
    never types over the person's keys (app/ui/typed_field.py, test_typing)."""
    field.click()
    expect(field).to_be_focused(timeout=30_000)
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Delete")
    expect(field).to_have_value("", timeout=30_000)
    field.press_sequentially(text, delay=delay)
    expect(field).to_have_value(text if shows is None else shows, timeout=30_000)
