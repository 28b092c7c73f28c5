"""What a person sees and does in the real app: tapping cards, Dismiss, expiry, restarts."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect

from app.agent import ask_user
from tests.support import AGENT_TOKEN, device_post, next_pending

from .conftest import AppProcess, open_app, shot

pytestmark = pytest.mark.browser

SINGLE = [
    {
        "id": "deploy_target",
        "header": "Target",
        "question": "Where should I deploy version 2.4.0?",
        "options": [
            {"label": "Staging (Recommended)", "description": "Safe default"},
            {"label": "Production"},
        ],
    }
]
THREE = [
    {
        "id": "database",
        "header": "Database",
        "question": "Which database should it use?",
        "options": [{"label": "PostgreSQL (Recommended)"}, {"label": "SQLite"}],
    },
    {
        "id": "auth",
        "header": "Sign-in",
        "question": "How should people sign in?",
        "multiSelect": True,
        "options": [{"label": "Email link"}, {"label": "Google"}, {"label": "GitHub"}],
    },
    {
        "id": "hosting",
        "header": "Hosting",
        "question": "Where will it run?",
        "options": [{"label": "Fly.io"}, {"label": "AWS"}],
    },
]
TIMEOUT = 30_000


def summary(page, status: str, *lines: str):
    """A summary tile: read by screen readers as one node, "<status> <time> <lines>"."""
    pattern = rf"^{re.escape(status)}\s+[\d:-]+\s.*" + ".*".join(re.escape(x) for x in lines)
    return page.get_by_text(re.compile(pattern, re.DOTALL))


class Agent:
    """A real agent: ask_user() calls on threads, stopped (prompt cancelled) at teardown."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(4)
        self.stop = threading.Event()

    def close(self) -> None:
        self.stop.set()
        self.pool.shutdown(wait=True)


@pytest.fixture
def agent():
    running = Agent()
    yield running
    running.close()


def ask(agent: Agent, gateway, questions, session="main", **kw):
    return agent.pool.submit(
        ask_user,
        questions,
        session_key=session,
        gateway_url=gateway.url,
        token=AGENT_TOKEN,
        abort=agent.stop,
        **kw,
    )


def test_single_select_answered_by_tapping(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    shot(page, "01-single-pending")
    page.get_by_role("radio", name="Production").click()
    expect(page.get_by_role("button", name="Submit")).to_be_enabled()
    page.get_by_role("button", name="Submit").click()
    assert result.result(timeout=30) == {
        "status": "answered",
        "answers": {"answers": {"deploy_target": ["Production"]}},
    }
    expect(summary(page, "Answered", "Target: Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("radio")).to_have_count(0)  # the card collapsed
    shot(page, "02-single-answered-summary")


def test_three_questions_with_multi_select_and_other(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, THREE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="SQLite")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("radio", name="SQLite").click()
    page.get_by_role("checkbox", name="Google").click()
    page.get_by_role("checkbox", name="GitHub").click()
    other = page.get_by_role("textbox", name="Other").nth(2)  # the third question's Other
    other.click()
    page.wait_for_timeout(500)
    other.press_sequentially("Our own rack", delay=30)
    expect(page.get_by_role("button", name="Submit")).to_be_enabled(timeout=TIMEOUT)
    shot(page, "03-three-questions-filled")
    page.get_by_role("button", name="Submit").click()
    assert result.result(timeout=30)["answers"]["answers"] == {
        "database": ["SQLite"],
        "auth": ["Google", "GitHub"],
        "hosting": ["Our own rack"],
    }
    expect(
        summary(
            page, "Answered", "Database: SQLite", "Sign-in: Google, GitHub", "Hosting: Our own rack"
        )
    ).to_be_visible(timeout=TIMEOUT)
    shot(page, "04-three-questions-summary")


def test_dismiss(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("button", name="Dismiss")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Dismiss").click()
    assert result.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}
    expect(summary(page, "Dismissed", "Target: —")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Dismiss")).to_have_count(0)
    shot(page, "05-dismissed")


def test_expiry_while_the_card_is_open(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE, timeout_seconds=60)
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("radio", name="Production").click()  # half-way through, time runs out
    gateway.clock.advance(60)
    assert result.result(timeout=30) == {"status": "no_answer", "reason": "expired"}
    expect(summary(page, "Expired", "Target: —")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Submit")).to_have_count(0)
    shot(page, "06-expired")


def test_answered_on_another_device(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    prompt = next_pending(gateway.url)
    device_post(
        gateway.url,
        prompt["id"],
        "answer",
        {"answers": {"deploy_target": ["Staging (Recommended)"]}, "deviceId": "phone"},
    )
    assert result.result(timeout=30)["status"] == "answered"
    expect(summary(page, "Answered elsewhere", "Target: Staging (Recommended)")).to_be_visible(
        timeout=TIMEOUT
    )
    shot(page, "07-answered-elsewhere")


def test_summary_survives_an_app_restart(browser, stack, agent, tmp_path):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("radio", name="Production").click()
    page.get_by_role("button", name="Submit").click()
    assert result.result(timeout=30)["status"] == "answered"
    expect(summary(page, "Answered", "Target: Production")).to_be_visible(timeout=TIMEOUT)
    page.context.close()
    app.stop()
    again = AppProcess(app.data_dir, gateway.url).start()
    try:
        page = open_app(browser, again.url)
        expect(summary(page, "Answered", "Target: Production")).to_be_visible(timeout=TIMEOUT)
        shot(page, "08-summary-after-restart")
    finally:
        again.stop()


def small_tap_targets(page) -> list:
    """Every tappable element fully on screen whose box is under 48×48 (elements cut by the
    edge of the scrolling timeline are measured when scrolled into view instead)."""
    viewport = page.viewport_size
    timeline = page.get_by_role("group").first.bounding_box()
    top = timeline["y"] if timeline else 0
    small = []
    for role in ("button", "radio", "checkbox", "textbox", "combobox"):
        for element in page.get_by_role(role).all():
            box = element.bounding_box()
            if box is None:
                continue
            on_bar = box["y"] >= 0 and box["y"] + box["height"] <= top  # app bar, banner
            inside = on_bar or (
                box["y"] > top + 1 and box["y"] + box["height"] <= viewport["height"]
            )
            if inside and (box["width"] < 48 or box["height"] < 48):
                small.append((role, element.get_attribute("aria-label"), box))
    return small


def test_persian_question_and_every_tap_target_is_48_on_android(browser, stack, agent):
    gateway, app = stack
    persian = [
        {
            "id": "docs_language",
            "header": "زبان مستندات",
            "question": "مستندات پروژه به کدام زبان نوشته شود؟",
            "options": [
                {"label": "فارسی (پیشنهادی)", "description": "برای تیم فعلی"},
                {"label": "انگلیسی"},
            ],
        }
    ]
    ask(agent, gateway, persian, session="fa")
    next_pending(gateway.url)
    ask(agent, gateway, THREE, session="main")
    page = open_app(browser, app.url, mobile=True)
    expect(page.get_by_role("radio", name="SQLite")).to_be_attached(timeout=TIMEOUT)
    shot(page, "09-android-bottom")
    assert small_tap_targets(page) == []
    page.mouse.move(200, 600)
    for _ in range(10):  # the older, Persian card is above
        page.mouse.wheel(0, -1500)
        page.wait_for_timeout(100)
    expect(page.get_by_role("radio", name="انگلیسی")).to_be_visible(timeout=TIMEOUT)
    page.wait_for_timeout(500)
    shot(page, "10-android-top-persian")
    assert small_tap_targets(page) == []


def test_desktop_keys_choose_submit_and_dismiss(browser, stack, agent):
    gateway, app = stack
    first = ask(agent, gateway, SINGLE, session="keys-1")
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    page.mouse.click(450, 70)  # focus the app (the connection banner), not a field
    page.keyboard.press("2")
    expect(page.get_by_role("radio", name="Production")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Enter")
    assert first.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    expect(summary(page, "Answered", "Target: Production")).to_be_visible(timeout=TIMEOUT)
    second = ask(agent, gateway, SINGLE, session="keys-2")
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Dismiss")).to_have_count(1)
    page.mouse.click(450, 70)
    page.keyboard.press("Escape")
    assert second.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}


def test_clear_history_on_purpose_and_settings_are_named(browser, stack, agent):
    gateway, app = stack
    result = ask(agent, gateway, SINGLE)
    page = open_app(browser, app.url)
    expect(page.get_by_role("button", name="Dismiss")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Dismiss").click()
    assert result.result(timeout=30)["status"] == "no_answer"
    expect(summary(page, "Dismissed", "Target: —")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Settings").click()  # named for screen readers
    expect(page.get_by_role("textbox", name="Gateway URL")).to_be_visible(timeout=TIMEOUT)
    shot(page, "11-settings")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Clear history").click()
    page.get_by_role("button", name="Clear", exact=True).click()
    expect(page.get_by_text("No questions yet", exact=False)).to_be_visible(timeout=TIMEOUT)
    expect(summary(page, "Dismissed", "Target: —")).to_have_count(0)
    shot(page, "12-history-cleared")


def test_session_picker_shows_one_session(browser, stack, agent):
    gateway, app = stack
    ask(agent, gateway, SINGLE, session="deploy")
    next_pending(gateway.url)
    ask(agent, gateway, THREE, session="main")
    page = open_app(browser, app.url)
    expect(page.get_by_role("radio", name="SQLite")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Session").click()  # shown: two sessions are pending
    page.get_by_role("button", name="deploy (1)").click()
    expect(page.get_by_role("radio", name="SQLite")).to_have_count(0, timeout=TIMEOUT)
    expect(page.get_by_role("radio", name="Production")).to_be_visible(timeout=TIMEOUT)
    shot(page, "13-session-picker-one-session")
    page.get_by_role("button", name="Session").click()
    page.get_by_role("button", name="All sessions").click()
    expect(page.get_by_role("radio", name="SQLite")).to_be_visible(timeout=TIMEOUT)


def test_switching_to_persian_in_settings_lasts_across_a_restart(browser, stack, agent):
    gateway, app = stack
    page = open_app(browser, app.url)
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("button", name="Language").click()  # named for screen readers
    page.get_by_role("button", name="فارسی").click()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("پرسش از کاربر")).to_be_visible(timeout=TIMEOUT)  # the title
    result = ask(agent, gateway, SINGLE)  # an English question, in a Persian app
    expect(page.get_by_role("button", name="رد کردن")).to_be_visible(timeout=TIMEOUT)
    shot(page, "14-persian-ui-english-question")
    # The chrome is right to left, the English question left to right (viewport 900 wide).
    assert page.get_by_text("پرسش از کاربر").bounding_box()["x"] > 450
    assert page.get_by_role("radio", name="Production").bounding_box()["x"] < 200
    assert page.get_by_role("button", name="رد کردن").bounding_box()["x"] < 450
    page.context.close()
    app.stop()
    again = AppProcess(app.data_dir, gateway.url).start()
    try:
        page = open_app(browser, again.url)
        expect(page.get_by_role("button", name="تنظیمات")).to_be_visible(timeout=TIMEOUT)
        page.get_by_role("button", name="رد کردن").click()
        assert result.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}
    finally:
        again.stop()
