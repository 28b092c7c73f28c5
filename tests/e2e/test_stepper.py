"""The browser's docked stepper (the specification's web Control UI), as a person uses it in the
real web client: one question at a time, Back keeping choices, Hide and Show, the summary
after; keys; Dismiss with Undo; and the setting that stacks the questions instead."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from app.device.preferences import AUTO
from tests.support import next_pending, start_gateway

from .conftest import AppProcess, on_screen, open_app, shot
from .test_app import SINGLE, THREE, TIMEOUT, ask, option, pending_ids, summary

pytestmark = pytest.mark.browser


def step_of(page, n: int, count: int):
    return page.get_by_text(f"Question {n} of {count}", exact=True)


@pytest.mark.parametrize("device", ["phone-320", "iphone-se", "wide"])
def test_one_question_at_a_time_back_keeps_choices_then_a_summary(
    browser, web_stack, agent, device
):
    gateway, app = web_stack
    result = ask(agent, gateway, THREE)
    page = open_app(browser, app.url, device)
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)
    # Only the first question is on screen: its options, not the others'.
    expect(option(page, "SQLite")).to_be_visible()
    expect(page.get_by_role("checkbox")).to_have_count(0)
    expect(page.get_by_role("button", name="Next")).to_be_disabled()
    expect(page.get_by_text("What you answer stays here, as a summary.")).to_be_visible()
    for name in ("Dismiss", "Next"):  # docked: in sight without scrolling
        assert on_screen(page, page.get_by_role("button", name=name)), name
    shot(page, f"30-stepper-first-question-{device}")
    option(page, "SQLite").click()
    page.get_by_role("button", name="Next").click()
    expect(step_of(page, 2, 3)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("radio")).to_have_count(0)
    option(page, "Google", "checkbox").click()
    option(page, "GitHub", "checkbox").click()
    shot(page, f"31-stepper-second-question-{device}")
    page.get_by_role("button", name="Back").click()
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)
    expect(option(page, "SQLite")).to_be_checked()  # Back keeps the choice
    page.get_by_role("button", name="Next").click()
    expect(option(page, "Google", "checkbox")).to_be_checked(timeout=TIMEOUT)
    expect(option(page, "GitHub", "checkbox")).to_be_checked()
    page.get_by_role("button", name="Next").click()
    expect(step_of(page, 3, 3)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_role("button", name="Next")).to_have_count(0)
    expect(page.get_by_role("button", name="Submit")).to_be_disabled()
    # Hidden, the panel is a thin bar with the question's header and count.
    page.get_by_role("button", name="Hide the question").click()
    bar = page.get_by_role("group", name=re.compile(r"Hosting · Question 3 of 3 [\d:]+ left"))
    expect(bar).to_be_visible(timeout=TIMEOUT)
    assert on_screen(page, bar)
    expect(page.get_by_role("radio")).to_have_count(0)
    shot(page, f"32-stepper-hidden-{device}")
    page.get_by_role("button", name="Show the question").click()
    option(page, "AWS").click()  # the last question of three: no one-tap answer
    assert not result.done()
    submit = page.get_by_role("button", name="Submit")
    expect(submit).to_be_enabled(timeout=TIMEOUT)
    assert on_screen(page, submit)
    submit.click()
    assert result.result(timeout=30) == {
        "status": "answered",
        "answers": {
            "answers": {"database": ["SQLite"], "auth": ["Google", "GitHub"], "hosting": ["AWS"]}
        },
    }
    # The panel closes; the timeline keeps the summary.
    expect(summary(page, "Answered", "Database: SQLite")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text(re.compile(r"^Question \d of \d$"))).to_have_count(0)
    shot(page, f"33-stepper-answered-summary-{device}")


def test_keys_one_tap_dismiss_with_undo_and_the_setting_for_cards(browser, web_stack, agent):
    gateway, app = web_stack
    three = ask(agent, gateway, THREE)
    page = open_app(browser, app.url, "wide")
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("2")  # nobody has touched the panel: keys do nothing
    expect(option(page, "SQLite")).not_to_be_checked()
    option(page, "PostgreSQL").click()  # the person chose in the panel: keys act there
    page.keyboard.press("2")
    expect(option(page, "SQLite")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Enter")  # the next question, not Submit
    expect(step_of(page, 2, 3)).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("1")
    expect(option(page, "Email link", "checkbox")).to_be_checked(timeout=TIMEOUT)
    page.keyboard.press("Enter")
    expect(step_of(page, 3, 3)).to_be_visible(timeout=TIMEOUT)
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    answers = three.result(timeout=30)["answers"]["answers"]
    assert answers == {"database": ["SQLite"], "auth": ["Email link"], "hosting": ["AWS"]}

    # One question, one choice: one tap answers, with Undo, in the panel too.
    single = ask(agent, gateway, SINGLE)
    expect(option(page, "Production")).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()
    expect(page.get_by_text(re.compile(r"^“Production” — sent in \d s$"))).to_be_visible(
        timeout=TIMEOUT
    )
    page.keyboard.press("Control+z")  # Undo from the keyboard
    expect(option(page, "Production")).to_be_checked(timeout=TIMEOUT)  # back, choice kept
    prompt_id = next_pending(gateway.url)["id"]
    page.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_text(re.compile(r"^Dismissed — sent in \d s$"))).to_be_visible(
        timeout=TIMEOUT
    )
    assert prompt_id in pending_ids(gateway)  # nothing sent before the Undo time is over
    assert single.result(timeout=30) == {"status": "no_answer", "reason": "dismissed"}

    # Settings: the browser can stack the questions in cards instead.
    stacked = ask(agent, gateway, THREE)
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Settings").click()
    page.get_by_role("button", name="Every question stacked in its card").click()
    page.get_by_role("button", name="Save").click()
    expect(step_of(page, 1, 3)).to_have_count(0, timeout=TIMEOUT)
    expect(option(page, "Google", "checkbox")).to_be_visible(timeout=TIMEOUT)  # all at once
    expect(option(page, "AWS")).to_be_visible()
    shot(page, "34-browser-set-to-cards")
    assert not stacked.done()


def test_the_panel_and_the_summary_name_who_is_asking(browser, web_stack, agent):
    """#40: the docked panel says which agent asks, and so does the summary it leaves."""
    gateway, app = web_stack
    page = open_app(browser, app.url, "wide")
    asked = ask(agent, gateway, SINGLE, session="codex:~/work/billing", agent_id="codex/0a1b2c3d")
    expect(page.get_by_text("Codex · billing")).to_be_attached(timeout=TIMEOUT)
    shot(page, "who-asks-stepper-1440")
    option(page, "Production").click()
    assert asked.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    expect(summary(page, "Answered", "Codex · billing", "Production")).to_be_attached(
        timeout=TIMEOUT
    )
    shot(page, "who-asks-stepper-summary-1440")


def test_a_browser_stacks_cards_at_phone_width_and_docks_the_stepper_when_wide(
    browser, tmp_path, agent
):
    """#53 (3): the phone-sized web app opened the docked stepper; by default a phone-sized
    window now stacks the cards, as the phone app does, and a wide one docks the stepper."""
    gateway = start_gateway(tmp_path / "gateway")
    app = AppProcess(tmp_path / "app", gateway.url, layout=AUTO).start()
    try:
        asked = ask(agent, gateway, THREE)
        phone = open_app(browser, app.url, "iphone-se")
        expect(option(phone, "Google", "checkbox")).to_be_visible(timeout=TIMEOUT)
        expect(option(phone, "AWS")).to_be_attached()  # every question at once
        expect(step_of(phone, 1, 3)).to_have_count(0)
        shot(phone, "35-phone-width-opens-cards")
        wide = open_app(browser, app.url, "wide")
        expect(step_of(wide, 1, 3)).to_be_visible(timeout=TIMEOUT)
        expect(option(wide, "AWS")).to_have_count(0)  # one question at a time
        shot(wide, "36-wide-window-docks-the-stepper")
        wide.set_viewport_size({"width": 375, "height": 667})  # the window made narrow
        expect(option(wide, "AWS")).to_be_visible(timeout=TIMEOUT)
        expect(step_of(wide, 1, 3)).to_have_count(0)
        assert not asked.done()
    finally:
        app.stop()
        gateway.stop()


def test_the_stepper_names_who_asks_and_the_person_picks_among_those_waiting(
    browser, web_stack, agent
):
    """#53 (4): with two agents waiting the panel named neither the asker nor the other, and
    only the oldest could be reached."""
    gateway, app = web_stack
    billing = ask(agent, gateway, SINGLE, session="codex:~/work/billing", agent_id="codex/0a1b")
    page = open_app(browser, app.url, "wide")
    expect(page.get_by_text("Codex · billing")).to_be_attached(timeout=TIMEOUT)
    shop = ask(agent, gateway, THREE, session="claude-code:~/code/shop", agent_id="claude/9f8e")
    more = page.get_by_role(
        "button", name=re.compile(r"^Choose which question to answer 1 more waiting$")
    )
    expect(more).to_be_visible(timeout=TIMEOUT)
    expect(step_of(page, 1, 1)).to_be_visible()  # still the oldest: billing's
    more.click()
    pick = page.get_by_role("menuitem", name=re.compile(r"^Claude Code · shop · Database: Which"))
    expect(pick).to_be_visible(timeout=TIMEOUT)
    shot(page, "37-stepper-others-waiting-menu")
    pick.click()
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Claude Code · shop")).to_be_attached()
    # Folded: the bar still says who asks and that another waits.
    page.get_by_role("button", name="Hide the question").click()
    expect(
        page.get_by_role(
            "group", name=re.compile(r"Claude Code · shop · Database · Question 1 of 3")
        )
    ).to_be_visible(timeout=TIMEOUT)
    expect(
        page.get_by_role(
            "button", name=re.compile(r"^Choose which question to answer 1 more waiting$")
        )
    ).to_be_visible()
    shot(page, "38-stepper-folded-names-the-asker")
    page.get_by_role(
        "button", name=re.compile(r"^Choose which question to answer 1 more waiting$")
    ).click()
    page.get_by_role("menuitem", name=re.compile(r"^Codex · billing · Target: Where")).click()
    expect(step_of(page, 1, 1)).to_be_visible(timeout=TIMEOUT)
    option(page, "Production").click()
    assert billing.result(timeout=30)["answers"]["answers"] == {"deploy_target": ["Production"]}
    expect(step_of(page, 1, 3)).to_be_visible(timeout=TIMEOUT)  # then the one left
    assert not shop.done()
