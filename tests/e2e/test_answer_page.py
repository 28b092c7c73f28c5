"""The answer page as a person sees it on a phone without the app: headless Chromium with a
touch screen at 320×568, 375×667 and a Pixel 7, and at 1440×900; in Persian and in dark mode.
Screenshots go to test-artifacts/e2e/answer-page-*.png."""

from __future__ import annotations

import pytest

from tests.support import AGENT_TOKEN, prompt_body, start_gateway, wait_until

from .conftest import ARTIFACTS

LONG_LABEL = "Migrate old rows in small batches every night"
QUESTIONS = [
    {
        "id": "plan",
        "header": "Migration",
        "question": "How should the migration of the orders table run on the live database?",
        "options": [
            {"label": f"{LONG_LABEL} (Recommended)", "description": "Slow but never locks"},
            {"label": "All at once", "description": "A few minutes of downtime at night"},
        ],
    },
    {
        "id": "notify",
        "header": "Tell",
        "question": "Who should hear about it?",
        "multiSelect": True,
        "options": [{"label": "The team"}, {"label": "Customers"}, {"label": "Nobody"}],
    },
]
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
)
SCREENS = {
    "320x568": {"width": 320, "height": 568},
    "375x667": {"width": 375, "height": 667},
    "pixel7": {"width": 412, "height": 915},
}


@pytest.fixture
def linked(tmp_path):
    """A gateway whose new prompts' link tokens the test hears, as a notifier would."""
    gateway = start_gateway(tmp_path / "gateway")
    tokens: list[str] = []
    gateway.server.app.state.gateway.on_created = lambda record, person, token: tokens.append(token)
    yield gateway, tokens
    gateway.stop()


def _ask(gateway, tokens) -> tuple[dict, str]:
    response = gateway.client(AGENT_TOKEN).post(
        "/v1/prompts", json=prompt_body("page", questions=QUESTIONS)
    )
    assert response.status_code == 201, response.text
    wait_until(lambda: tokens)
    return response.json(), f"{gateway.url}/a/{tokens[-1]}"


def _phone(browser, screen: str, **options):
    context = browser.new_context(
        viewport=SCREENS[screen], is_mobile=True, has_touch=True, user_agent=IPHONE, **options
    )
    return context.new_page()


def _fits(page) -> None:
    """Nothing wider than the screen; every option a full-width row of at least 48 px."""
    width = page.evaluate("window.innerWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for box in (o.bounding_box() for o in page.locator(".option").all()):
        assert box is not None and box["height"] >= 48
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
        assert box["width"] >= width - 60  # a full-width row (less the margins)


@pytest.mark.browser
@pytest.mark.parametrize("screen", list(SCREENS))
def test_a_phone_answers_on_the_page_by_touch(browser, linked, screen):
    gateway, tokens = linked
    prompt, link = _ask(gateway, tokens)
    page = _phone(browser, screen)
    page.goto(link)
    _fits(page)
    long_row = page.locator(".option").first
    assert long_row.bounding_box()["height"] > 60  # the long label wraps instead of overflowing
    assert page.locator(".badge").first.inner_text() == "Recommended"
    submit = page.locator("button.primary")
    assert submit.is_disabled()  # nothing chosen yet
    page.screenshot(path=ARTIFACTS / f"answer-page-{screen}.png", full_page=True)
    page.locator(".option").nth(1).tap()
    assert submit.is_disabled()  # the second question still has no answer
    page.locator("input[name='other.notify']").fill("Only the on-call person")
    assert submit.is_enabled()
    submit.tap()
    page.wait_for_selector("text=Sent. The agent has your answer.")
    page.screenshot(path=ARTIFACTS / f"answer-page-{screen}-sent.png", full_page=True)
    result = gateway.agent.get(f"/v1/prompts/{prompt['id']}/result", params={"wait": 0}).json()
    assert result["answers"]["answers"] == {
        "plan": ["All at once"],
        "notify": ["Only the on-call person"],
    }


@pytest.mark.browser
def test_the_page_in_persian_and_dark_mode(browser, linked):
    gateway, tokens = linked
    _, link = _ask(gateway, tokens)
    page = _phone(browser, "375x667", locale="fa-IR", color_scheme="dark")
    page.goto(link)
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("button.primary").inner_text() == "ارسال"
    assert page.locator(".badge").first.inner_text() == "پیشنهادی"
    # Each question keeps its own direction: English text inside the Persian page.
    assert page.locator(".question").first.get_attribute("dir") == "auto"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(x) for x in background[background.index("(") + 1 : -1].split(",")[:3])
    assert red + green + blue < 150, background  # dark
    _fits(page)
    page.screenshot(path=ARTIFACTS / "answer-page-fa-dark.png", full_page=True)


@pytest.mark.browser
def test_on_a_desktop_the_keyboard_answers_and_dismiss_is_there(browser, linked):
    gateway, tokens = linked
    prompt, link = _ask(gateway, tokens)
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(link)
    assert page.evaluate("document.querySelector('main').getBoundingClientRect().width") <= 640
    page.keyboard.press("Tab")  # the first option's radio
    page.keyboard.press("Space")
    page.screenshot(path=ARTIFACTS / "answer-page-1440.png")
    page.locator("button[value='dismiss']").click()
    page.wait_for_selector("text=Dismissed.")
    result = gateway.agent.get(f"/v1/prompts/{prompt['id']}/result", params={"wait": 0}).json()
    assert result == {"status": "no_answer", "reason": "dismissed"}


def test_choosing_on_the_page_near_the_deadline_gives_the_person_more_time(browser, linked):
    """#44: the page's script tells the gateway the person is choosing (allowed by its CSP);
    with under two minutes left the deadline moves, as in the app."""
    gateway, tokens = linked
    response = gateway.client(AGENT_TOKEN).post(
        "/v1/prompts", json=prompt_body("page", questions=QUESTIONS, timeoutSeconds=60)
    )
    prompt = response.json()
    wait_until(lambda: tokens)
    page = _phone(browser, "375x667")
    page.goto(f"{gateway.url}/a/{tokens[-1]}")
    assert gateway.device.get(f"/v1/prompts/{prompt['id']}").json()["originalExpiresAt"] is None
    page.locator(".option").nth(1).tap()

    def moved() -> dict | None:
        record = gateway.device.get(f"/v1/prompts/{prompt['id']}").json()
        return record if record["originalExpiresAt"] else None

    record = wait_until(moved, timeout=20)
    assert record["originalExpiresAt"] == prompt["expiresAt"]
    assert record["expiresAt"] > prompt["expiresAt"]
    assert record["status"] == "pending"  # nothing was sent by choosing
